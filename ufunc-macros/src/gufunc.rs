//! The model of a `#[guvectorize]` function: its layout and how each parameter maps onto it,
//! with the checks that tie the two together (counts, ranks, scalar versus array).

use crate::attr::{parse_vectorize_attr, VectorizeAttr};
use crate::errors::Errors;
use crate::layout::{parse_layout, Dim, Layout};
use crate::types::{elem_kind, ELEMENT_TYPES};
use proc_macro2::TokenStream;
use syn::parse::{ParseStream, Parser};
use syn::{FnArg, GenericArgument, Ident, ItemFn, LitStr, Pat, PathArguments, ReturnType, Type};

/// `#[guvectorize("(m,n),(n,p)->(m,p)", target = "...")]`.
pub(crate) struct GuAttr {
    pub layout_lit: LitStr,
    pub rest: VectorizeAttr,
}

pub(crate) fn parse_gu_attr(tokens: TokenStream) -> syn::Result<GuAttr> {
    let parser = |input: ParseStream| -> syn::Result<(LitStr, TokenStream)> {
        let lit = input.parse::<LitStr>().map_err(|e| {
            syn::Error::new(
                e.span(),
                "#[guvectorize] needs the layout first, as in #[guvectorize(\"(m,n),(n,p)->(m,p)\")]",
            )
        })?;
        if !input.is_empty() {
            input.parse::<syn::Token![,]>().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "expected `,` after the layout, then `target = \"...\"` or `targets = [...]`",
                )
            })?;
        }
        Ok((lit, input.parse()?))
    };
    let (layout_lit, rest) = parser.parse2(tokens)?;
    Ok(GuAttr {
        layout_lit,
        rest: parse_vectorize_attr(rest, "#[guvectorize]")?,
    })
}

/// How a parameter takes part in the core function.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Role {
    /// `ArrayView..<T>`: an input with core dimensions (`rank` None for `ArrayViewD`).
    InView { rank: Option<usize> },
    /// `x: T`: a `()` input.
    InScalar,
    /// `ArrayViewMut..<T>`: an output with core dimensions.
    OutView { rank: Option<usize> },
    /// `&mut T`: a `()` output.
    OutScalar,
}

impl Role {
    pub(crate) fn is_input(self) -> bool {
        matches!(self, Role::InView { .. } | Role::InScalar)
    }
    fn rank(self) -> Option<usize> {
        match self {
            Role::InView { rank } | Role::OutView { rank } => rank,
            Role::InScalar | Role::OutScalar => Some(0),
        }
    }
    fn is_scalar(self) -> bool {
        matches!(self, Role::InScalar | Role::OutScalar)
    }
}

pub(crate) struct GuParam<'a> {
    pub ident: &'a Ident,
    pub ty: &'a Type,
    pub elem: &'a Type,
    pub role: Role,
    pub mutable: bool,
}

pub(crate) struct GuFunction<'a> {
    pub item: &'a ItemFn,
    pub attr: GuAttr,
    pub layout: Option<Layout>,
    pub params: Vec<GuParam<'a>>,
    /// Whether every parameter was understood; if not, its role is unknown and the layout
    /// cannot be matched against the parameters (that would only add follow-on errors).
    pub all_params_known: bool,
    pub returns: Vec<&'a Type>,
}

impl<'a> GuFunction<'a> {
    pub(crate) fn name(&self) -> &'a Ident {
        &self.item.sig.ident
    }

    pub(crate) fn inputs(&self) -> impl Iterator<Item = &GuParam<'a>> {
        self.params.iter().filter(|p| p.role.is_input())
    }

    pub(crate) fn output_params(&self) -> impl Iterator<Item = &GuParam<'a>> {
        self.params.iter().filter(|p| !p.role.is_input())
    }

    /// Output element types: output parameters in order, then returned values.
    pub(crate) fn output_elems(&self) -> Vec<&'a Type> {
        self.output_params()
            .map(|p| p.elem)
            .chain(self.returns.iter().copied())
            .collect()
    }

    /// Names of inputs then outputs, for runtime messages.
    pub(crate) fn operand_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.inputs().map(|p| p.ident.to_string()).collect();
        names.extend(self.output_params().map(|p| p.ident.to_string()));
        match self.returns.len() {
            0 => {}
            1 => names.push("return value".into()),
            n => names.extend((0..n).map(|i| format!("return value {i}"))),
        }
        names
    }
}

