//! The one generator of what `#[vectorize]` and `#[guvectorize]` share: the array function
//! `foo`, and `struct foo` with `TARGETS`, `DEFAULT_TARGET` and the call forms `on`, `out`,
//! `out_on` and, with the `cuda` target, `on_device`, `on_stream`, `out_device`,
//! `out_stream`. The two differ only in the runtime functions they call and the arrays they
//! return ([`Form`]); a new call form (`reduce`, `accumulate`) is added here, once.

use super::target_tokens;
use crate::model::Ufunc;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

/// Which runtime entry points a call goes through.
pub(super) enum Form {
    /// `#[vectorize]`: `call`, `call_out`, ...; outputs of the broadcast dimension type.
    Elementwise,
    /// `#[guvectorize]`: `gu_call`, `gu_call_out`, ...; outputs of dynamic dimension.
    Generalized,
    /// `#[guvectorize]` with an in-place layout: the function and `on` take every operand in
    /// the parameters' order, the written ones as mutable arrays or views, and return `()`.
    InPlace,
}

/// What a ufunc's companions are made of, beyond the model.
pub(super) struct Companions<'a> {
    pub f: &'a Ufunc<'a>,
    pub form: Form,
    /// Generic parameters put first on every function (`T: __ufunc_types_foo,`), and the
    /// turbofish that forwards them (`T,`); empty unless `types = [...]` is given.
    pub lead: TokenStream,
    pub lead_args: TokenStream,
    /// The type that implements `Body` or `GuBody` for a call.
    pub body: TokenStream,
    /// The array function's doc attributes.
    pub fn_docs: TokenStream,
    /// The doc of `struct foo`.
    pub struct_doc: String,
    /// Associated constants only one kind has (`KERNEL_PATH`; `LAYOUT`), after the targets.
    pub consts: TokenStream,
    /// Associated functions only one kind has (`scalar` of a generic ufunc; `core`), after
    /// the call forms.
    pub fns: TokenStream,
}

/// Docs of the call forms, in the words of each kind.
struct Docs {
    on: String,
    out: String,
    on_device: &'static str,
    on_stream: &'static str,
    out_device: &'static str,
}

impl Form {
    fn docs(&self, name: &Ident) -> Docs {
        match self {
            Form::Elementwise => Docs {
                on: format!(
                    "Applies `{name}` element-wise on the chosen target, one of \
                     [`Self::TARGETS`] (`Error::TargetNotCompiled` for any other)."
                ),
                out: format!(
                    "Writes `{name}` of the inputs into existing arrays or mutable views (any \
                     strides), which must have exactly the broadcast shape of the inputs."
                ),
                on_device: "Applies the function on the GPU and leaves the results there: device \
                    arrays and views are used in place, host arrays and scalars are copied in. \
                    Waits for the kernel, so that a panic in the body is this call's `Err`.",
                on_stream: "As `on_device`, queued on `stream` without waiting: read the results \
                    after `stream.synchronize()`, which reports a panic in the body.",
                out_device: "Writes into existing device arrays of exactly the broadcast shape.",
            },
            Form::Generalized | Form::InPlace => Docs {
                on: "Calls the gufunc on the chosen target.".into(),
                out: "Writes into existing arrays or views of the loop shape plus the core shape; \
                      output dimensions that only outputs name take their size from these arrays."
                    .into(),
                on_device: "Calls the gufunc on the GPU and leaves the outputs there \
                    (zero-initialised before the core runs): device arrays and views are used in \
                    place, host arrays and scalars are copied in. Waits for the kernel, so that a \
                    panic is this call's `Err`.",
                on_stream: "As `on_device`, queued on `stream` without waiting.",
                out_device: "Writes into existing device arrays of the loop shape plus the core \
                    shape.",
            },
        }
    }
}

