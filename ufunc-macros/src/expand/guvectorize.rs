//! `#[guvectorize]`: the array function `foo`, `struct foo` with `out`, `on`, `out_on`, `core`
//! (the function as written), and the `GuBody` impl that builds views for each loop item.

use super::{fallback, parse_fn, target_tokens};
use crate::check::check_guvectorize;
use crate::cuda::{ty_of, Ty};
use crate::errors::Errors;
use crate::gufunc::{from_syn, parse_gu_attr, GuFunction, Role};
use crate::layout::Dim;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use syn::visit_mut::VisitMut;
use syn::Type;

pub(crate) fn guvectorize(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item_fn = match parse_fn(&item, "#[guvectorize]") {
        Ok(f) => f,
        Err(e) => return fallback(e, item),
    };
    let attr = match parse_gu_attr(attr) {
        Ok(a) => a,
        Err(e) => return fallback(e, item),
    };
    let mut errors = Errors::default();
    let f = from_syn(&item_fn, attr, &mut errors);
    check_guvectorize(&f, &mut errors);
    match errors.finish() {
        Ok(()) => match cuda_parts(&f) {
            Ok(cuda) => expand(&f, cuda),
            Err(e) => fallback(e, item),
        },
        Err(e) => fallback(e, item),
    }
}

/// `ty` with every lifetime replaced by `'_`, for `let` annotations in generated code.
fn elide_lifetimes(ty: &Type) -> Type {
    struct Elide;
    impl VisitMut for Elide {
        fn visit_lifetime_mut(&mut self, l: &mut syn::Lifetime) {
            *l = syn::Lifetime::new("'_", l.apostrophe);
        }
    }
    let mut ty = ty.clone();
    Elide.visit_type_mut(&mut ty);
    ty
}

