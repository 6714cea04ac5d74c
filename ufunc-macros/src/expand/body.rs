//! The `Body` impl of one instantiation of a `#[vectorize]` function, its `scalar`, and with
//! the `cuda` target its kernel.

use super::cuda::{cuda_source_fn, kernel_const};
use super::{panic_free, param_tokens};
use crate::cuda::ElementwiseKernel;
use crate::lane::{isa_ident, rewrite, scalar_reason, LaneOptions};
use crate::model::{Instance, Ufunc};
use proc_macro2::{Ident, TokenStream};
use quote::{quote, ToTokens};

/// `impl body_ty { fn scalar }` and `impl Body for body_ty`; with the `cuda` target also
/// `fn cuda_source` and the kernel description.
pub(super) fn body_impl(
    f: &Ufunc<'_>,
    inst: &Instance<'_>,
    kernel: Option<&ElementwiseKernel>,
) -> TokenStream {
    let item = f.item;
    let body_ty = &inst.body_ty;
    let alias = inst.alias();
    let param_tys: Vec<TokenStream> = f
        .params
        .iter()
        .map(|p| inst.apply(p.ty.to_token_stream()))
        .collect();
    let params = f
        .params
        .iter()
        .zip(&param_tys)
        .map(|(p, ty)| param_tokens(p.ident, ty, p.mutable));
    let in_tuple = quote!((#(#param_tys,)*));
    let out_ty = match &item.sig.output {
        syn::ReturnType::Type(_, ty) => inst.apply(ty.to_token_stream()),
        syn::ReturnType::Default => quote!(()),
    };
    let block = &item.block;
    let stmts = &block.stmts;
    let attrs = item.attrs.iter().filter(|a| !a.path().is_ident("doc"));
    let name = f.name().to_string();
    let isa = isa_ident();
    let reason = scalar_reason(block);
    let args: Vec<&Ident> = f.params.iter().map(|p| p.ident).collect();
    let patterns = f.params.iter().map(|p| {
        let ident = p.ident;
        if p.mutable {
            quote!(mut #ident)
        } else {
            quote!(#ident)
        }
    });
    let (path, call_body) = match &reason {
        Some(r) => (
            quote!(::ufunc::KernelPath::Scalar { reason: #r }),
            quote!({ Self::scalar(#(#args),*) }),
        ),
        None => {
            let helpers = helper_calls(block);
            let options = LaneOptions {
                speculate: panic_free(f),
                fastmath: f.attr.fastmath(),
            };
            // The statements go straight into the generated block: a block inside a block would
            // be `unused_braces` at the user's braces for a one-expression body.
            let lane = rewrite(block, &isa, options).stmts;
            (
                quote!(::ufunc::__private::path_with_helpers(
                    &[#(#helpers::__UFUNC_SCALAR_REASON),*]
                )),
                quote!({
                    if <Self as ::ufunc::__private::Body>::PATH.is_simd() {
                        #alias
                        #(#lane)*
                    } else {
                        Self::scalar(#(#args),*)
                    }
                }),
            )
        }
    };
    let identity = f.attr.identity.as_ref().map(|(_, e)| {
        let e = inst.apply(e.to_token_stream());
        quote!(const IDENTITY: ::core::option::Option<Self::Out> = ::core::option::Option::Some(#e);)
    });
    let associative = f.attr.associative().then(|| {
        quote!(
            const ASSOCIATIVE: bool = true;
        )
    });
    let (cuda_items, cuda_const) = match kernel {
        Some(kernel) => cuda_parts(f, body_ty, kernel),
        None => (quote!(), quote!(::core::option::Option::None)),
    };
    quote! {
        #cuda_items

        #[allow(unused_mut, unused_parens, clippy::all)]
        impl #body_ty {
            /// The original scalar function, unchanged.
            #(#attrs)*
            #[inline]
            pub fn scalar(#(#params),*) -> #out_ty {
                #alias
                #(#stmts)*
            }
        }

        impl ::ufunc::__private::DeviceKernel for #body_ty {
            const CUDA: ::core::option::Option<::ufunc::__private::CudaKernel> = #cuda_const;
        }

        #[allow(unused_mut, unused_parens, clippy::all)]
        impl ::ufunc::__private::Body for #body_ty {
            type In = #in_tuple;
            type Out = #out_ty;
            const NAME: &'static str = #name;
            const PATH: ::ufunc::KernelPath = #path;
            #identity
            #associative
            #[inline(always)]
            fn call<#isa: ::ufunc::__private::Isa>((#(#patterns,)*): Self::In) -> Self::Out
                #call_body
        }
    }
}

/// The kernel of one instantiation: `impl body_ty { fn cuda_source }` (prelude, helpers,
/// captured constants, the body as a device function, the kernels), a check that each helper
/// called could be translated, and the `CudaKernel` that names it all.
fn cuda_parts(
    f: &Ufunc<'_>,
    body_ty: &Ident,
    kernel: &ElementwiseKernel,
) -> (TokenStream, TokenStream) {
    let ElementwiseKernel {
        kernel,
        body_fn,
        device,
        inputs,
        outputs,
    } = kernel;
    let methods = f.method_elem().is_ok();
    let kind = quote!(::ufunc::__private::KernelKind::Elementwise {
        device_fn: #body_fn,
        inputs: &[#(#inputs),*],
        outputs: &[#(#outputs),*],
        methods: #methods,
    });
    let helper_checks = device.captures.helpers.iter().map(|h| {
        let plain = format!(
            "`{h}` is a plain function, and a cuda kernel can only call #[kernel_fn] helpers: \
             mark `{h}` #[kernel_fn] so that the macro sees its body and translates it"
        );
        let msg = format!(
            "the #[kernel_fn] helper `{h}` cannot be translated to CUDA: keep its body to the \
             supported subset, and mark the functions it calls #[kernel_fn] (its \
             `__UFUNC_CUDA_ERROR` says what is not translatable)"
        );
        quote::quote_spanned!(h.span()=>
            const _: () = ::core::assert!(#h::__UFUNC_KERNEL_FN, #plain);
            const _: () = ::core::assert!(
                !#h::__UFUNC_KERNEL_FN || #h::__UFUNC_CUDA_ERROR.is_none(),
                #msg
            );
        )
    });
    let source_fn = cuda_source_fn(
        body_ty,
        "The CUDA C++ source of this ufunc: the prelude, the helpers it calls, the constants it \
         captures (by value), the body as a device function, and the kernels.",
        device,
        (kernel, kind),
    );
    let items = quote! {
        #(#helper_checks)*
        #source_fn
    };
    (
        items,
        kernel_const(kernel, body_ty, f.attr.fastmath(), 0, device),
    )
}

/// The helpers (calls `name(..)` of plain lower-case functions) a body calls.
pub(super) fn helper_calls(block: &syn::Block) -> Vec<Ident> {
    struct Finder(Vec<Ident>);
    impl<'ast> syn::visit::Visit<'ast> for Finder {
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if let syn::Expr::Path(p) = &*c.func {
                if let Some(ident) = crate::lane::helper_name(p) {
                    if !self.0.contains(ident) {
                        self.0.push(ident.clone());
                    }
                }
            }
            syn::visit::visit_expr_call(self, c);
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut f = Finder(vec![]);
    syn::visit::Visit::visit_block(&mut f, block);
    f.0
}
