//! Validation: one function per rule, every error collected with its span. Code generation
//! never fails: anything that can fail is judged here.

use crate::attr::{VectorizeAttr, KNOWN_TARGETS};
use crate::errors::Errors;
use crate::model::{Function, Vectorize};
use crate::types::{elem_kind, ElemKind, ELEMENT_TYPES};
use syn::visit::Visit;
use syn::{FnArg, Pat, ReturnType, Type};

const MAX_INPUTS: usize = 12;
const MAX_OUTPUTS: usize = 4;
/// Names the generated functions use for their own parameters.
pub(crate) const RESERVED_PARAMS: &[&str] = &["target", "out", "out0", "out1", "out2", "out3"];

pub(crate) fn check_vectorize(v: &Vectorize<'_>) -> syn::Result<()> {
    let mut errors = Errors::default();
    check_targets(&v.attr, &mut errors);
    check_fn_kind(&v.func, &mut errors);
    check_params(&v.func, &mut errors);
    check_reserved_names(&v.func, &mut errors);
    check_outputs(&v.func, &mut errors);
    check_generics(&v.func, v.attr.types.as_ref(), &mut errors);
    check_body(&v.func, &mut errors);
    errors.finish()
}

/// `#[guvectorize]`: the attribute, the function's kind, its generics and parameter names, and
/// the layout against the parameters. `fn f<T>(a: ArrayView1<T>) -> T` -> "... cannot be generic
/// over types ...", `fn f<const N: usize>(..)` -> "... cannot have const parameters ...",
/// `fn f(a: ArrayView1<f32>, out: &mut f32)` -> "the parameter name `out` is reserved ...".
pub(crate) fn check_guvectorize(f: &crate::gufunc::GuFunction<'_>, errors: &mut Errors) {
    check_targets(&f.attr.rest, errors);
    check_signature_kind(&f.item.sig, errors);
    if let Some((span, _)) = &f.attr.rest.fastmath {
        errors.push(syn::Error::new(
            *span,
            "`fastmath` applies to #[vectorize] lane code; a #[guvectorize] core is plain Rust",
        ));
    }
    if let Some((span, _)) = &f.attr.rest.types {
        errors.push(syn::Error::new(
            *span,
            "`types = [...]` is not supported by #[guvectorize] yet; write one function per type",
        ));
    }
    if let Some(tp) = f.item.sig.generics.type_params().next() {
        errors.spanned(
            tp,
            "a #[guvectorize] function cannot be generic over types; \
             write it for concrete element types",
        );
    }
    if let Some(cp) = f.item.sig.generics.const_params().next() {
        errors.spanned(
            cp,
            "a #[guvectorize] function cannot have const parameters; \
             write fixed sizes in the layout, as in `(3),(3)->(3)`",
        );
    }
    for p in &f.params {
        let name = p.ident.to_string();
        if RESERVED_PARAMS.contains(&name.as_str()) || name.starts_with("__ufunc") {
            errors.spanned(
                p.ident,
                format!("the parameter name `{name}` is reserved by #[guvectorize]; rename it"),
            );
        }
    }
    crate::gufunc::check_against_layout(f, errors);
}

pub(crate) fn check_kernel_fn(f: &Function<'_>) -> syn::Result<()> {
    let mut errors = Errors::default();
    check_fn_kind(f, &mut errors);
    check_params(f, &mut errors);
    check_outputs(f, &mut errors);
    if !f.item.sig.generics.params.is_empty() {
        errors.spanned(
            &f.item.sig.generics,
            "a #[kernel_fn] helper cannot be generic; write it for concrete element types",
        );
    }
    check_body(f, &mut errors);
    errors.finish()
}