/// Reads the function and its attribute; every problem goes to `errors`.
pub(crate) fn from_syn<'a>(item: &'a ItemFn, attr: GuAttr, errors: &mut Errors) -> GuFunction<'a> {
    let layout = match parse_layout(&attr.layout_lit.value()) {
        Ok(l) => Some(l),
        Err(e) => {
            errors.spanned(
                &attr.layout_lit,
                format!("invalid layout, at column {}: {}", e.column, e.message),
            );
            None
        }
    };
    // A type parameter counts as an element type here: `check_guvectorize` reports the generics
    // once, instead of every parameter and result that uses them.
    let generic = item.sig.generics.type_params().next().map(|tp| &tp.ident);
    let mut params = Vec::new();
    let mut all_params_known = true;
    for arg in &item.sig.inputs {
        let pt = match arg {
            FnArg::Receiver(r) => {
                errors.spanned(r, "a gufunc cannot take `self`; write a free function");
                all_params_known = false;
                continue;
            }
            FnArg::Typed(pt) => pt,
        };
        let Pat::Ident(pi) = &*pt.pat else {
            errors.spanned(
                &pt.pat,
                "gufunc parameters must be plain names, as in `a: ArrayView2<f32>`",
            );
            all_params_known = false;
            continue;
        };
        match classify(&pt.ty, generic) {
            Some((role, elem)) => {
                params.push(GuParam {
                    ident: &pi.ident,
                    ty: &pt.ty,
                    elem,
                    role,
                    mutable: pi.mutability.is_some(),
                });
            }
            None => {
                all_params_known = false;
                let message = match slice_hint(&pt.ty, generic) {
                    Some(view) => format!(
                        "`{}` is not a gufunc parameter type; take a core operand of one \
                         dimension as `{view}`",
                        shown(&pt.ty)
                    ),
                    None => format!(
                        "`{}` is not a gufunc parameter type; expected `ArrayView1<T>`..\
                         `ArrayView6<T>` or `ArrayViewD<T>` for an input with core dimensions, \
                         `ArrayViewMut1<T>`..`ArrayViewMutD<T>` for such an output, `T` for a \
                         `()` input or `&mut T` for a `()` output, with T one of {ELEMENT_TYPES}",
                        shown(&pt.ty)
                    ),
                };
                errors.spanned(&pt.ty, message);
            }
        }
    }
    let returns = match &item.sig.output {
        ReturnType::Default => vec![],
        ReturnType::Type(_, ty) => match &**ty {
            Type::Tuple(t) => t.elems.iter().collect(),
            ty => vec![ty],
        },
    };
    for r in &returns {
        if elem_kind(r, generic).is_none() {
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
    GuFunction {
        item,
        attr,
        layout,
        params,
        all_params_known,
        returns,
    }
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

/// Recognises the parameter types of a core function.
/// `generic` is the function's type parameter, taken as an element type.
fn classify<'t>(ty: &'t Type, generic: Option<&Ident>) -> Option<(Role, &'t Type)> {
    if let Type::Reference(r) = ty {
        return match (&r.mutability, elem_kind(&r.elem, generic)) {
            (Some(_), Some(_)) => Some((Role::OutScalar, &*r.elem)),
            _ => None,
        };
    }
    if elem_kind(ty, generic).is_some() {
        return Some((Role::InScalar, ty));
    }
    let Type::Path(tp) = ty else { return None };
    let seg = tp.path.segments.last()?;
    let name = seg.ident.to_string();
    let PathArguments::AngleBracketed(args) = &seg.arguments else {
        return None;
    };
    let types: Vec<&Type> = args
        .args
        .iter()
        .filter_map(|a| match a {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .collect();
    let elem = *types.first()?;
    elem_kind(elem, generic)?;
    let (mutable, suffix) = if let Some(s) = name.strip_prefix("ArrayViewMut") {
        (true, s)
    } else if let Some(s) = name.strip_prefix("ArrayView") {
        (false, s)
    } else {
        return None;
    };
    let rank = match suffix {
        "" => {
            // ArrayView<'a, T, D>
            let d = types.get(1)?;
            let Type::Path(dp) = d else { return None };
            match dp.path.segments.last()?.ident.to_string().as_str() {
                "IxDyn" => None,
                s => Some(s.strip_prefix("Ix")?.parse::<usize>().ok()?),
            }
        }
        "D" => None,
        s => Some(s.parse::<usize>().ok()?),
    };
    let role = if mutable {
        Role::OutView { rank }
    } else {
        Role::InView { rank }
    };
    Some((role, elem))
}

/// The layout's operand counts, ranks and scalars match the parameters:
/// `#[guvectorize("(n)->()")] fn f(a: ArrayView2<f32>) -> f32` -> "`a` is a view of 2 dimensions
/// but its layout operand (n) has 1". Operands are paired by position only where the counts
/// agree, and not at all when a parameter was not understood, so that one mistake gives one error.
pub(crate) fn check_against_layout(f: &GuFunction<'_>, errors: &mut Errors) {
    let Some(layout) = &f.layout else { return };
    if !f.all_params_known {
        return;
    }
    let sig = &f.item.sig;
    let generic = sig.generics.type_params().next().map(|tp| &tp.ident);
    let inputs: Vec<&GuParam> = f.inputs().collect();
    let outs: Vec<&GuParam> = f.output_params().collect();
    let n_out = outs.len() + f.returns.len();
    let lit = &f.attr.layout_lit;
    let inputs_match = inputs.len() == layout.inputs.len();
    if !inputs_match {
        let message = format!(
            "the layout `{}` has {} input(s) but the function takes {} input parameter(s) \
             (`ArrayView` and element-type parameters)",
            lit.value(),
            layout.inputs.len(),
            inputs.len()
        );
        if sig.inputs.is_empty() {
            errors.push(syn::Error::new(sig.paren_token.span.join(), message));
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
                lit.value(),
                layout.outputs.len(),
                n_out
            ),
        );
    }
    let mut pairs = Vec::new();
    if inputs_match {
        pairs.extend(inputs.iter().zip(&layout.inputs));
    }
    if outputs_match {
        pairs.extend(outs.iter().zip(&layout.outputs));
    }
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
    if !outputs_match {
        return;
    }
    for (r, dims) in f.returns.iter().zip(layout.outputs.iter().skip(outs.len())) {
        // A return type that is not an element type has had its own error.
        if !dims.is_empty() && elem_kind(r, generic).is_some() {
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

pub(crate) fn core_text(dims: &[Dim]) -> String {
    let parts: Vec<String> = dims
        .iter()
        .map(|d| match d {
            Dim::Named { name, optional } => format!("{name}{}", if *optional { "?" } else { "" }),
            Dim::Fixed(n) => n.to_string(),
        })
        .collect();
    format!("({})", parts.join(","))
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
