//! `#[kernel_fn]`: the helper unchanged, plus `struct name` whose `__ufunc_lane` is its lane
//! form and, for cuda ufuncs that call it, its device function (or why it has none).

use super::cuda::{panic_table, push_captures};
use super::{panic_free, param_tokens};
use crate::cuda::DeviceFn;
use crate::lane::{isa_ident, rewrite, scalar_reason, LaneOptions};
use crate::model::Ufunc;
use proc_macro2::TokenStream;
use quote::quote;

/// The checked helper and its translation.
pub(super) fn expand(f: &Ufunc<'_>, device: &Result<DeviceFn, String>) -> TokenStream {
    let item_fn = f.item;
    let name = f.name();
    let vis = &item_fn.vis;
    let isa = isa_ident();
    let reason = scalar_reason(&item_fn.block);
    let options = LaneOptions {
        speculate: reason.is_none() && panic_free(f),
        fastmath: false,
    };
    let lane_block = rewrite(&item_fn.block, &isa, options);
    let params = f
        .params
        .iter()
        .map(|p| param_tokens(p.ident, p.ty, p.mutable));
    let param_tys = f.params.iter().map(|p| p.ty);
    let output = &item_fn.sig.output;
    let fallbacks = super::plain_helper_fallbacks(name, &super::body::helper_calls(&item_fn.block));
    let cuda = cuda_fragment(f, device);
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

        #fallbacks

        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name {
            _private: (),
        }

        #[allow(unused_mut, unused_parens, clippy::all)]
        impl #name {
            /// Why the helper is not straight-line lane code, if it is not.
            pub const __UFUNC_SCALAR_REASON: ::core::option::Option<&'static str> = #reason_tokens;
            /// A `#[kernel_fn]` helper (a plain function's stand-in says `false`).
            pub const __UFUNC_KERNEL_FN: bool = true;
            #[inline(always)]
            pub fn __ufunc_lane<#isa: ::ufunc::__private::Isa>(#(#params),*) #output #lane_block
            /// The lane form, for a call `name(..)` in lane code.
            #[inline(always)]
            pub fn __ufunc_lane_of<#isa: ::ufunc::__private::Isa, __UfuncF>(
                _: __UfuncF,
            ) -> impl Fn(#(#param_tys),*) #output {
                Self::__ufunc_lane::<#isa>
            }
            #cuda
        }
    }
}

/// A helper's CUDA side: `__UFUNC_CUDA_ERROR` (why it cannot be translated, if it cannot) and
/// `__ufunc_cuda_fragment()`, its device function with what it needs, once per source.
fn cuda_fragment(f: &Ufunc<'_>, device: &Result<DeviceFn, String>) -> TokenStream {
    let name = f.name();
    match device {
        Ok(device) => {
            let guard = format!("__UFUNC_HELPER_{name}");
            let open = format!("#ifndef {guard}\n#define {guard}\n");
            let code = &device.code;
            let captures = push_captures(device);
            let nested = &device.captures.helpers;
            let offset = crate::cuda::helper_site_offset(&name.to_string());
            let base = quote!(::ufunc::__private::HELPER_SITE_CODE_BASE + #offset);
            let panics = panic_table(device, base);
            quote! {
                /// The helper's panic sites on cuda, and its helpers'.
                pub const __UFUNC_PANICS: ::ufunc::__private::PanicTable = #panics;
                /// Why the helper cannot be translated to CUDA, if it cannot: the first reason
                /// of a helper it calls (a plain function has one).
                pub const __UFUNC_CUDA_ERROR: ::core::option::Option<&'static str> =
                    ::ufunc::__private::first_reason(&[#(#nested::__UFUNC_CUDA_ERROR),*]);
                /// The helper as a CUDA device function, with the helpers and constants it uses.
                pub fn __ufunc_cuda_fragment() -> ::std::string::String {
                    let mut s = ::std::string::String::from(#open);
                    #captures
                    s.push_str(#code);
                    s.push_str("#endif\n");
                    s
                }
            }
        }
        Err(reason) => {
            let error = format!(
                "#error \"the #[kernel_fn] helper `{name}` cannot be translated to CUDA\"\n"
            );
            quote! {
                /// No device code, so no panic sites.
                pub const __UFUNC_PANICS: ::ufunc::__private::PanicTable =
                    ::ufunc::__private::PanicTable::EMPTY;
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
