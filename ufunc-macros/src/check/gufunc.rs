//! The rules of `#[guvectorize]`: parameter types that take a part in the layout, returned
//! values, the arguments it does not take, and the layout matched against the parameters
//! (counts, ranks, scalar versus array).

use crate::attr::{Attr, GuLayout};
use crate::errors::Errors;
use crate::layout::Dim;
use crate::model::{classify, Param, Ufunc};
use crate::types::{elem_kind, ELEMENT_TYPES};
use syn::{GenericArgument, Ident, PathArguments, Type};

/// A parameter is a view, a `&mut` element or an element: `a: &[f32]` -> "`&[f32]` is not a
/// gufunc parameter type; take a core operand of one dimension as `ArrayView1<f32>`".
pub(super) fn check_param_type(ty: &Type, generic: Option<&Ident>, errors: &Errors) {
    if classify(ty, generic).is_some() {
        return;
    }
    let message = match slice_hint(ty, generic) {
        Some(view) => format!(
            "`{}` is not a gufunc parameter type; take a core operand of one \
             dimension as `{view}`",
            shown(ty)
        ),
        None => format!(
            "`{}` is not a gufunc parameter type; expected `ArrayView1<T>`..\
             `ArrayView6<T>` or `ArrayViewD<T>` for an input with core dimensions, \
             `ArrayViewMut1<T>`..`ArrayViewMutD<T>` for such an output, `T` for a \
             `()` input or `&mut T` for a `()` output, with T one of {ELEMENT_TYPES}",
            shown(ty)
        ),
    };
    errors.spanned(ty, message);
}

/// Returned values are `()` outputs: `-> Vec<f32>` -> "`Vec<f32>` is not an element type: a
/// gufunc returns only `()` outputs ...". A type parameter counts as an element type here:
/// `check_generics` reports it once, instead of every parameter and result that uses it.
pub(super) fn check_returns(f: &Ufunc<'_>, errors: &Errors) {
    for r in &f.returns {
        if elem_kind(r, f.generic).is_none() {
            errors.spanned(
                r,
                format!(
                    "`{}` is not an element type: a gufunc returns only `()` outputs, as values of \
                     one of {ELEMENT_TYPES}; write an output with core dimensions into an \
                     `ArrayViewMut` parameter",
                    shown(r)
                ),
            );
        }
    }
}

/// The argument only `#[vectorize]` takes: `identity = ..` -> "... a #[guvectorize] function
/// has no `reduce`". (`fastmath = true` is accepted: it sets the cuda kernel's fast-math flags;
/// a core on the CPU targets is plain Rust, which it leaves alone.)
pub(super) fn check_options(attr: &Attr, errors: &Errors) {
    if let Some((span, _)) = &attr.identity {
        errors.at(
            *span,
            "`identity` is the empty reduction of a #[vectorize] function `f(T, T) -> T`; a \
             #[guvectorize] function has no `reduce`",
        );
    }
    if let Some((span, _)) = &attr.associative {
        errors.at(
            *span,
            "`associative` lets `reduce` and `accumulate` regroup a #[vectorize] function \
             `f(T, T) -> T`; a #[guvectorize] function has neither",
        );
    }
}

/// One type parameter with `types = [...]`, as on `#[vectorize]` (see `check_type_list`);
/// `fn f<const N: usize>(..)` -> "... cannot have const parameters ...". Lifetimes are fine.
pub(super) fn check_generics(f: &Ufunc<'_>, errors: &Errors) {
    super::check_type_list(f, errors);
    if let Some(cp) = f.item.sig.generics.const_params().next() {
        errors.spanned(
            cp,
            "a #[guvectorize] function cannot have const parameters; \
             write fixed sizes in the layout, as in `(3),(3)->(3)`",
        );
    }
}

