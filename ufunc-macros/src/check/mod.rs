//! Validation of the model: one function per rule, each recording every error it finds, with
//! its span, into the invocation's [`Errors`]. Code generation never fails: anything that can
//! fail is judged here (or by the CUDA translation, `cuda::translate`, which is also
//! a check). The rules shared by the three attributes live here; the ones that tie a gufunc's
//! parameters to its layout live in `gufunc`.

mod gufunc;

use crate::attr::{Attr, Kind, KNOWN_TARGETS};
use crate::errors::Errors;
use crate::model::Ufunc;
use crate::types::{elem_kind, ElemKind, ELEMENT_TYPES};
use syn::visit::Visit;
use syn::{FnArg, Pat, ReturnType, Type};

const MAX_INPUTS: usize = 12;
const MAX_OUTPUTS: usize = 4;

/// Every rule that applies to the kind of `f`.
pub(crate) fn check(f: &Ufunc<'_>, errors: &Errors) {
    check_targets(&f.attr, errors);
    check_signature_kind(&f.item.sig, errors);
    check_params(f, errors);
    match &f.attr.kind {
        Kind::Vectorize => {
            check_reserved_names(f, errors);
            check_outputs(f, errors);
            check_generics(f, errors);
            check_body(f, errors);
            check_identity(f, errors);
        }
        Kind::KernelFn => {
            check_outputs(f, errors);
            check_not_generic(f, errors);
            check_body(f, errors);
        }
        Kind::Guvectorize(layout) => {
            gufunc::check_returns(f, errors);
            gufunc::check_options(&f.attr, errors);
            gufunc::check_generics(f, errors);
            check_reserved_names(f, errors);
            gufunc::check_against_layout(f, layout, errors);
        }
    }
}

/// `identity = ...` only on a function that gets the methods (`f(T, T) -> T`):
/// `fn f(a: f32) -> f32` -> "`identity` ... `f` takes 1 input".
fn check_identity(f: &Ufunc<'_>, errors: &Errors) {
    if let (Some((span, _)), Err(why)) = (&f.attr.identity, f.method_elem()) {
        errors.at(
            *span,
            format!("`identity` is for `reduce`, which needs {why}"),
        );
    }
    if let (Some((span, _)), Err(why)) = (&f.attr.associative, f.method_elem()) {
        errors.at(
            *span,
            format!("`associative` is for `reduce` and `accumulate`, which need {why}"),
        );
    }
}

/// `target` and `targets` name known targets, once each; only one of the two keys is used.
/// `#[vectorize(target = "gpu")]` -> "unknown target `gpu`; expected one of ...".
fn check_targets(attr: &Attr, errors: &Errors) {
    if let Some(second) = attr.target_keys.get(1) {
        errors.at(
            *second,
            "give either `target = \"...\"` or `targets = [...]`, once",
        );
    }
    if attr.target_keys.len() == 1 && attr.targets.is_empty() {
        errors.at(
            attr.target_keys[0],
            "`targets` must name at least one target",
        );
    }
    let expected = KNOWN_TARGETS
        .iter()
        .map(|t| format!("`{t}`"))
        .collect::<Vec<_>>()
        .join(", ");
    for (i, lit) in attr.targets.iter().enumerate() {
        let name = lit.value();
        if !KNOWN_TARGETS.contains(&name.as_str()) {
            errors.spanned(
                lit,
                format!("unknown target `{name}`; expected one of {expected}"),
            );
        } else if attr.targets[..i].iter().any(|t| t.value() == name) {
            errors.spanned(lit, format!("target `{name}` is listed twice"));
        }
    }
}

