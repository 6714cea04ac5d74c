//! The Rust side of a translated device function: the `cuda_source` that assembles the source
//! at run time (helpers' fragments, captured constants by value, the device function, the
//! runtime's kernel skeleton) and the `CudaKernel` constant that names it.

use crate::cuda::DeviceFn;
use proc_macro2::{Ident, TokenStream};
use quote::quote;

/// Statements that append to `s` what `device` uses: the fragments of the helpers it calls and
/// its captured constants, written by value.
pub(super) fn push_captures(device: &DeviceFn) -> TokenStream {
    let helpers = &device.captures.helpers;
    let consts = device
        .captures
        .consts
        .iter()
        .map(|(cpp, path)| quote!(s.push_str(&::ufunc::__private::cuda_const(#cpp, &#path));));
    quote! {
        #(s.push_str(&#helpers::__ufunc_cuda_fragment());)*
        #(#consts)*
    }
}

/// `pub fn cuda_source() -> String` on `ty`: the runtime's `kernel_source` of kernel `name`
/// and `kind` around the translated code: the fragments of the helpers, the captured
/// constants, then the device function.
pub(super) fn cuda_source_fn(
    ty: &Ident,
    doc: &str,
    device: &DeviceFn,
    (name, kind): (&str, TokenStream),
) -> TokenStream {
    let captures = push_captures(device);
    let code = &device.code;
    quote! {
        #[allow(clippy::all)]
        impl #ty {
            #[doc = #doc]
            pub fn cuda_source() -> ::std::string::String {
                let mut s = ::std::string::String::new();
                #captures
                s.push_str(#code);
                ::ufunc::__private::kernel_source(#name, &#kind, &s)
            }
        }
    }
}

/// `Some(CudaKernel { .. })` naming `kernel` and the `cuda_source` of `ty`, built once per
/// process (a static inside the source function) so that a call builds no string.
pub(super) fn kernel_const(
    kernel: &str,
    ty: &Ident,
    fast_math: bool,
    mapped_axes: usize,
    device: &DeviceFn,
) -> TokenStream {
    let panics = panic_table(device, quote!(::ufunc::__private::SITE_CODE_BASE));
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
        panics: &#panics,
    }))
}

/// The `PanicTable` of a translated function whose first site has code `base`: its own sites
/// and the tables of the helpers it calls.
pub(super) fn panic_table(device: &DeviceFn, base: TokenStream) -> TokenStream {
    let p = quote!(::ufunc::__private);
    let sites = device.captures.panics.iter().map(|s| {
        let (index, message, formatted) = (s.index as i32, &s.message, s.formatted);
        quote!(#p::PanicSite {
            code: #base + #index,
            message: #message,
            formatted: #formatted,
        })
    });
    let helpers = &device.captures.helpers;
    quote!(#p::PanicTable {
        sites: &[#(#sites),*],
        helpers: &[#(&#helpers::__UFUNC_PANICS),*],
    })
}