/// The layout's operand counts, ranks and scalars match the parameters:
/// `#[guvectorize("(n)->()")] fn f(a: ArrayView2<f32>) -> f32` -> "`a` is a view of 2 dimensions
/// but its layout operand (n) has 1". Operands are paired by position only where the counts
/// agree, and not at all when a parameter was not understood, so that one mistake gives one error.
pub(super) fn check_against_layout(f: &Ufunc<'_>, layout: &GuLayout, errors: &Errors) {
    if !layout.valid || !f.all_params_known {
        return;
    }
    if layout.layout.in_place {
        check_in_place(f, layout, errors);
        return;
    }
    let text = &layout.text;
    let layout = &layout.layout;
    let sig = &f.item.sig;
    let inputs: Vec<&Param> = f.inputs().collect();
    let outs: Vec<&Param> = f.output_params().collect();
    let n_out = outs.len() + f.returns.len();
    let inputs_match = inputs.len() == layout.inputs.len();
    if !inputs_match {
        let message = format!(
            "the layout `{}` has {} input(s) but the function takes {} input parameter(s) \
             (`ArrayView` and element-type parameters)",
            text,
            layout.inputs.len(),
            inputs.len()
        );
        if sig.inputs.is_empty() {
            errors.at(sig.paren_token.span.join(), message);
        } else {
            errors.spanned(&sig.inputs, message);
        }
    }
    let outputs_match = n_out == layout.outputs.len();
    if !outputs_match {
        errors.spanned(
            sig,
            format!(
                "the layout `{}` has {} output(s) but the function has {} (`ArrayViewMut` and \
                 `&mut` parameters, then returned values)",
                text,
                layout.outputs.len(),
                n_out
            ),
        );
    }
    let mut pairs = Vec::new();
    if inputs_match {
        pairs.extend(inputs.iter().copied().zip(&layout.inputs));
    }
    if outputs_match {
        pairs.extend(outs.iter().copied().zip(&layout.outputs));
    }
    check_ranks(pairs, errors);
    if !outputs_match {
        return;
    }
    for (r, dims) in f.returns.iter().zip(layout.outputs.iter().skip(outs.len())) {
        // A return type that is not an element type has had its own error.
        if !dims.is_empty() && elem_kind(r, f.generic).is_some() {
            errors.spanned(
                r,
                format!(
                    "a returned value is a `()` output, but its layout operand is {}; \
                     take an `{}` parameter for it instead",
                    core_text(dims),
                    view_type(false, dims.len(), r)
                ),
            );
        }
    }
}

/// An in-place layout (no `->`, Numba's `"(n),()"`) pairs every parameter with its operand in
/// order, has no returned values, and needs a parameter the core writes:
/// `fn f(a: ArrayView1<f64>, b: f64)` -> "... needs a parameter the core writes ...".
fn check_in_place(f: &Ufunc<'_>, layout: &GuLayout, errors: &Errors) {
    let sig = &f.item.sig;
    let no_outputs = "an in-place layout (without `->`) has no outputs";
    for r in &f.returns {
        errors.spanned(
            r,
            format!(
                "{no_outputs}: name the returned values' operands after `->`, or write results \
                 through `ArrayViewMut` or `&mut` parameters"
            ),
        );
    }
    if f.returns.is_empty() && f.output_params().next().is_none() {
        errors.spanned(
            sig,
            format!(
                "{no_outputs}, so it needs a parameter the core writes: an `ArrayViewMut` view \
                 or a `&mut T` element; or write the outputs after `->`"
            ),
        );
    }
    let operands = &layout.layout.inputs;
    if operands.len() != f.params.len() {
        let message = format!(
            "the in-place layout `{}` has {} operand(s) but the function takes {} parameter(s)",
            layout.text,
            operands.len(),
            f.params.len()
        );
        if sig.inputs.is_empty() {
            errors.at(sig.paren_token.span.join(), message);
        } else {
            errors.spanned(&sig.inputs, message);
        }
        return;
    }
    check_ranks(f.params.iter().zip(operands).collect(), errors);
}

