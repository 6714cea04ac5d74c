//! The one model of an annotated function, shared by `#[vectorize]`, `#[guvectorize]` and
//! `#[kernel_fn]`: the attribute, and what the signature says (parameters with the part each
//! takes, returned values, the type parameter), borrowing the syn nodes so that every later
//! error can point at the user's tokens. Reading never fails and records nothing: what was not
//! understood is left out, and [`crate::check`] says why.

use crate::attr::{Attr, Kind};
use crate::layout::{Dim, Layout};
use crate::types::elem_kind;
use proc_macro2::{TokenStream, TokenTree};
use quote::{format_ident, quote, ToTokens};
use syn::{FnArg, GenericArgument, Ident, ItemFn, Pat, PathArguments, ReturnType, Type};

/// How a parameter takes part in a call.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Role {
    /// `x: T`: one element in (every `#[vectorize]` parameter; a `()` gufunc input).
    InScalar,
    /// `ArrayView..<T>`: a gufunc input with core dimensions (`rank` None for `ArrayViewD`).
    InView { rank: Option<usize> },
    /// `ArrayViewMut..<T>`: a gufunc output with core dimensions.
    OutView { rank: Option<usize> },
    /// `&mut T`: a `()` gufunc output.
    OutScalar,
}

impl Role {
    pub(crate) fn is_input(self) -> bool {
        matches!(self, Role::InView { .. } | Role::InScalar)
    }

    /// The number of core dimensions (0 for scalars), if fixed.
    pub(crate) fn rank(self) -> Option<usize> {
        match self {
            Role::InView { rank } | Role::OutView { rank } => rank,
            Role::InScalar | Role::OutScalar => Some(0),
        }
    }

    pub(crate) fn is_scalar(self) -> bool {
        matches!(self, Role::InScalar | Role::OutScalar)
    }
}

pub(crate) struct Param<'a> {
    pub ident: &'a Ident,
    /// The type as written.
    pub ty: &'a Type,
    /// The element type: `ty` itself for a scalar, the `T` of `ArrayView2<T>` or `&mut T`.
    pub elem: &'a Type,
    pub role: Role,
    pub mutable: bool,
}

pub(crate) struct Ufunc<'a> {
    pub item: &'a ItemFn,
    pub attr: Attr,
    /// The parameters understood, in order.
    pub params: Vec<Param<'a>>,
    /// Whether every parameter was understood; if not, the layout cannot be matched against
    /// the parameters (that would only add follow-on errors).
    pub all_params_known: bool,
    /// The returned values: none, one, or the elements of a returned tuple.
    pub returns: Vec<&'a Type>,
    /// The function's first type parameter (one is allowed, with `types = [...]`).
    pub generic: Option<&'a Ident>,
}

/// One instantiation of a `#[vectorize]` body: the function as written, or with its type
/// parameter replaced by one of the `types`.
pub(crate) struct Instance<'a> {
    /// The type that implements `Body` for it: the function's name, or `__ufunc_foo_f32`.
    pub body_ty: Ident,
    /// The type parameter and the type it stands for.
    pub generic: Option<(&'a Ident, &'a Type)>,
}

impl<'a> Ufunc<'a> {
    /// Reads what the attribute and the signature say, leaving judgement to `check`.
    pub(crate) fn from_syn(item: &'a ItemFn, attr: Attr) -> Self {
        let generic = item.sig.generics.type_params().next().map(|tp| &tp.ident);
        let gufunc = matches!(attr.kind, Kind::Guvectorize(_));
        let mut params = Vec::new();
        let mut all_params_known = true;
        for arg in &item.sig.inputs {
            let param = match arg {
                FnArg::Typed(pt) => match &*pt.pat {
                    Pat::Ident(pi) if gufunc || (pi.by_ref.is_none() && pi.subpat.is_none()) => {
                        let role = if gufunc {
                            classify(&pt.ty, generic)
                        } else {
                            Some((Role::InScalar, &*pt.ty))
                        };
                        role.map(|(role, elem)| Param {
                            ident: &pi.ident,
                            ty: &pt.ty,
                            elem,
                            role,
                            mutable: pi.mutability.is_some(),
                        })
                    }
                    _ => None,
                },
                FnArg::Receiver(_) => None,
            };
            match param {
                Some(p) => params.push(p),
                None => all_params_known = false,
            }
        }
        let returns = match &item.sig.output {
            ReturnType::Default => vec![],
            ReturnType::Type(_, ty) => match &**ty {
                Type::Tuple(t) => t.elems.iter().collect(),
                ty => vec![ty],
            },
        };
        Ufunc {
            item,
            attr,
            params,
            all_params_known,
            returns,
            generic,
        }
    }