/// `target` and `targets` name known targets, once each; only one of the two keys is used.
/// `#[vectorize(target = "gpu")]` -> "unknown target `gpu`; expected one of ...".
pub(crate) fn check_targets(attr: &VectorizeAttr, errors: &mut Errors) {
    if let Some(second) = attr.target_keys.get(1) {
        errors.push(syn::Error::new(
            *second,
            "give either `target = \"...\"` or `targets = [...]`, once",
        ));
    }
    if attr.target_keys.len() == 1 && attr.targets.is_empty() {
        errors.push(syn::Error::new(
            attr.target_keys[0],
            "`targets` must name at least one target",
        ));
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
fn check_fn_kind(f: &Function<'_>, errors: &mut Errors) {
    check_signature_kind(&f.item.sig, errors);
}

pub(crate) fn check_signature_kind(sig: &syn::Signature, errors: &mut Errors) {
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

/// Parameters are `name: T` with T a scalar element type: `fn f(x: &f32)` -> "reference
/// parameters are not supported ...", `fn f((a, b): (f32, f32))` -> "... must be plain names".
fn check_params(f: &Function<'_>, errors: &mut Errors) {
    let sig = &f.item.sig;
    if sig.inputs.is_empty() {
        errors.spanned(&sig.ident, "a ufunc needs at least one parameter");
    }
    if sig.inputs.len() > MAX_INPUTS {
        errors.spanned(
            &sig.inputs,
            format!("a ufunc takes at most {MAX_INPUTS} parameters"),
        );
    }
    for arg in &sig.inputs {
        let pt = match arg {
            FnArg::Receiver(r) => {
                errors.spanned(r, "a ufunc cannot take `self`; write a free function");
                continue;
            }
            FnArg::Typed(pt) => pt,
        };
        if !matches!(&*pt.pat, Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none()) {
            errors.spanned(
                &pt.pat,
                "ufunc parameters must be plain names, as in `x: f32`",
            );
            // `(a, b): (f32, f32)` is one mistake: its type is not judged separately.
            continue;
        }
        check_element_type(&pt.ty, f.generic, "parameter", errors);
    }
}

fn check_element_type(ty: &Type, generic: Option<&syn::Ident>, what: &str, errors: &mut Errors) {
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

/// Parameter names must not collide with the names the generated functions use.
fn check_reserved_names(f: &Function<'_>, errors: &mut Errors) {
    for p in &f.params {
        let name = p.ident.to_string();
        if RESERVED_PARAMS.contains(&name.as_str()) || name.starts_with("__ufunc") {
            errors.spanned(
                p.ident,
                format!("the parameter name `{name}` is reserved by #[vectorize]; rename it"),
            );
        }
    }
}

/// A ufunc returns one element or a tuple of 2 to 4: `fn f(x: f32)` -> "... must return ...".
fn check_outputs(f: &Function<'_>, errors: &mut Errors) {
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
            for out in &f.outputs {
                check_element_type(out, f.generic, "result", errors);
            }
        }
    }
}

/// A generic function has exactly one type parameter and a `types = [...]` list of element
/// types; a non-generic one has no list.
fn check_generics(
    f: &Function<'_>,
    types: Option<&(proc_macro2::Span, Vec<Type>)>,
    errors: &mut Errors,
) {
    let generics = &f.item.sig.generics;
    let type_params = generics.type_params().count();
    let other_params = generics.params.len() - type_params;
    if other_params > 0 {
        errors.spanned(
            generics,
            "a ufunc cannot have lifetime or const parameters; \
             it can only be generic over one element type parameter",
        );
    }
    match types {
        None if type_params > 0 => errors.spanned(
            generics,
            "a generic ufunc needs the element types to instantiate: \
             add `types = [f32, f64]` (or the types you need) to #[vectorize]",
        ),
        Some((span, _)) if type_params != 1 => errors.push(syn::Error::new(
            *span,
            "`types = [...]` needs a function with exactly one type parameter, \
             as in `fn f<T>(x: T) -> T`",
        )),
        Some((span, list)) => {
            if list.is_empty() {
                errors.push(syn::Error::new(
                    *span,
                    "`types` must list at least one type",
                ));
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

/// The body must be safe, synchronous code: `unsafe { .. }` or `async` in a body is an error.
fn check_body(f: &Function<'_>, errors: &mut Errors) {
    struct Forbidden<'e> {
        errors: &'e mut Errors,
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