/// Each parameter's rank (or scalar kind) matches its layout operand.
fn check_ranks(pairs: Vec<(&Param<'_>, &Vec<Dim>)>, errors: &Errors) {
    for (p, dims) in pairs {
        let core = core_text(dims);
        let input = p.role.is_input();
        let instead = if dims.is_empty() {
            format!("{}{}", if input { "" } else { "&mut " }, shown(p.elem))
        } else {
            view_type(input, dims.len(), p.elem)
        };
        match p.role.rank() {
            Some(0) if !dims.is_empty() && p.role.is_scalar() => errors.spanned(
                p.ty,
                format!(
                    "`{}` is a scalar but its layout operand {core} has {} core dimension(s); \
                     declare it as `{instead}`",
                    p.ident,
                    dims.len()
                ),
            ),
            Some(r) if r != dims.len() && dims.is_empty() => errors.spanned(
                p.ty,
                format!(
                    "`{}` is a view of {r} dimension(s) but its layout operand () is a scalar; \
                     declare it as `{instead}`",
                    p.ident
                ),
            ),
            Some(r) if r != dims.len() => errors.spanned(
                p.ty,
                format!(
                    "`{}` is a view of {r} dimension(s) but its layout operand {core} has {}; \
                     declare it as `{instead}`",
                    p.ident,
                    dims.len()
                ),
            ),
            _ => {}
        }
    }
}

/// `ArrayView2<f32>`, `ArrayViewMut1<f64>`, `ArrayViewD<i32>` beyond 6 dimensions.
fn view_type(input: bool, rank: usize, elem: &Type) -> String {
    let rank = if rank <= 6 {
        rank.to_string()
    } else {
        "D".into()
    };
    format!(
        "ArrayView{}{rank}<{}>",
        if input { "" } else { "Mut" },
        shown(elem)
    )
}

fn core_text(dims: &[Dim]) -> String {
    let parts: Vec<String> = dims
        .iter()
        .map(|d| match d {
            Dim::Named { name, optional } => format!("{name}{}", if *optional { "?" } else { "" }),
            Dim::Fixed(n) => n.to_string(),
        })
        .collect();
    format!("({})", parts.join(","))
}

/// `ty` as the user would write it, without the extra spaces of token printing: `Vec<f32>`,
/// `&mut [f32]`, `&'a f32`, `impl Fn(f32)`.
fn shown(ty: &Type) -> String {
    let printed = quote::quote!(#ty).to_string();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::new();
    for piece in printed.split(' ') {
        let keyword = ["mut", "dyn", "impl", "const"]
            .iter()
            .any(|k| out.ends_with(k) && !out[..out.len() - k.len()].ends_with(word));
        let between_words = out.ends_with(word) && piece.starts_with(word);
        let arrow = piece == "->" || out.ends_with("->");
        if keyword || between_words || arrow {
            out.push(' ');
        }
        out.push_str(piece);
    }
    out
}

/// The view to write instead of a slice or a `Vec` of elements: `&[f32]` or `Vec<f32>` ->
/// `ArrayView1<f32>`, `&mut [f32]` or `&mut Vec<f32>` -> `ArrayViewMut1<f32>`.
fn slice_hint(ty: &Type, generic: Option<&Ident>) -> Option<String> {
    let (mutable, inner) = match ty {
        Type::Reference(r) => (r.mutability.is_some(), &*r.elem),
        ty => (false, ty),
    };
    let elem = match inner {
        Type::Slice(s) => &*s.elem,
        Type::Path(tp) if tp.qself.is_none() => {
            let seg = tp.path.segments.last()?;
            let PathArguments::AngleBracketed(args) = &seg.arguments else {
                return None;
            };
            match args.args.first()? {
                GenericArgument::Type(t) if seg.ident == "Vec" && args.args.len() == 1 => t,
                _ => return None,
            }
        }
        _ => return None,
    };
    elem_kind(elem, generic)?;
    Some(view_type(!mutable, 1, elem))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(text: &str) -> Type {
        syn::parse_str(text).unwrap()
    }

    #[test]
    fn types_are_shown_as_written() {
        for text in [
            "Vec<f32>",
            "&[f32]",
            "&mut [f32]",
            "&'a f32",
            "*const f32",
            "impl Fn(f32) -> f32",
            "ArrayView<'a, f32, Ix2>",
        ] {
            assert_eq!(shown(&ty(text)), text.replace(", ", ","));
        }
    }

    #[test]
    fn slices_and_vecs_suggest_a_view() {
        let hint = |text: &str| slice_hint(&ty(text), None);
        assert_eq!(hint("&[f32]").as_deref(), Some("ArrayView1<f32>"));
        assert_eq!(hint("Vec<i64>").as_deref(), Some("ArrayView1<i64>"));
        assert_eq!(hint("&mut [f64]").as_deref(), Some("ArrayViewMut1<f64>"));
        assert_eq!(hint("&mut Vec<u8>").as_deref(), Some("ArrayViewMut1<u8>"));
        assert_eq!(hint("&[String]"), None);
        assert_eq!(hint("&f32"), None);
    }
}