/// A ufunc is a plain function: not `async`, `unsafe`, `const`, `extern` or variadic.
/// `async fn f(x: f32) -> f32` -> "a ufunc cannot be an `async fn`".
fn check_signature_kind(sig: &syn::Signature, errors: &Errors) {
    if let Some(t) = &sig.asyncness {
        errors.spanned(t, "a ufunc cannot be an `async fn`");
    }
    if let Some(t) = &sig.unsafety {
        errors.spanned(
            t,
            "a ufunc cannot be an `unsafe fn`: it runs for every element, on any thread",
        );
    }
    if let Some(t) = &sig.constness {
        errors.spanned(t, "a ufunc cannot be a `const fn`");
    }
    if let Some(t) = &sig.abi {
        errors.spanned(t, "a ufunc cannot have an `extern` ABI");
    }
    if let Some(t) = &sig.variadic {
        errors.spanned(t, "a ufunc cannot be variadic");
    }
}

/// Parameters are plain names of a type the kind takes: `fn f(x: &f32)` -> "reference
/// parameters are not supported ...", `fn f((a, b): (f32, f32))` -> "... must be plain names".
/// An element-wise function takes 1 to 12 element parameters; a gufunc's parameters are judged
/// by their part in the layout (`gufunc::check_param_type`).
fn check_params(f: &Ufunc<'_>, errors: &Errors) {
    let sig = &f.item.sig;
    let gufunc = matches!(f.attr.kind, Kind::Guvectorize(_));
    let (noun, example) = if gufunc {
        ("gufunc", "a: ArrayView2<f32>")
    } else {
        ("ufunc", "x: f32")
    };
    if !gufunc && sig.inputs.is_empty() {
        errors.spanned(&sig.ident, "a ufunc needs at least one parameter");
    }
    if !gufunc && sig.inputs.len() > MAX_INPUTS {
        errors.spanned(
            &sig.inputs,
            format!("a ufunc takes at most {MAX_INPUTS} parameters"),
        );
    }
    for arg in &sig.inputs {
        let pt = match arg {
            FnArg::Receiver(r) => {
                errors.spanned(
                    r,
                    format!("a {noun} cannot take `self`; write a free function"),
                );
                continue;
            }
            FnArg::Typed(pt) => pt,
        };
        let plain = match &*pt.pat {
            Pat::Ident(p) => gufunc || (p.by_ref.is_none() && p.subpat.is_none()),
            _ => false,
        };
        if !plain {
            errors.spanned(
                &pt.pat,
                format!("{noun} parameters must be plain names, as in `{example}`"),
            );
            // `(a, b): (f32, f32)` is one mistake: its type is not judged separately.
            continue;
        }
        if gufunc {
            gufunc::check_param_type(&pt.ty, f.generic, errors);
        } else {
            check_element_type(&pt.ty, f.generic, "parameter", errors);
        }
    }
}

