//! Code generation. Generated code names only `::ufunc::__private::...` paths and its own
//! identifiers start with `__ufunc` / `__Ufunc`.
//!
//! Companions of a function `foo` (`foo::out`, `foo::scalar`, ...) are associated items of a
//! field-less struct `foo`, which lives in the type namespace beside the function `foo`. An
//! inherent impl, unlike a nested `mod`, sees the items declared beside it even inside a function
//! body, so ufuncs and helpers defined in `main` or in a test work like module-level ones.

mod body;
mod guvectorize;
mod vectorize;

use crate::check::check_kernel_fn;
use crate::lane::{isa_ident, mentions_integers, rewrite, scalar_reason, LaneOptions};
use crate::model::Function;
use crate::types::{elem_kind, ElemKind};
use proc_macro2::{Ident, TokenStream, TokenTree};
use quote::{quote, ToTokens};
use syn::{ItemFn, Type};

pub(crate) use guvectorize::guvectorize;
pub(crate) use vectorize::vectorize;

/// `#[kernel_fn]`: the helper unchanged, plus `struct name` whose `__ufunc_lane` is its lane form.
pub(crate) fn kernel_fn(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item_fn = match parse_fn(&item, "#[kernel_fn]") {
        Ok(f) => f,
        Err(e) => return fallback(e, item),
    };
    if !attr.is_empty() {
        let e = syn::Error::new_spanned(attr, "#[kernel_fn] takes no arguments");
        return fallback(e, item);
    }
    let f = Function::from_syn(&item_fn);
    if let Err(e) = check_kernel_fn(&f) {
        return fallback(e, item);
    }
    let name = f.name();
    let vis = &item_fn.vis;
    let isa = isa_ident();
    let reason = scalar_reason(&item_fn.block);
    let options = LaneOptions {
        speculate: reason.is_none() && panic_free(&f, None),
        fastmath: false,
    };
    let lane_block = rewrite(&item_fn.block, &isa, options);
    let params = f
        .params
        .iter()
        .map(|p| param_tokens(p.ident, p.ty, p.mutable));
    let output = &item_fn.sig.output;
    let cuda = cuda_fragment(&f, &item_fn);
    let reason_tokens = match &reason {
        None => quote!(::core::option::Option::None),
        Some(r) => {
            let r = format!("helper `{name}`: {r}");
            quote!(::core::option::Option::Some(#r))
        }
    };
    quote! {
        #[inline]
        #item_fn

        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name {
            _private: (),
        }

        #[allow(unused_mut, unused_parens, clippy::all)]
        impl #name {
            /// Why the helper is not straight-line lane code, if it is not.
            pub const __UFUNC_SCALAR_REASON: ::core::option::Option<&'static str> = #reason_tokens;
            #[inline(always)]
            pub fn __ufunc_lane<#isa: ::ufunc::__private::Isa>(#(#params),*) #output #lane_block
            #cuda
        }
    }
}

/// A helper's CUDA side: `__UFUNC_CUDA_ERROR` (why it cannot be translated, if it cannot) and
/// `__ufunc_cuda_fragment()`, its device function with what it needs, once per source.
fn cuda_fragment(f: &Function<'_>, item_fn: &ItemFn) -> TokenStream {
    let name = f.name();
    let params: Vec<(&Ident, &Type)> = f.params.iter().map(|p| (p.ident, p.ty)).collect();
    let cpp_name = format!("__ufunc_helper_{name}");
    match crate::cuda::emit_device_fn(&cpp_name, &params, &item_fn.sig.output, &item_fn.block) {
        Ok(device) => {
            let guard = format!("__UFUNC_HELPER_{name}");
            let open = format!("#ifndef {guard}\n#define {guard}\n");
            let code = device.code;
            let helpers = &device.captures.helpers;
            let consts = device.captures.consts.iter().map(
                |(cpp, path)| quote!(s.push_str(&::ufunc::__private::cuda_const(#cpp, &#path));),
            );
            quote! {
                /// Why the helper cannot be translated to CUDA, if it cannot.
                pub const __UFUNC_CUDA_ERROR: ::core::option::Option<&'static str> =
                    ::core::option::Option::None;
                /// The helper as a CUDA device function, with the helpers and constants it uses.
                pub fn __ufunc_cuda_fragment() -> ::std::string::String {
                    let mut s = ::std::string::String::from(#open);
                    #(s.push_str(&#helpers::__ufunc_cuda_fragment());)*
                    #(#consts)*
                    s.push_str(#code);
                    s.push_str("#endif\n");
                    s
                }
            }
        }
        Err(e) => {
            let reason = e.to_string();
            let error = format!(
                "#error \"the #[kernel_fn] helper `{name}` cannot be translated to CUDA\"\n"
            );
            quote! {
                /// Why the helper cannot be translated to CUDA.
                pub const __UFUNC_CUDA_ERROR: ::core::option::Option<&'static str> =
                    ::core::option::Option::Some(#reason);
                /// A source that fails to compile, naming the helper.
                pub fn __ufunc_cuda_fragment() -> ::std::string::String {
                    ::std::string::String::from(#error)
                }
            }
        }
    }
}

/// The `ufunc::Target` variant of a (checked) target name.
fn target_tokens(name: &str) -> TokenStream {
    match name {
        "parallel" => quote!(::ufunc::Target::Parallel),
        "cuda" => quote!(::ufunc::Target::Cuda),
        _ => quote!(::ufunc::Target::Cpu),
    }
}

/// `pub fn cuda_source() -> String` on `ty`: the runtime's `kernel_source` of kernel `name`
/// and `kind` around the translated code: the fragments of the `helpers`, the captured
/// constants, then `code` (the device function).
fn cuda_source_fn(
    ty: &Ident,
    doc: &str,
    captures: &crate::cuda::Captures,
    code: &str,
    (name, kind): (&str, TokenStream),
) -> TokenStream {
    let helpers = &captures.helpers;
    let consts = captures
        .consts
        .iter()
        .map(|(cpp, path)| quote!(s.push_str(&::ufunc::__private::cuda_const(#cpp, &#path));));
    quote! {
        #[allow(clippy::all)]
        impl #ty {
            #[doc = #doc]
            pub fn cuda_source() -> ::std::string::String {
                let mut s = ::std::string::String::new();
                #(s.push_str(&#helpers::__ufunc_cuda_fragment());)*
                #(#consts)*
                s.push_str(#code);
                ::ufunc::__private::kernel_source(#name, &#kind, &s)
            }
        }
    }
}

/// `Some(CudaKernel { .. })` naming `kernel` and the `cuda_source` of `ty`, built once per
/// process (a static inside the source function) so that a call builds no string.
fn kernel_const(kernel: &str, ty: &Ident, fast_math: bool, mapped_axes: usize) -> TokenStream {
    quote!(::core::option::Option::Some(::ufunc::__private::CudaKernel {
        name: #kernel,
        source: {
            fn __ufunc_source() -> &'static ::ufunc::__private::KernelSource {
                static SOURCE: ::std::sync::OnceLock<::ufunc::__private::KernelSource> =
                    ::std::sync::OnceLock::new();
                SOURCE.get_or_init(|| ::ufunc::__private::KernelSource::new(#ty::cuda_source()))
            }
            __ufunc_source
        },
        fast_math: #fast_math,
        mapped_axes: #mapped_axes,
    }))
}

/// Parses a free function, or says that `attribute` only applies to one.
fn parse_fn(item: &TokenStream, attribute: &str) -> syn::Result<ItemFn> {
    match syn::parse2::<syn::Item>(item.clone())? {
        syn::Item::Fn(f) => Ok(f),
        other => Err(syn::Error::new_spanned(
            other,
            format!("{attribute} can only be applied to a free function"),
        )),
    }
}

fn fallback(error: syn::Error, item: TokenStream) -> TokenStream {
    let mut out = error.to_compile_error();
    out.extend(item);
    out
}

fn param_tokens(ident: &Ident, ty: &impl ToTokens, mutable: bool) -> TokenStream {
    if mutable {
        quote!(mut #ident: #ty)
    } else {
        quote!(#ident: #ty)
    }
}

/// Whether no expression of the function can panic (see `lane::mentions_integers`): every
/// parameter and result is a float, complex or bool, and the body mentions no integer.
fn panic_free(f: &Function<'_>, generic_types: Option<&[Type]>) -> bool {
    let generic_ok = generic_types.is_none_or(|list| {
        list.iter().all(|t| {
            matches!(
                elem_kind(t, None),
                Some(ElemKind::Float | ElemKind::Complex)
            )
        })
    });
    let kind_ok = |ty: &Type| match elem_kind(ty, f.generic) {
        Some(ElemKind::Float | ElemKind::Complex | ElemKind::Bool) => true,
        Some(ElemKind::Generic) => generic_ok,
        _ => false,
    };
    f.params.iter().all(|p| kind_ok(p.ty))
        && f.outputs.iter().all(|t| kind_ok(t))
        && !mentions_integers(&f.item.block)
}

/// Replaces the identifier `from` by `to` everywhere in `tokens` (the type parameter in types).
fn replace_ident(tokens: TokenStream, from: &Ident, to: &TokenStream) -> TokenStream {
    tokens
        .into_iter()
        .flat_map(|tt| match tt {
            TokenTree::Ident(i) if i == *from => to.clone(),
            TokenTree::Group(g) => {
                let mut ng =
                    proc_macro2::Group::new(g.delimiter(), replace_ident(g.stream(), from, to));
                ng.set_span(g.span());
                TokenTree::Group(ng).into_token_stream()
            }
            tt => tt.into_token_stream(),
        })
        .collect()
}