/// The array function and `struct foo` with its companions.
pub(super) fn expand(c: &Companions<'_>) -> TokenStream {
    if let Form::InPlace = c.form {
        return in_place(c);
    }
    let f = c.f;
    let name = f.name();
    let vis = &f.item.vis;
    let p = quote!(::ufunc::__private);
    let (lead, lead_args, body) = (&c.lead, &c.lead_args, &c.body);
    let inputs: Vec<&Ident> = f.inputs().map(|p| p.ident).collect();
    let in_tuple = f.input_tuple();
    let arg_tys: Vec<Ident> = (0..inputs.len())
        .map(|i| format_ident!("__UfuncA{}", i))
        .collect();
    let out_ty = f.output_type();
    let out_params: Vec<Ident> = match f.output_elems().len() {
        1 => vec![fresh("out", &inputs)],
        n => (0..n).map(|i| fresh(&format!("out{i}"), &inputs)).collect(),
    };
    let target = fresh("target", &inputs);
    let stream = fresh("stream", &inputs);
    let out_tys: Vec<Ident> = (0..out_params.len())
        .map(|i| format_ident!("__UfuncO{}", i))
        .collect();
    let (arrays, device_arrays, call, call_out, call_device, call_out_device) = match c.form {
        Form::Elementwise => (
            quote!(#p::ArraysOf<#body, (#(#arg_tys,)*)>),
            quote!(#p::DeviceArraysOf<#body, (#(#arg_tys,)*)>),
            quote!(#p::call),
            quote!(#p::call_out),
            quote!(#p::call_device),
            quote!(#p::call_out_device),
        ),
        Form::Generalized | Form::InPlace => (
            quote!(<#out_ty as #p::Outputs>::Arrays<::ufunc::ndarray::IxDyn>),
            quote!(<#out_ty as #p::DeviceOutputs>::DeviceArrays<::ufunc::ndarray::IxDyn>),
            quote!(#p::gu_call),
            quote!(#p::gu_call_out),
            quote!(#p::gu_call_device),
            quote!(#p::gu_call_out_device),
        ),
    };
    let docs = c.form.docs(name);
    let (doc_on, doc_out) = (&docs.on, &docs.out);
    let (doc_on_device, doc_on_stream, doc_out_device) =
        (docs.on_device, docs.on_stream, docs.out_device);
    let (companion_struct, target_consts) = (companion_struct(c), target_consts(f));
    let ins = quote!((#(#arg_tys,)*): #p::Operands<#in_tuple>);
    let outs = quote!((#(#out_tys,)*): #p::OutOperands<#out_ty>);
    let device_fns = if f.attr.wants_cuda() {
        let ins = quote!((#(#arg_tys,)*): #p::DeviceOperands<#in_tuple>);
        let outs = quote!((#(#out_tys,)*): #p::DeviceOutOperands<#out_ty>);
        quote! {
            #[doc = #doc_on_device]
            pub fn on_device<#lead #(#arg_tys),*>(#(#inputs: #arg_tys),*)
                -> ::ufunc::Result<#device_arrays>
            where
                #ins,
            {
                #call_device::<#body, _>(Self::TARGETS, None, (#(#inputs,)*))
            }

            #[doc = #doc_on_stream]
            pub fn on_stream<#lead #(#arg_tys),*>(
                #stream: &::ufunc::cuda::Stream, #(#inputs: #arg_tys),*
            ) -> ::ufunc::Result<#device_arrays>
            where
                #ins,
            {
                #call_device::<#body, _>(Self::TARGETS, Some(#stream), (#(#inputs,)*))
            }

            #[doc = #doc_out_device]
            pub fn out_device<#lead #(#arg_tys,)* #(#out_tys),*>(
                #(#inputs: #arg_tys,)* #(#out_params: #out_tys),*
            ) -> ::ufunc::Result<()>
            where
                #ins,
                #outs,
            {
                #call_out_device::<#body, _, _>(
                    Self::TARGETS, None, (#(#inputs,)*), (#(#out_params,)*)
                )
            }

            /// As `out_device`, queued on `stream` without waiting.
            pub fn out_stream<#lead #(#arg_tys,)* #(#out_tys),*>(
                #stream: &::ufunc::cuda::Stream, #(#inputs: #arg_tys,)* #(#out_params: #out_tys),*
            ) -> ::ufunc::Result<()>
            where
                #ins,
                #outs,
            {
                #call_out_device::<#body, _, _>(
                    Self::TARGETS, Some(#stream), (#(#inputs,)*), (#(#out_params,)*)
                )
            }
        }
    } else {
        quote!()
    };
    let fn_docs = &c.fn_docs;
    let (consts, fns) = (&c.consts, &c.fns);
    let methods = methods(c);
    quote! {
        #fn_docs
        #vis fn #name<#lead #(#arg_tys),*>(#(#inputs: #arg_tys),*) -> ::ufunc::Result<#arrays>
        where
            #ins,
        {
            #name::on::<#lead_args #(#arg_tys),*>(#name::DEFAULT_TARGET, #(#inputs),*)
        }

        #companion_struct

        #[allow(clippy::all)]
        impl #name {
            #target_consts
            #consts

            #[doc = #doc_on]
            pub fn on<#lead #(#arg_tys),*>(#target: ::ufunc::Target, #(#inputs: #arg_tys),*)
                -> ::ufunc::Result<#arrays>
            where
                #ins,
            {
                #call::<#body, _>(#target, Self::TARGETS, (#(#inputs,)*))
            }

            #[doc = #doc_out]
            pub fn out<#lead #(#arg_tys,)* #(#out_tys),*>(
                #(#inputs: #arg_tys,)* #(#out_params: #out_tys),*
            ) -> ::ufunc::Result<()>
            where
                #ins,
                #outs,
            {
                Self::out_on::<#lead_args #(#arg_tys,)* #(#out_tys),*>(
                    Self::DEFAULT_TARGET, #(#inputs,)* #(#out_params),*
                )
            }

            /// `out` on the chosen target.
            pub fn out_on<#lead #(#arg_tys,)* #(#out_tys),*>(
                #target: ::ufunc::Target, #(#inputs: #arg_tys,)* #(#out_params: #out_tys),*
            ) -> ::ufunc::Result<()>
            where
                #ins,
                #outs,
            {
                #call_out::<#body, _, _>(
                    #target, Self::TARGETS, (#(#inputs,)*), (#(#out_params,)*)
                )
            }

            #device_fns

            #methods

            #fns
        }
    }
}

/// `struct foo`, which holds the companions.
fn companion_struct(c: &Companions<'_>) -> TokenStream {
    let (name, vis, doc) = (c.f.name(), &c.f.item.vis, &c.struct_doc);
    quote! {
        #[doc = #doc]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name {
            _private: (),
        }
    }
}

/// `TARGETS` and `DEFAULT_TARGET`.
fn target_consts(f: &Ufunc<'_>) -> TokenStream {
    let name = f.name();
    let targets = f.attr.target_names();
    let target_list = targets.iter().map(|t| target_tokens(t));
    let default_target = target_tokens(&targets[0]);
    let targets_doc = format!(
        "The targets `{name}` was compiled for: `{}`. The first is the default.",
        targets.join("`, `")
    );
    quote! {
        #[doc = #targets_doc]
        pub const TARGETS: &'static [::ufunc::Target] = &[#(#target_list),*];
        /// The target the plain call uses.
        pub const DEFAULT_TARGET: ::ufunc::Target = #default_target;
    }
}

/// `base`, or `base` with `_`s added until no parameter of the user's function has that name
/// (Numba users name outputs `out`): the companions' own parameters, whatever the user picks.
fn fresh(base: &str, taken: &[&Ident]) -> Ident {
    let mut name = base.to_string();
    while taken.iter().any(|p| *p == name.as_str()) {
        name.push('_');
    }
    format_ident!("{}", name)
}

/// The companions of an in-place gufunc: `foo(&mut a, &b)` and `foo::on(target, &mut a, &b)`,
/// which write into the operands the core writes (through `gu_call_out`: the runtime's
/// signature lists them as outputs), and with `cuda` `foo::on_device(&mut da, &db)` and
/// `foo::on_stream(&stream, &mut da, &db)` on device arrays (through `gu_call_out_device`).
fn in_place(c: &Companions<'_>) -> TokenStream {
    let f = c.f;
    let name = f.name();
    let vis = &f.item.vis;
    let p = quote!(::ufunc::__private);
    let (lead, lead_args, body) = (&c.lead, &c.lead_args, &c.body);
    let params: Vec<&Ident> = f.params.iter().map(|p| p.ident).collect();
    let tys: Vec<Ident> = (0..params.len())
        .map(|i| format_ident!("__UfuncA{}", i))
        .collect();
    let (read, written): (Vec<_>, Vec<_>) = f
        .params
        .iter()
        .zip(&tys)
        .partition(|(p, _)| p.role.is_input());
    let (read_params, read_tys): (Vec<_>, Vec<_>) =
        read.into_iter().map(|(p, t)| (p.ident, t)).unzip();
    let (written_params, written_tys): (Vec<_>, Vec<_>) =
        written.into_iter().map(|(p, t)| (p.ident, t)).unzip();
    let in_tuple = f.input_tuple();
    let out_ty = f.output_type();
    let (target, stream) = (fresh("target", &params), fresh("stream", &params));
    let (companion_struct, target_consts) = (companion_struct(c), target_consts(f));
    let bounds = quote! {
        (#(#read_tys,)*): #p::Operands<#in_tuple>,
        (#(#written_tys,)*): #p::OutOperands<#out_ty>,
    };
    let device_fns = if f.attr.wants_cuda() {
        let bounds = quote! {
            (#(#read_tys,)*): #p::DeviceOperands<#in_tuple>,
            (#(#written_tys,)*): #p::DeviceOutOperands<#out_ty>,
        };
        quote! {
            /// Calls the gufunc on device arrays and views (`cuda`), writing into the
            /// `&mut DeviceArray`s the core writes; waits, and a panic is this call's `Err`.
            pub fn on_device<#lead #(#tys),*>(#(#params: #tys),*) -> ::ufunc::Result<()>
            where
                #bounds
            {
                #p::gu_call_out_device::<#body, _, _>(
                    Self::TARGETS, None, (#(#read_params,)*), (#(#written_params,)*)
                )
            }

            /// As `on_device`, queued on `stream` without waiting.
            pub fn on_stream<#lead #(#tys),*>(
                #stream: &::ufunc::cuda::Stream, #(#params: #tys),*
            ) -> ::ufunc::Result<()>
            where
                #bounds
            {
                #p::gu_call_out_device::<#body, _, _>(
                    Self::TARGETS, Some(#stream), (#(#read_params,)*), (#(#written_params,)*)
                )
            }
        }
    } else {
        quote!()
    };
    let (fn_docs, consts, fns) = (&c.fn_docs, &c.consts, &c.fns);
    quote! {
        #fn_docs
        #vis fn #name<#lead #(#tys),*>(#(#params: #tys),*) -> ::ufunc::Result<()>
        where
            #bounds
        {
            #name::on::<#lead_args #(#tys),*>(#name::DEFAULT_TARGET, #(#params),*)
        }

        #companion_struct

        #[allow(clippy::all)]
        impl #name {
            #target_consts
            #consts

            /// Calls the gufunc on the chosen target, writing into the operands the core writes.
            pub fn on<#lead #(#tys),*>(#target: ::ufunc::Target, #(#params: #tys),*)
                -> ::ufunc::Result<()>
            where
                #bounds
            {
                #p::gu_call_out::<#body, _, _>(
                    #target, Self::TARGETS, (#(#read_params,)*), (#(#written_params,)*)
                )
            }

            #device_fns

            #fns
        }
    }
}

/// `reduce`, `accumulate`, `outer` and `at` of a `#[vectorize]` function `f(T, T) -> T`.
/// Another `#[vectorize]` function gets hidden ones bound by `MethodsNeedBinaryOp`, which
/// nothing implements, so that calling one is a compile error that says why (and
/// `identity = ...` on it is an error too); a `#[guvectorize]` function gets none.
fn methods(c: &Companions<'_>) -> TokenStream {
    let name = c.f.name();
    let p = quote!(::ufunc::__private);
    let elem = match (&c.form, c.f.method_elem()) {
        (Form::Generalized | Form::InPlace, _) => return quote!(),
        (Form::Elementwise, Ok(elem)) => elem,
        (Form::Elementwise, Err(_)) => {
            let bound = quote!(#p::MethodsNeedBinaryOp<#name>);
            let never = quote!(<__UfuncA as #p::MethodsNeedBinaryOp<#name>>::unreachable());
            // Every method form with the arguments of the real one; the array bears the bound.
            let forms: &[(&str, &[&str])] = &[
                ("reduce", &["a", "axes"]),
                ("reduce_on", &["target", "a", "axes"]),
                ("reduce_keepdims", &["a", "axes"]),
                ("reduce_keepdims_on", &["target", "a", "axes"]),
                ("reduce_out", &["a", "axes", "out"]),
                ("reduce_out_on", &["target", "a", "axes", "out"]),
                ("accumulate", &["a", "axis"]),
                ("accumulate_on", &["target", "a", "axis"]),
                ("accumulate_out", &["a", "axis", "out"]),
                ("accumulate_out_on", &["target", "a", "axis", "out"]),
                ("outer", &["a", "b"]),
                ("outer_on", &["target", "a", "b"]),
                ("at", &["a", "indices", "b"]),
                ("reduce_device", &["a", "axes"]),
                ("reduce_device_keepdims", &["a", "axes"]),
                ("reduce_out_device", &["a", "axes", "out"]),
                ("accumulate_device", &["a", "axis"]),
                ("outer_device", &["a", "b"]),
                ("at_device", &["a", "indices", "b"]),
                ("reduce_stream", &["stream", "a", "axes"]),
                ("reduce_stream_keepdims", &["stream", "a", "axes"]),
                ("reduce_out_stream", &["stream", "a", "axes", "out"]),
                ("accumulate_stream", &["stream", "a", "axis"]),
                ("outer_stream", &["stream", "a", "b"]),
            ];
            let stubs = forms.iter().map(|(form, params)| {
                let form = format_ident!("{form}");
                let types: Vec<_> = params
                    .iter()
                    .map(|&q| match q {
                        "a" => format_ident!("__UfuncA"),
                        q => format_ident!("__Ufunc_{q}"),
                    })
                    .collect();
                let args = params.iter().map(|q| format_ident!("_{q}"));
                let generics = types.iter().map(|t| {
                    if t == "__UfuncA" {
                        quote!(#t: #bound)
                    } else {
                        quote!(#t)
                    }
                });
                quote! {
                    #[doc(hidden)]
                    #[allow(non_camel_case_types)]
                    pub fn #form<#(#generics),*>(#(#args: #types),*) -> ! {
                        #never
                    }
                }
            });
            return quote!(#(#stubs)*);
        }
    };
    let (lead, lead_args, body) = (&c.lead, &c.lead_args, &c.body);
    let t = match c.f.generic {
        Some(g) if c.f.attr.types.is_some() => quote!(#g),
        _ => quote!(#elem),
    };
    let arr = quote!(::ufunc::ndarray::ArrayD<#t>);
    let axes = quote!(impl ::core::convert::Into<::ufunc::Axes>);
    let doc_reduce = format!(
        "`{name}` reduced over `axes` of `a` (`0`, `-1`, `[0, 2]`, `Axes::All`), as NumPy's \
         `{name}.reduce`: a new array without those axes. With an `identity` or `associative = \
         true` on the attribute `{name}` is regrouped (pairwise over runs); otherwise it is \
         folded in order along its one reduced axis, and several axes are \
         `Error::NotReorderable`, as in NumPy. Reducing an empty axis gives the `identity`, or \
         `Error::EmptyReduction` without one."
    );
    let doc_acc = format!(
        "The running `{name}` along `axis` of `a` (negative counts from the end): element `i` \
         along it is `{name}` over elements `0..=i`, as NumPy's `{name}.accumulate`: strictly in \
         order, or regrouped (faster) where the attribute says `associative = true`."
    );
    let doc_outer = format!(
        "`{name}` of every pair, as NumPy's `{name}.outer`: `out[i.., j..] = {name}(a[i..], \
         b[j..])`, of shape `a.shape + b.shape`."
    );
    let doc_at = format!(
        "In place, unbuffered: `a[p, ..] = {name}(a[p, ..], b[k, ..])` for each point `p` of \
         `indices` in order (a repeated point is applied repeatedly), as NumPy's `{name}.at`. \
         `indices` is one index array along the first axis (`&[1, 3, 1]`, a `&Vec`, an \
         `&Array1`, an n-d `&Array`, or `&2`; negative from the end), or, for the first k \
         axes, a tuple of k of them broadcast together (`(&rows, &cols)`), with `..` for \
         NumPy's `slice(None)` (`(.., &cols)`): the points have the index arrays' broadcast \
         shape, in C order, and `b` broadcasts to the shape of `a[indices]` in NumPy. `()` \
         applies `b` (broadcast to `a`'s shape) to the whole array once. Runs on the calling \
         thread."
    );
    let device = if c.f.attr.wants_cuda() {
        let dev = quote!(::ufunc::cuda::DeviceArray);
        quote! {
            /// `reduce` on the GPU, the result left there: device arrays and views are used in
            /// place, host arrays copied in. A reorderable function is grouped otherwise than on
            /// the CPU (a float sum of `n` elements is within `2 n eps sum(|x|)` of `reduce`'s);
            /// any other is folded in order, as there.
            pub fn reduce_device<#lead __UfuncA: #p::DeviceOperand<#t>>(a: __UfuncA, axes: #axes)
                -> ::ufunc::Result<#dev<#t, ::ufunc::ndarray::IxDyn>>
            {
                #p::reduce_device::<#body, #t, __UfuncA>(Self::TARGETS, None, a, axes.into(), false)
            }

            /// `reduce_device`, keeping the reduced axes as length 1.
            pub fn reduce_device_keepdims<#lead __UfuncA: #p::DeviceOperand<#t>>(
                a: __UfuncA, axes: #axes,
            ) -> ::ufunc::Result<#dev<#t, ::ufunc::ndarray::IxDyn>> {
                #p::reduce_device::<#body, #t, __UfuncA>(Self::TARGETS, None, a, axes.into(), true)
            }

            /// `reduce_device` into a device array of the reduced shape, with or without the
            /// reduced axes kept as length 1. Where the function panics, the `Err` comes after
            /// every pass has run: `out` may have been written.
            pub fn reduce_out_device<
                #lead __UfuncA: #p::DeviceOperand<#t>, __UfuncD: ::ufunc::ndarray::Dimension,
            >(a: __UfuncA, axes: #axes, out: &mut #dev<#t, __UfuncD>) -> ::ufunc::Result<()> {
                #p::reduce_out_device::<#body, #t, __UfuncA, __UfuncD>(
                    Self::TARGETS, None, a, axes.into(), out
                )
            }

            /// `outer` on the GPU, the result left there: device arrays and views are used in
            /// place, host arrays copied in.
            pub fn outer_device<
                #lead __UfuncA: #p::DeviceOperand<#t>, __UfuncB: #p::DeviceOperand<#t>,
            >(a: __UfuncA, b: __UfuncB) -> ::ufunc::Result<#dev<#t, ::ufunc::ndarray::IxDyn>> {
                #p::outer_device::<#body, #t, __UfuncA, __UfuncB>(Self::TARGETS, None, a, b)
            }

            /// `at` on a device array (`indices` as `at`'s; `b`: a device array or view, a
            /// host array or a scalar): the points are grouped by place on the host (a stable
            /// sort), then a thread per (place, element of the sub-array) applies its place's
            /// points in order, so distinct places run side by side (a histogram's bins too;
            /// the points of one place stay one thread's work, in order).
            pub fn at_device<
                #lead
                __UfuncD: ::ufunc::ndarray::Dimension,
                __UfuncX: #p::AtIndices,
                __UfuncB: #p::DeviceOperand<#t>,
            >(a: &mut #dev<#t, __UfuncD>, indices: __UfuncX, b: __UfuncB) -> ::ufunc::Result<()> {
                #p::at_device::<#body, #t, __UfuncD, __UfuncX, __UfuncB>(Self::TARGETS, a, indices, b)
            }

            /// `accumulate` on the GPU, the result left there: a thread per row in order, or,
            /// for a function declared `associative = true` with a few long rows, a blocked scan
            /// that still combines every pair in order.
            pub fn accumulate_device<#lead __UfuncA: #p::DeviceOperand<#t>>(a: __UfuncA, axis: isize)
                -> ::ufunc::Result<#dev<#t, __UfuncA::Dim>>
            {
                #p::accumulate_device::<#body, #t, __UfuncA>(Self::TARGETS, None, a, axis)
            }

            /// `reduce_device` queued on `stream` without waiting: the result is ready, and a
            /// panic of the function reported, when the stream is synchronised.
            pub fn reduce_stream<#lead __UfuncA: #p::DeviceOperand<#t>>(
                stream: &::ufunc::cuda::Stream, a: __UfuncA, axes: #axes,
            ) -> ::ufunc::Result<#dev<#t, ::ufunc::ndarray::IxDyn>> {
                #p::reduce_device::<#body, #t, __UfuncA>(
                    Self::TARGETS, Some(stream), a, axes.into(), false
                )
            }

            /// `reduce_stream`, keeping the reduced axes as length 1.
            pub fn reduce_stream_keepdims<#lead __UfuncA: #p::DeviceOperand<#t>>(
                stream: &::ufunc::cuda::Stream, a: __UfuncA, axes: #axes,
            ) -> ::ufunc::Result<#dev<#t, ::ufunc::ndarray::IxDyn>> {
                #p::reduce_device::<#body, #t, __UfuncA>(
                    Self::TARGETS, Some(stream), a, axes.into(), true
                )
            }

            /// `reduce_out_device` queued on `stream` without waiting.
            pub fn reduce_out_stream<
                #lead __UfuncA: #p::DeviceOperand<#t>, __UfuncD: ::ufunc::ndarray::Dimension,
            >(
                stream: &::ufunc::cuda::Stream, a: __UfuncA, axes: #axes,
                out: &mut #dev<#t, __UfuncD>,
            ) -> ::ufunc::Result<()> {
                #p::reduce_out_device::<#body, #t, __UfuncA, __UfuncD>(
                    Self::TARGETS, Some(stream), a, axes.into(), out
                )
            }

            /// `accumulate_device` queued on `stream` without waiting.
            pub fn accumulate_stream<#lead __UfuncA: #p::DeviceOperand<#t>>(
                stream: &::ufunc::cuda::Stream, a: __UfuncA, axis: isize,
            ) -> ::ufunc::Result<#dev<#t, __UfuncA::Dim>> {
                #p::accumulate_device::<#body, #t, __UfuncA>(Self::TARGETS, Some(stream), a, axis)
            }

            /// `outer_device` queued on `stream` without waiting.
            pub fn outer_stream<
                #lead __UfuncA: #p::DeviceOperand<#t>, __UfuncB: #p::DeviceOperand<#t>,
            >(
                stream: &::ufunc::cuda::Stream, a: __UfuncA, b: __UfuncB,
            ) -> ::ufunc::Result<#dev<#t, ::ufunc::ndarray::IxDyn>> {
                #p::outer_device::<#body, #t, __UfuncA, __UfuncB>(Self::TARGETS, Some(stream), a, b)
            }
        }
    } else {
        quote!()
    };
    quote! {
        #device

        #[doc = #doc_reduce]
        pub fn reduce<#lead __UfuncA: #p::Operand<#t>>(a: __UfuncA, axes: #axes)
            -> ::ufunc::Result<#arr>
        {
            Self::reduce_on::<#lead_args __UfuncA>(Self::DEFAULT_TARGET, a, axes)
        }

        /// `reduce` on the chosen target (`cuda`: host arrays copied in and back).
        pub fn reduce_on<#lead __UfuncA: #p::Operand<#t>>(
            target: ::ufunc::Target, a: __UfuncA, axes: #axes,
        ) -> ::ufunc::Result<#arr> {
            #p::reduce::<#body, #t, __UfuncA>(target, Self::TARGETS, a, axes.into(), false)
        }

        /// `reduce`, keeping the reduced axes as length 1 (NumPy's `keepdims=True`).
        pub fn reduce_keepdims<#lead __UfuncA: #p::Operand<#t>>(a: __UfuncA, axes: #axes)
            -> ::ufunc::Result<#arr>
        {
            Self::reduce_keepdims_on::<#lead_args __UfuncA>(Self::DEFAULT_TARGET, a, axes)
        }

        /// `reduce_keepdims` on the chosen target (`cuda`: host arrays copied in and back).
        pub fn reduce_keepdims_on<#lead __UfuncA: #p::Operand<#t>>(
            target: ::ufunc::Target, a: __UfuncA, axes: #axes,
        ) -> ::ufunc::Result<#arr> {
            #p::reduce::<#body, #t, __UfuncA>(target, Self::TARGETS, a, axes.into(), true)
        }

        /// `reduce` into `out` (any strides), of the reduced shape with or without the reduced
        /// axes kept as length 1.
        pub fn reduce_out<#lead __UfuncA: #p::Operand<#t>, __UfuncO: #p::OutOperand<#t>>(
            a: __UfuncA, axes: #axes, out: __UfuncO,
        ) -> ::ufunc::Result<()> {
            #p::reduce_out::<#body, #t, __UfuncA, __UfuncO>(
                Self::DEFAULT_TARGET, Self::TARGETS, a, axes.into(), out
            )
        }

        /// `reduce_out` on the chosen target (`cuda`: host arrays copied in and back).
        pub fn reduce_out_on<#lead __UfuncA: #p::Operand<#t>, __UfuncO: #p::OutOperand<#t>>(
            target: ::ufunc::Target, a: __UfuncA, axes: #axes, out: __UfuncO,
        ) -> ::ufunc::Result<()> {
            #p::reduce_out::<#body, #t, __UfuncA, __UfuncO>(target, Self::TARGETS, a, axes.into(), out)
        }

        #[doc = #doc_acc]
        pub fn accumulate<#lead __UfuncA: #p::Operand<#t>>(a: __UfuncA, axis: isize)
            -> ::ufunc::Result<::ufunc::ndarray::Array<#t, __UfuncA::Dim>>
        {
            #p::accumulate::<#body, #t, __UfuncA>(Self::DEFAULT_TARGET, Self::TARGETS, a, axis)
        }

        /// `accumulate` on the chosen target (`cuda`: host arrays copied in and back).
        pub fn accumulate_on<#lead __UfuncA: #p::Operand<#t>>(
            target: ::ufunc::Target, a: __UfuncA, axis: isize,
        ) -> ::ufunc::Result<::ufunc::ndarray::Array<#t, __UfuncA::Dim>> {
            #p::accumulate::<#body, #t, __UfuncA>(target, Self::TARGETS, a, axis)
        }

        /// `accumulate` into `out` (of `a`'s shape, any strides), as NumPy's `out=`: no
        /// allocation.
        pub fn accumulate_out<#lead __UfuncA: #p::Operand<#t>, __UfuncO: #p::OutOperand<#t>>(
            a: __UfuncA, axis: isize, out: __UfuncO,
        ) -> ::ufunc::Result<()> {
            #p::accumulate_out::<#body, #t, __UfuncA, __UfuncO>(
                Self::DEFAULT_TARGET, Self::TARGETS, a, axis, out
            )
        }

        /// `accumulate_out` on the chosen target (`cuda`: host arrays copied in and back).
        pub fn accumulate_out_on<
            #lead __UfuncA: #p::Operand<#t>, __UfuncO: #p::OutOperand<#t>,
        >(
            target: ::ufunc::Target, a: __UfuncA, axis: isize, out: __UfuncO,
        ) -> ::ufunc::Result<()> {
            #p::accumulate_out::<#body, #t, __UfuncA, __UfuncO>(
                target, Self::TARGETS, a, axis, out
            )
        }

        #[doc = #doc_outer]
        pub fn outer<#lead __UfuncA: #p::Operand<#t>, __UfuncB: #p::Operand<#t>>(
            a: __UfuncA, b: __UfuncB,
        ) -> ::ufunc::Result<#arr> {
            Self::outer_on::<#lead_args __UfuncA, __UfuncB>(Self::DEFAULT_TARGET, a, b)
        }

        /// `outer` on the chosen target (`cuda`: the element-wise kernel over broadcast views
        /// of host arrays copied in and back).
        pub fn outer_on<#lead __UfuncA: #p::Operand<#t>, __UfuncB: #p::Operand<#t>>(
            target: ::ufunc::Target, a: __UfuncA, b: __UfuncB,
        ) -> ::ufunc::Result<#arr> {
            #p::outer::<#body, #t, __UfuncA, __UfuncB>(target, Self::TARGETS, a, b)
        }

        #[doc = #doc_at]
        pub fn at<
            #lead
            __UfuncO: #p::OutOperand<#t>,
            __UfuncX: #p::AtIndices,
            __UfuncB: #p::Operand<#t>,
        >(a: __UfuncO, indices: __UfuncX, b: __UfuncB) -> ::ufunc::Result<()> {
            #p::at::<#body, #t, __UfuncO, __UfuncX, __UfuncB>(a, indices, b)
        }
    }
}