fn check_element_type(ty: &Type, generic: Option<&syn::Ident>, what: &str, errors: &Errors) {
    match ty {
        Type::Reference(_) | Type::Ptr(_) => errors.spanned(
            ty,
            format!(
                "reference {what}s are not supported: a ufunc {what} is one scalar element \
                 passed by value; expected one of {ELEMENT_TYPES}"
            ),
        ),
        _ if elem_kind(ty, generic).is_none() => {
            let shown = quote::quote!(#ty).to_string().replace(' ', "");
            errors.spanned(
                ty,
                format!(
                    "`{shown}` is not a ufunc element type; a {what} must be one of {ELEMENT_TYPES}"
                ),
            )
        }
        _ => {}
    }
}

/// Parameter names must not collide with the generated identifiers, which all start with
/// `__ufunc` (the companions' own parameters, `out` and `target`, step aside for the user's):
/// `fn f(__ufunc_x: f32)` -> "the parameter name `__ufunc_x` is reserved by `#[vectorize]`; ...".
fn check_reserved_names(f: &Ufunc<'_>, errors: &Errors) {
    for p in &f.params {
        let name = p.ident.to_string();
        if name.starts_with("__ufunc") {
            errors.spanned(
                p.ident,
                format!(
                    "the parameter name `{name}` is reserved by {}; rename it",
                    f.attr.kind.name()
                ),
            );
        }
    }
}

/// A ufunc returns one element or a tuple of 2 to 4: `fn f(x: f32)` -> "... must return ...".
fn check_outputs(f: &Ufunc<'_>, errors: &Errors) {
    let sig = &f.item.sig;
    match &sig.output {
        ReturnType::Default => errors.spanned(
            &sig.ident,
            "a ufunc must return its result: add a return type such as `-> f32`, \
             or a tuple such as `-> (f32, f32)` for several outputs",
        ),
        ReturnType::Type(_, ty) => {
            if let Type::Tuple(t) = &**ty {
                if t.elems.is_empty() {
                    errors.spanned(ty, "a ufunc must return a value, not `()`");
                } else if t.elems.len() == 1 || t.elems.len() > MAX_OUTPUTS {
                    errors.spanned(
                        ty,
                        format!("a ufunc returns one element or a tuple of 2 to {MAX_OUTPUTS}"),
                    );
                }
            }
            for out in &f.returns {
                check_element_type(out, f.generic, "result", errors);
            }
        }
    }
}

/// A generic function has exactly one type parameter and a `types = [...]` list of element
/// types; a non-generic one has no list. `fn f<T>(x: T) -> T` alone -> "a generic ufunc needs
/// the element types to instantiate: add `types = [f32, f64]` ...".
fn check_generics(f: &Ufunc<'_>, errors: &Errors) {
    let generics = &f.item.sig.generics;
    if generics.params.len() > generics.type_params().count() {
        errors.spanned(
            generics,
            "a ufunc cannot have lifetime or const parameters; \
             it can only be generic over one element type parameter",
        );
    }
    check_type_list(f, errors);
}

/// The `types = [...]` list of either ufunc kind and the type parameter it instantiates:
/// exactly one type parameter with a non-empty list of element types, or neither.
pub(super) fn check_type_list(f: &Ufunc<'_>, errors: &Errors) {
    let generics = &f.item.sig.generics;
    let type_params = generics.type_params().count();
    match &f.attr.types {
        None if type_params > 0 => errors.spanned(
            generics,
            format!(
                "a generic ufunc needs the element types to instantiate: \
                 add `types = [f32, f64]` (or the types you need) to {}",
                f.attr.kind.name()
            ),
        ),
        Some((span, _)) if type_params != 1 => errors.at(
            *span,
            "`types = [...]` needs a function with exactly one type parameter, \
             as in `fn f<T>(x: T) -> T`",
        ),
        Some((span, list)) => {
            if list.is_empty() {
                errors.at(*span, "`types` must list at least one type");
            }
            for ty in list {
                if matches!(elem_kind(ty, None), None | Some(ElemKind::Generic)) {
                    check_element_type(ty, None, "type in `types`", errors);
                }
            }
        }
        None => {}
    }
}

/// A helper is written for concrete types: `#[kernel_fn] fn h<T>(a: T) -> T` -> "a
/// `#[kernel_fn]` helper cannot be generic ...".
fn check_not_generic(f: &Ufunc<'_>, errors: &Errors) {
    if !f.item.sig.generics.params.is_empty() {
        errors.spanned(
            &f.item.sig.generics,
            "a #[kernel_fn] helper cannot be generic; write it for concrete element types",
        );
    }
}

/// The body must be safe, synchronous code: `unsafe { .. }` or `async` in a body is an error.
fn check_body(f: &Ufunc<'_>, errors: &Errors) {
    struct Forbidden<'e> {
        errors: &'e Errors,
    }
    impl<'ast> Visit<'ast> for Forbidden<'_> {
        fn visit_expr_unsafe(&mut self, e: &'ast syn::ExprUnsafe) {
            self.errors.spanned(
                e.unsafe_token,
                "`unsafe` blocks are not supported in a ufunc body: it runs for every \
                 element, in any order and on any thread",
            );
        }
        fn visit_expr_async(&mut self, e: &'ast syn::ExprAsync) {
            self.errors.spanned(
                e.async_token,
                "`async` blocks are not supported in a ufunc body",
            );
        }
        fn visit_expr_await(&mut self, e: &'ast syn::ExprAwait) {
            self.errors
                .spanned(e.await_token, "`.await` is not supported in a ufunc body");
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {
            // Nested items are ordinary Rust, not part of the per-element body.
        }
    }
    Forbidden { errors }.visit_block(&f.item.block);
}