    pub(crate) fn name(&self) -> &'a Ident {
        &self.item.sig.ident
    }

    pub(crate) fn inputs(&self) -> impl Iterator<Item = &Param<'a>> {
        self.params.iter().filter(|p| p.role.is_input())
    }

    pub(crate) fn output_params(&self) -> impl Iterator<Item = &Param<'a>> {
        self.params.iter().filter(|p| !p.role.is_input())
    }

    /// Output element types: output parameters in order, then returned values.
    pub(crate) fn output_elems(&self) -> Vec<&'a Type> {
        self.output_params()
            .map(|p| p.elem)
            .chain(self.returns.iter().copied())
            .collect()
    }

    /// The inputs' element types as a tuple type: `(f32, f64,)`.
    pub(crate) fn input_tuple(&self) -> TokenStream {
        let elems = self.inputs().map(|p| p.elem);
        quote!((#(#elems,)*))
    }

    /// The output element type, or a tuple of them for several outputs: `f32`, `(f32, i64,)`.
    pub(crate) fn output_type(&self) -> TokenStream {
        match self.output_elems().as_slice() {
            [t] => quote!(#t),
            ts => quote!((#(#ts,)*)),
        }
    }

    /// The core dimensions of the inputs, and of the output parameters then the returned
    /// values, as the runtime's signature lists them: an in-place layout's operands split by
    /// whether the core writes them (the layout was checked against the parameters).
    pub(crate) fn operand_dims<'l>(&self, layout: &'l Layout) -> (Vec<&'l [Dim]>, Vec<&'l [Dim]>) {
        if !layout.in_place {
            let dims = |l: &'l [Vec<Dim>]| l.iter().map(Vec::as_slice).collect();
            return (dims(&layout.inputs), dims(&layout.outputs));
        }
        let (ins, outs): (Vec<_>, Vec<_>) = self
            .params
            .iter()
            .zip(&layout.inputs)
            .partition(|(p, _)| p.role.is_input());
        let dims =
            |l: Vec<(&Param, &'l Vec<Dim>)>| l.into_iter().map(|(_, d)| d.as_slice()).collect();
        (dims(ins), dims(outs))
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

    /// The element type `T` of a function `f(T, T) -> T`, which gets the ufunc methods
    /// (`reduce`, `accumulate`, `outer`, `at`), or why it does not.
    pub(crate) fn method_elem(&self) -> Result<&'a Type, String> {
        const NEEDS: &str = "a #[vectorize] function of two inputs and one output of one type";
        let name = self.name();
        let ins: Vec<&Param<'a>> = self.inputs().collect();
        let outs = self.output_elems();
        if ins.len() != 2 || outs.len() != 1 {
            return Err(format!(
                "{NEEDS}, and `{name}` takes {} input{} and gives {} output{}",
                ins.len(),
                if ins.len() == 1 { "" } else { "s" },
                outs.len(),
                if outs.len() == 1 { "" } else { "s" },
            ));
        }
        let ty = |t: &Type| t.to_token_stream().to_string();
        let (a, b, r) = (ty(ins[0].elem), ty(ins[1].elem), ty(outs[0]));
        if a != b || a != r {
            return Err(format!("{NEEDS}, and `{name}` is `({a}, {b}) -> {r}`"));
        }
        Ok(ins[0].elem)
    }

    /// The instantiations of the body: one per type of `types = [...]` for a generic function,
    /// else the function as written.
    pub(crate) fn instances(&self) -> Vec<Instance<'_>> {
        let name = self.name();
        match (&self.attr.types, self.generic) {
            (Some((_, types)), Some(generic)) => types
                .iter()
                .map(|ty| Instance {
                    body_ty: format_ident!("__ufunc_{}_{}", name, type_slug(ty)),
                    generic: Some((generic, ty)),
                })
                .collect(),
            _ => vec![Instance {
                body_ty: name.clone(),
                generic: None,
            }],
        }
    }
}

impl Instance<'_> {
    /// `tokens` with the type parameter replaced by the type it stands for.
    pub(crate) fn apply(&self, tokens: TokenStream) -> TokenStream {
        match self.generic {
            Some((generic, ty)) => replace_ident(tokens, generic, &ty.to_token_stream()),
            None => tokens,
        }
    }

    /// `node` with the type parameter replaced, parsed back (the CUDA translation reads syn).
    pub(crate) fn apply_to<T: syn::parse::Parse + ToTokens>(&self, node: &T) -> syn::Result<T> {
        syn::parse2(self.apply(node.to_token_stream()))
    }

    /// `type T = f32;`, put first in bodies so that `T` in them means the instantiated type.
    pub(crate) fn alias(&self) -> TokenStream {
        match self.generic {
            Some((generic, ty)) => quote!(#[allow(dead_code)] type #generic = #ty;),
            None => quote!(),
        }
    }
}

/// Replaces the identifier `from` by `to` everywhere in `tokens` (the type parameter in types).
pub(crate) fn replace_ident(tokens: TokenStream, from: &Ident, to: &TokenStream) -> TokenStream {
    tokens
        .into_iter()
        .flat_map(|tt| match tt {
            TokenTree::Ident(i) if i == *from => to.clone(),
            TokenTree::Group(g) => {
                let mut ng =
                    proc_macro2::Group::new(g.delimiter(), replace_ident(g.stream(), from, to));
                ng.set_span(g.span());
                TokenTree::Group(ng).into_token_stream()
            }
            tt => tt.into_token_stream(),
        })
        .collect()
}

/// A type-name fragment for an element type: `f32`, `complex_f64`.
fn type_slug(ty: &Type) -> String {
    let s: String = ty
        .to_token_stream()
        .to_string()
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    s.split('_')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

/// Recognises the parameter types of a gufunc core function, with their element type.
/// `generic` is the function's type parameter, taken as an element type.
pub(crate) fn classify<'t>(ty: &'t Type, generic: Option<&Ident>) -> Option<(Role, &'t Type)> {
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
