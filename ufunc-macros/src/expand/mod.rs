//! The passes of every attribute, and code generation.
//!
//! [`expand`] runs the same passes for `#[vectorize]`, `#[guvectorize]` and `#[kernel_fn]`, all
//! recording into one [`Errors`] context: the attribute (`attr`), the function into the shared
//! model (`model`), the checks (`check`), and with the `cuda` target the CUDA translation
//! (`cuda::translate`, also a check). Only when the context checks clean does generation run,
//! and generation cannot fail: it reads the model and the translation and returns tokens. On
//! error the output is the errors plus the user's function unchanged, so that no follow-on
//! errors appear.
//!
//! Generated code names only `::ufunc::__private::...` paths and its own identifiers start with
//! `__ufunc` / `__Ufunc`. Companions of a function `foo` (`foo::out`, `foo::scalar`, ...) are
//! associated items of a field-less struct `foo`, which lives in the type namespace beside the
//! function `foo`. An inherent impl, unlike a nested `mod`, sees the items declared beside it
//! even inside a function body, so ufuncs and helpers defined in `main` or in a test work like
//! module-level ones. The companions both ufunc kinds share come from one generator
//! (`companions`); `vectorize`, `guvectorize` and `kernel_fn` add what only they have.

mod body;
mod companions;
mod cuda;
mod guvectorize;
mod kernel_fn;
mod typing;
mod vectorize;

use crate::attr::{Attr, Kind, Macro};
use crate::errors::Errors;
use crate::lane::mentions_integers;
use crate::model::Ufunc;
use crate::types::{elem_kind, ElemKind};
use proc_macro2::{Ident, TokenStream};
use quote::{quote, ToTokens};
use syn::{ItemFn, Type};

/// The entry point of each attribute: `mac` applied with arguments `attr` to `item`.
pub(crate) fn expand(mac: Macro, attr: TokenStream, item: TokenStream) -> TokenStream {
    let errors = Errors::new();
    let attr = Attr::from_tokens(attr, mac, &errors);
    let Some(item_fn) = parse_fn(&item, mac, &errors) else {
        return finish(errors, item, TokenStream::new);
    };
    // On error the function goes out without its body if that is generic: the body is written
    // for the instantiated types, and rustc would report its uses of the type parameter.
    let item = fallback(&item_fn).unwrap_or(item);
    let f = Ufunc::from_syn(&item_fn, attr);
    crate::check::check(&f, &errors);
    match &f.attr.kind {
        Kind::Vectorize => {
            let instances = f.instances();
            let kernels = crate::cuda::elementwise(&f, &instances, &errors);
            finish(errors, item, || vectorize::expand(&f, &instances, &kernels))
        }
        Kind::Guvectorize(layout) => {
            let instances = f.instances();
            let kernels = crate::cuda::gufunc(&f, &instances, &errors);
            finish(errors, item, || {
                guvectorize::expand(&f, layout, &instances, &kernels)
            })
        }
        Kind::KernelFn => {
            let device = crate::cuda::helper(&f);
            finish(errors, item, || kernel_fn::expand(&f, &device))
        }
    }
}

/// Generation if every pass was clean; otherwise the errors and the function unchanged.
fn finish(
    errors: Errors,
    item: TokenStream,
    generate: impl FnOnce() -> TokenStream,
) -> TokenStream {
    match errors.check() {
        Ok(()) => generate(),
        Err(e) => {
            let mut out = e.to_compile_error();
            out.extend(item);
            out
        }
    }
}

/// `f` with its body replaced by `unimplemented!()`, if it has a type parameter.
fn fallback(f: &ItemFn) -> Option<TokenStream> {
    f.sig.generics.type_params().next()?;
    let mut f = f.clone();
    f.block = syn::parse_quote!({ ::core::unimplemented!() });
    f.attrs.push(syn::parse_quote!(#[allow(unused_variables)]));
    Some(f.into_token_stream())
}

/// Parses a free function, or records that `mac` only applies to one.
fn parse_fn(item: &TokenStream, mac: Macro, errors: &Errors) -> Option<ItemFn> {
    match errors.record(syn::parse2::<syn::Item>(item.clone()))? {
        syn::Item::Fn(f) => Some(f),
        other => {
            errors.spanned(
                other,
                format!("{} can only be applied to a free function", mac.name()),
            );
            None
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

fn param_tokens(ident: &Ident, ty: &impl ToTokens, mutable: bool) -> TokenStream {
    if mutable {
        quote!(mut #ident: #ty)
    } else {
        quote!(#ident: #ty)
    }
}

/// Whether no expression of the function can panic (see `lane::mentions_integers`): every
/// parameter and result is a float, complex or bool (a type parameter: every type of
/// `types = [...]` is), and the body mentions no integer.
fn panic_free(f: &Ufunc<'_>) -> bool {
    let generic_ok = f.attr.types.as_ref().is_none_or(|(_, list)| {
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
        && f.returns.iter().all(|t| kind_ok(t))
        && !mentions_integers(&f.item.block)
}

/// For a function `owner` calling `helpers` by plain name: a glob import that names each of them
/// as `ufunc_runtime::PlainHelper`, so that a call of a plain
/// function (or closure) resolves and runs as it is. A `#[kernel_fn]` helper's own `struct` is an
/// item beside the call, which shadows a glob import; globs of several ufuncs naming the same
/// `PlainHelper` do not conflict.
fn plain_helper_fallbacks(owner: &Ident, helpers: &[Ident]) -> TokenStream {
    if helpers.is_empty() {
        return TokenStream::new();
    }
    let module = quote::format_ident!("__ufunc_plain_helpers_{}", owner);
    quote! {
        #[doc(hidden)]
        #[allow(non_snake_case, non_camel_case_types, unused_imports)]
        mod #module {
            #(pub(super) use ::ufunc::__private::PlainHelper as #helpers;)*
        }
        #[allow(unused_imports)]
        use #module::*;
    }
}
