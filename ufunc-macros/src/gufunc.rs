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
        if input.peek(syn::Token![,]) {
            input.parse::<syn::Token![,]>()?;
        }
        Ok((lit, input.parse()?))
    };
    let (layout_lit, rest) = parser.parse2(tokens)?;
    Ok(GuAttr {
        layout_lit,
        rest: parse_vectorize_attr(rest)?,
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
    let mut params = Vec::new();
    for arg in &item.sig.inputs {
        let pt = match arg {
            FnArg::Receiver(r) => {
                errors.spanned(r, "a gufunc cannot take `self`; write a free function");
                continue;
            }
            FnArg::Typed(pt) => pt,
        };
        let Pat::Ident(pi) = &*pt.pat else {
            errors.spanned(
                &pt.pat,
                "gufunc parameters must be plain names, as in `a: ArrayView2<f32>`",
            );
            continue;
        };
        match classify(&pt.ty) {
            Some((role, elem)) => params.push(GuParam {
                ident: &pi.ident,
                ty: &pt.ty,
                elem,
                role,
                mutable: pi.mutability.is_some(),
            }),
            None => errors.spanned(
                &pt.ty,
                format!(
                    "unsupported gufunc parameter type; expected `ArrayView1<T>`..`ArrayView6<T>`, \
                     `ArrayViewD<T>` for inputs, `ArrayViewMut1<T>`..`ArrayViewMutD<T>` for outputs, \
                     `T` for a `()` input or `&mut T` for a `()` output, with T one of {ELEMENT_TYPES}"
                ),
            ),
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
        if elem_kind(r, None).is_none() {
            errors.spanned(
                r,
                format!("a gufunc returns `()` outputs as values of an element type: one of {ELEMENT_TYPES}"),
            );
        }
    }
    GuFunction {
        item,
        attr,
        layout,
        params,
        returns,
    }
}

/// Recognises the parameter types of a core function.
fn classify(ty: &Type) -> Option<(Role, &Type)> {
    if let Type::Reference(r) = ty {
        return match (&r.mutability, elem_kind(&r.elem, None)) {
            (Some(_), Some(_)) => Some((Role::OutScalar, &*r.elem)),
            _ => None,
        };
    }
    if elem_kind(ty, None).is_some() {
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
    elem_kind(elem, None)?;
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
/// but its layout operand (n) has 1".
pub(crate) fn check_against_layout(f: &GuFunction<'_>, errors: &mut Errors) {
    let Some(layout) = &f.layout else { return };
    let inputs: Vec<&GuParam> = f.inputs().collect();
    let outs: Vec<&GuParam> = f.output_params().collect();
    let n_out = outs.len() + f.returns.len();
    let lit = &f.attr.layout_lit;
    if inputs.len() != layout.inputs.len() {
        errors.spanned(
            &f.item.sig.inputs,
            format!(
                "the layout `{}` has {} input(s) but the function takes {} input parameter(s)",
                lit.value(),
                layout.inputs.len(),
                inputs.len()
            ),
        );
    }
    if n_out != layout.outputs.len() {
        errors.spanned(
            &f.item.sig,
            format!(
                "the layout `{}` has {} output(s) but the function has {} (`ArrayViewMut` and \
                 `&mut` parameters, then returned values)",
                lit.value(),
                layout.outputs.len(),
                n_out
            ),
        );
    }
    let pairs = inputs
        .iter()
        .zip(&layout.inputs)
        .chain(outs.iter().zip(&layout.outputs));
    for (p, dims) in pairs {
        let core = core_text(dims);
        match p.role.rank() {
            Some(0) if !dims.is_empty() && p.role.is_scalar() => errors.spanned(
                p.ty,
                format!(
                    "`{}` is a scalar but its layout operand {core} has core dimensions; \
                     declare it as an `ArrayView{}`",
                    p.ident,
                    if p.role.is_input() { "" } else { "Mut" }
                ),
            ),
            Some(r) if r != dims.len() => errors.spanned(
                p.ty,
                format!(
                    "`{}` is a view of {r} dimension(s) but its layout operand {core} has {}",
                    p.ident,
                    dims.len()
                ),
            ),
            _ => {}
        }
    }
    for (r, dims) in f.returns.iter().zip(layout.outputs.iter().skip(outs.len())) {
        if !dims.is_empty() {
            errors.spanned(
                r,
                format!(
                    "a returned value is a `()` output, but its layout operand is {}; \
                     take an `ArrayViewMut` parameter for it instead",
                    core_text(dims)
                ),
            );
        }
    }
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