fn dims_tokens(dims: &[Dim]) -> TokenStream {
    let items = dims.iter().map(|d| match d {
        Dim::Named { name, optional } => {
            quote!(::ufunc::__private::CoreDim::Named { name: #name, optional: #optional })
        }
        Dim::Fixed(n) => quote!(::ufunc::__private::CoreDim::Fixed(#n)),
    });
    quote!(&[#(#items),*])
}

/// With the `cuda` target: `impl foo { fn cuda_source }` and the `CudaKernel` naming it.
fn cuda_parts(f: &GuFunction<'_>) -> syn::Result<(TokenStream, TokenStream)> {
    let none = quote!(::core::option::Option::None);
    if !f.attr.rest.wants_cuda() {
        return Ok((quote!(), none));
    }
    let name = f.name();
    let elem = |t: &Type| {
        ty_of(t).ok_or_else(|| syn::Error::new_spanned(t, "an element type is needed on cuda"))
    };
    let view = |p: &crate::gufunc::GuParam<'_>, rank: Option<usize>, mutable: bool| {
        let rank = rank.ok_or_else(|| {
            syn::Error::new_spanned(
                p.ty,
                "a dynamic-rank view is not supported on cuda; give the rank, as in `ArrayView2<f32>`",
            )
        })?;
        Ok::<_, syn::Error>(Ty::View {
            elem: Box::new(elem(p.elem)?),
            rank,
            mutable,
        })
    };
    let mut typed = Vec::new();
    for p in &f.params {
        let ty = match p.role {
            Role::InView { rank } => view(p, rank, false)?,
            Role::OutView { rank } => view(p, rank, true)?,
            Role::InScalar => elem(p.elem)?,
            Role::OutScalar => Ty::Ptr(Box::new(elem(p.elem)?)),
        };
        typed.push((p.ident, ty));
    }
    let ret = match f.returns.as_slice() {
        [] => Ty::Unit,
        [t] => elem(t)?,
        ts => Ty::Tuple(ts.iter().map(|t| elem(t)).collect::<syn::Result<_>>()?),
    };
    let core_fn = format!("__ufunc_core_{name}");
    // One output view and no returned values: its leading loops may run a thread per element.
    let outs: Vec<&crate::gufunc::GuParam<'_>> =
        f.params.iter().filter(|p| !p.role.is_input()).collect();
    let mapped = match (outs.as_slice(), f.returns.is_empty()) {
        (
            [out @ crate::gufunc::GuParam {
                role: Role::OutView { rank: Some(rank) },
                ..
            }],
            true,
        ) => crate::cuda::mapped_loops(&f.item.block, out.ident, *rank),
        _ => Vec::new(),
    };
    let device = crate::cuda::emit_function(&core_fn, &typed, ret, &f.item.block, &mapped)?;
    // Operands in order (inputs, output parameters, returns), and where each parameter is.
    let inputs: Vec<usize> = (0..f.params.len())
        .filter(|&i| f.params[i].role.is_input())
        .collect();
    let outputs: Vec<usize> = (0..f.params.len())
        .filter(|&i| !f.params[i].role.is_input())
        .collect();
    let mut operands = Vec::new();
    let mut position = vec![0usize; f.params.len()];
    let p = quote!(::ufunc::__private::GuOperand);
    for &i in inputs.iter().chain(&outputs) {
        position[i] = operands.len();
        operands.push(match &typed[i].1 {
            Ty::View {
                elem,
                rank,
                mutable,
            } => {
                let elem = elem.cpp();
                quote!(#p::View { elem: #elem, rank: #rank, mutable: #mutable })
            }
            Ty::Ptr(elem) => {
                let elem = elem.cpp();
                quote!(#p::ScalarOut(#elem))
            }
            t => {
                let elem = t.cpp();
                quote!(#p::ScalarIn(#elem))
            }
        });
    }
    for r in &f.returns {
        let elem = elem(r)?.cpp();
        operands.push(quote!(#p::Return(#elem)));
    }
    let mapped_axes = mapped.len();
    let kind = quote!(::ufunc::__private::KernelKind::Gufunc {
        device_fn: #core_fn,
        operands: &[#(#operands),*],
        call_order: &[#(#position),*],
        mapped_axes: #mapped_axes,
    });
    let kernel_name = name.to_string();
    let items = super::cuda_source_fn(
        name,
        "The CUDA C++ source of this gufunc: the prelude, the helpers and constants it uses, the \
         core function, and the kernel (one thread per loop item, or per loop item and output \
         element where the core's loops are independent).",
        &device.captures,
        &device.code,
        (&kernel_name, kind),
    );
    let kernel_const = super::kernel_const(&kernel_name, name, false, mapped_axes);
    Ok((items, kernel_const))
}

fn expand(
    f: &GuFunction<'_>,
    (cuda_items, cuda_kernel): (TokenStream, TokenStream),
) -> TokenStream {
    let item = f.item;
    let name = f.name();
    let name_str = name.to_string();
    let vis = &item.vis;
    let layout = f.layout.as_ref().expect("checked");
    let p = quote!(::ufunc::__private);

    let targets = f.attr.rest.target_names();
    let target_list = targets.iter().map(|t| target_tokens(t));
    let default_target = target_tokens(&targets[0]);

    let inputs: Vec<_> = f.inputs().collect();
    let in_idents: Vec<&Ident> = inputs.iter().map(|p| p.ident).collect();
    let in_elems = inputs.iter().map(|p| p.elem);
    let in_tuple = quote!((#(#in_elems,)*));
    let arg_tys: Vec<Ident> = (0..inputs.len())
        .map(|i| format_ident!("__UfuncA{}", i))
        .collect();
    let out_elems = f.output_elems();
    let out_ty = if out_elems.len() == 1 {
        let t = out_elems[0];
        quote!(#t)
    } else {
        quote!((#(#out_elems,)*))
    };
    let out_params: Vec<Ident> = match out_elems.len() {
        1 => vec![format_ident!("out")],
        n => (0..n).map(|i| format_ident!("out{}", i)).collect(),
    };
    let out_tys: Vec<Ident> = (0..out_elems.len())
        .map(|i| format_ident!("__UfuncO{}", i))
        .collect();
    let arrays = quote!(<#out_ty as #p::Outputs>::Arrays<::ufunc::ndarray::IxDyn>);

    // Each parameter's index among the operands (inputs, then output parameters, then returns):
    // its layout is prepared once per run of items, then each item makes the parameter from a
    // pointer.
    let n_in = inputs.len();
    let mut next_out = n_in;
    let mut next_in = 0;
    let mut layouts = Vec::new();
    let mut bindings = Vec::new();
    let mut call_args = Vec::new();
    for param in &f.params {
        let ident = param.ident;
        let ty = elide_lifetimes(param.ty);
        let k = if param.role.is_input() {
            next_in += 1;
            next_in - 1
        } else {
            next_out += 1;
            next_out - 1
        };
        let layout_var = format_ident!("__ufunc_layout{}", k);
        layouts.push(quote!(let #layout_var = <#ty as #p::CoreParam>::layout(&args[#k]);));
        let mutability = if param.mutable { quote!(mut) } else { quote!() };
        bindings.push(quote!(
            let #mutability #ident: #ty = #p::CoreParam::make(
                &#layout_var,
                args[#k].ptr.wrapping_offset(__ufunc_item * steps[#k]),
            );
        ));
        call_args.push(ident);
    }
    let store_one = |i: usize, value: TokenStream| {
        let k = next_out + i;
        quote!(#p::store_scalar(args[#k].ptr.wrapping_offset(__ufunc_item * steps[#k]), #value);)
    };
    let store = match f.returns.len() {
        0 => quote!(),
        1 => store_one(0, quote!(__ufunc_ret)),
        n => {
            let stores = (0..n).map(|i| {
                let field = syn::Index::from(i);
                store_one(i, quote!(__ufunc_ret.#field))
            });
            quote!(#(#stores)*)
        }
    };

    let in_dims = layout.inputs.iter().map(|d| dims_tokens(d));
    let out_dims = layout.outputs.iter().map(|d| dims_tokens(d));
    let names = f.operand_names();
    let layout_text = f.attr.layout_lit.value();

    let core_params = &item.sig.inputs;
    let core_generics = &item.sig.generics;
    let core_output = &item.sig.output;
    let core_block = &item.block;
    let core_attrs = item.attrs.iter().filter(|a| !a.path().is_ident("doc"));
    let doc_attrs = item.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let companions_doc = format!(
        "Companions of the gufunc [`{name}()`] with layout `{layout_text}`: `{name}::out`, \
         `{name}::on`, `{name}::out_on`, `{name}::core`."
    );
    let targets_doc = format!(
        "The targets `{name}` was compiled for: `{}`. The first is the default.",
        targets.join("`, `")
    );
    let device_arrays =
        quote!(<#out_ty as #p::DeviceOutputs>::DeviceArrays<::ufunc::ndarray::IxDyn>);
    let device_fns = if f.attr.rest.wants_cuda() {
        quote! {
            /// Calls the gufunc on the GPU and leaves the outputs there (zero-initialised before
            /// the core runs): device arrays and views are used in place, host arrays and
            /// scalars are copied in. Waits for the kernel, so that a panic is this call's `Err`.
            pub fn on_device<#(#arg_tys),*>(#(#in_idents: #arg_tys),*)
                -> ::ufunc::Result<#device_arrays>
            where
                (#(#arg_tys,)*): #p::DeviceOperands<#in_tuple>,
            {
                #p::gu_call_device::<Self, _>(Self::TARGETS, None, (#(#in_idents,)*))
            }

            /// As `on_device`, queued on `stream` without waiting.
            pub fn on_stream<#(#arg_tys),*>(
                stream: &::ufunc::cuda::Stream, #(#in_idents: #arg_tys),*
            ) -> ::ufunc::Result<#device_arrays>
            where
                (#(#arg_tys,)*): #p::DeviceOperands<#in_tuple>,
            {
                #p::gu_call_device::<Self, _>(Self::TARGETS, Some(stream), (#(#in_idents,)*))
            }

            /// Writes into existing device arrays of the loop shape plus the core shape.
            pub fn out_device<#(#arg_tys,)* #(#out_tys),*>(
                #(#in_idents: #arg_tys,)* #(#out_params: #out_tys),*
            ) -> ::ufunc::Result<()>
            where
                (#(#arg_tys,)*): #p::DeviceOperands<#in_tuple>,
                (#(#out_tys,)*): #p::DeviceOutOperands<#out_ty>,
            {
                #p::gu_call_out_device::<Self, _, _>(
                    Self::TARGETS, None, (#(#in_idents,)*), (#(#out_params,)*)
                )
            }

            /// As `out_device`, queued on `stream` without waiting.
            pub fn out_stream<#(#arg_tys,)* #(#out_tys),*>(
                stream: &::ufunc::cuda::Stream,
                #(#in_idents: #arg_tys,)* #(#out_params: #out_tys),*
            ) -> ::ufunc::Result<()>
            where
                (#(#arg_tys,)*): #p::DeviceOperands<#in_tuple>,
                (#(#out_tys,)*): #p::DeviceOutOperands<#out_ty>,
            {
                #p::gu_call_out_device::<Self, _, _>(
                    Self::TARGETS, Some(stream), (#(#in_idents,)*), (#(#out_params,)*)
                )
            }
        }
    } else {
        quote!()
    };
    quote! {
        #(#doc_attrs)*
        ///
        #[doc = concat!("*Generated by `#[guvectorize(\"", #layout_text, "\")]`*: calls the core function for \
            every index of the broadcast loop dimensions and returns new arrays (loop shape, then core \
            shape), zero-initialised before the core function runs.")]
        #vis fn #name<#(#arg_tys),*>(#(#in_idents: #arg_tys),*) -> ::ufunc::Result<#arrays>
        where
            (#(#arg_tys,)*): #p::Operands<#in_tuple>,
        {
            #name::on(#name::DEFAULT_TARGET, #(#in_idents),*)
        }

        #[doc = #companions_doc]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name {
            _private: (),
        }

        #[allow(clippy::all)]
        impl #name {
            #[doc = #targets_doc]
            pub const TARGETS: &'static [::ufunc::Target] = &[#(#target_list),*];
            /// The target the plain call and `out` use.
            pub const DEFAULT_TARGET: ::ufunc::Target = #default_target;
            /// The layout, as written.
            pub const LAYOUT: &'static str = #layout_text;

            /// Calls the gufunc on the chosen target.
            pub fn on<#(#arg_tys),*>(target: ::ufunc::Target, #(#in_idents: #arg_tys),*)
                -> ::ufunc::Result<#arrays>
            where
                (#(#arg_tys,)*): #p::Operands<#in_tuple>,
            {
                #p::gu_call::<Self, _>(target, Self::TARGETS, (#(#in_idents,)*))
            }

            /// Writes into existing arrays or views of the loop shape plus the core shape; output
            /// dimensions that only outputs name take their size from these arrays.
            pub fn out<#(#arg_tys,)* #(#out_tys),*>(
                #(#in_idents: #arg_tys,)* #(#out_params: #out_tys),*
            ) -> ::ufunc::Result<()>
            where
                (#(#arg_tys,)*): #p::Operands<#in_tuple>,
                (#(#out_tys,)*): #p::OutOperands<#out_ty>,
            {
                Self::out_on(Self::DEFAULT_TARGET, #(#in_idents,)* #(#out_params),*)
            }

            /// `out` on the chosen target.
            pub fn out_on<#(#arg_tys,)* #(#out_tys),*>(
                target: ::ufunc::Target, #(#in_idents: #arg_tys,)* #(#out_params: #out_tys),*
            ) -> ::ufunc::Result<()>
            where
                (#(#arg_tys,)*): #p::Operands<#in_tuple>,
                (#(#out_tys,)*): #p::OutOperands<#out_ty>,
            {
                #p::gu_call_out::<Self, _, _>(
                    target, Self::TARGETS, (#(#in_idents,)*), (#(#out_params,)*)
                )
            }

            #device_fns

            /// The core function, as written.
            #(#core_attrs)*
            pub fn core #core_generics (#core_params) #core_output #core_block
        }

        #cuda_items

        impl #p::DeviceKernel for #name {
            const CUDA: ::core::option::Option<#p::CudaKernel> = #cuda_kernel;
        }

        impl #p::GuBody for #name {
            type In = #in_tuple;
            type Out = #out_ty;
            const NAME: &'static str = #name_str;
            const SIGNATURE: #p::Signature = #p::Signature {
                text: #layout_text,
                inputs: &[#(#in_dims),*],
                outputs: &[#(#out_dims),*],
                names: &[#(#names),*],
            };
            unsafe fn call(args: &[#p::CoreArg<'_>], n: usize, steps: &[isize]) {
                #(#layouts)*
                for __ufunc_item in 0..n as isize {
                    #(#bindings)*
                    let __ufunc_ret = Self::core(#(#call_args),*);
                    #store
                }
            }
        }
    }
}
