//! The `Body` impl of one instantiation of a `#[vectorize]` function, and its `scalar`.

use super::{panic_free, param_tokens, replace_ident};
use crate::lane::{isa_ident, rewrite, scalar_reason, LaneOptions};
use crate::model::Vectorize;
use proc_macro2::{Ident, TokenStream};
use quote::{quote, ToTokens};
use syn::Type;

/// The element type a generic function is instantiated with.
pub(super) struct Instantiation<'a> {
    pub generic: &'a Ident,
    pub concrete: &'a Type,
    pub all_types: &'a [Type],
}

impl Instantiation<'_> {
    /// `tokens` with the type parameter replaced by the concrete type.
    fn apply(&self, tokens: TokenStream) -> TokenStream {
        replace_ident(tokens, self.generic, &self.concrete.to_token_stream())
    }

    /// `type T = f32;`, prepended to bodies so that `T` in them means the concrete type.
    fn alias(&self) -> TokenStream {
        let (generic, concrete) = (self.generic, self.concrete);
        quote!(#[allow(dead_code)] type #generic = #concrete;)
    }
}

/// `impl body_ty { fn scalar }` and `impl Body for body_ty`; with the `cuda` target also
/// `fn cuda_source` and the kernel description. Fails only when the body cannot be translated
/// to CUDA.
pub(super) fn body_impl(
    v: &Vectorize<'_>,
    body_ty: &Ident,
    inst: Option<&Instantiation<'_>>,
) -> syn::Result<TokenStream> {
    let f = &v.func;
    let item = f.item;
    let apply = |t: TokenStream| inst.map_or(t.clone(), |i| i.apply(t));
    let alias = inst.map(Instantiation::alias);
    let param_tys: Vec<TokenStream> = f
        .params
        .iter()
        .map(|p| apply(p.ty.to_token_stream()))
        .collect();
    let params = f
        .params
        .iter()
        .zip(&param_tys)
        .map(|(p, ty)| param_tokens(p.ident, ty, p.mutable));
    let in_tuple = quote!((#(#param_tys,)*));
    let out_ty = match &item.sig.output {
        syn::ReturnType::Type(_, ty) => apply(ty.to_token_stream()),
        syn::ReturnType::Default => quote!(()),
    };
    let block = &item.block;
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
                speculate: panic_free(f, inst.map(|i| i.all_types)),
                fastmath: v.attr.fastmath.is_some_and(|(_, on)| on),
            };
            let lane = rewrite(block, &isa, options);
            (
                quote!(::ufunc::__private::path_with_helpers(
                    &[#(#helpers::__UFUNC_SCALAR_REASON),*]
                )),
                quote!({
                    if <Self as ::ufunc::__private::Body>::PATH.is_simd() {
                        #alias
                        #lane
                    } else {
                        Self::scalar(#(#args),*)
                    }
                }),
            )
        }
    };
    let (cuda_items, cuda_const) = if v.attr.wants_cuda() {
        cuda_parts(v, body_ty, inst)?
    } else {
        (quote!(), quote!(::core::option::Option::None))
    };
    Ok(quote! {
        #cuda_items

        #[allow(unused_mut, unused_parens, clippy::all)]
        impl #body_ty {
            /// The original scalar function, unchanged.
            #(#attrs)*
            #[inline]
            pub fn scalar(#(#params),*) -> #out_ty {
                #alias
                #block
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
            #[inline(always)]
            fn call<#isa: ::ufunc::__private::Isa>((#(#patterns,)*): Self::In) -> Self::Out
                #call_body
        }
    })
}

/// The CUDA translation of one instantiation: `impl body_ty { fn cuda_source }` (prelude,
/// helpers, captured constants, the body as a device function, the kernels) and the
/// `CudaKernel` that names it.
fn cuda_parts(
    v: &Vectorize<'_>,
    body_ty: &Ident,
    inst: Option<&Instantiation<'_>>,
) -> syn::Result<(TokenStream, TokenStream)> {
    let f = &v.func;
    let apply = |t: TokenStream| inst.map_or(t.clone(), |i| i.apply(t));
    let block: syn::Block = syn::parse2(apply(f.item.block.to_token_stream()))?;
    let param_tys: Vec<Type> = f
        .params
        .iter()
        .map(|p| syn::parse2(apply(p.ty.to_token_stream())))
        .collect::<syn::Result<_>>()?;
    let output: syn::ReturnType = syn::parse2(apply(f.item.sig.output.to_token_stream()))?;
    let params: Vec<(&Ident, &Type)> = f.params.iter().map(|p| p.ident).zip(&param_tys).collect();
    let kernel = body_ty
        .to_string()
        .trim_start_matches("__ufunc_")
        .to_string();
    let body_fn = format!("__ufunc_body_{kernel}");
    let device = crate::cuda::emit_device_fn(&body_fn, &params, &output, &block)?;
    let outputs: Vec<Type> = match &output {
        syn::ReturnType::Type(_, t) => match &**t {
            Type::Tuple(tt) => tt.elems.iter().cloned().collect(),
            t => vec![t.clone()],
        },
        syn::ReturnType::Default => vec![],
    };
    let cpp = |t: &Type| crate::cuda::ty_of(t).map(|t| t.cpp()).unwrap_or_default();
    let in_cpp = param_tys.iter().map(cpp);
    let out_cpp = outputs.iter().map(cpp);
    let kind = quote!(::ufunc::__private::KernelKind::Elementwise {
        device_fn: #body_fn,
        inputs: &[#(#in_cpp),*],
        outputs: &[#(#out_cpp),*],
    });
    let helpers = &device.captures.helpers;
    let helper_checks = helpers.iter().map(|h| {
        let msg = format!(
            "the #[kernel_fn] helper `{h}` cannot be translated to CUDA: keep its body to the \
             supported subset (its `__UFUNC_CUDA_ERROR` says what is not)"
        );
        quote::quote_spanned!(h.span()=>
            const _: () = ::core::assert!(#h::__UFUNC_CUDA_ERROR.is_none(), #msg);
        )
    });
    let fast_math = v.attr.fastmath.is_some_and(|(_, on)| on);
    let source_fn = super::cuda_source_fn(
        body_ty,
        "The CUDA C++ source of this ufunc: the prelude, the helpers it calls, the constants it \
         captures (by value), the body as a device function, and the kernels.",
        &device.captures,
        &device.code,
        (&kernel, kind),
    );
    let items = quote! {
        #(#helper_checks)*
        #source_fn
    };
    let cuda_const = super::kernel_const(&kernel, body_ty, fast_math, 0);
    Ok((items, cuda_const))
}

/// The helpers (calls `name(..)` of plain lower-case functions) a body calls.
fn helper_calls(block: &syn::Block) -> Vec<Ident> {
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
