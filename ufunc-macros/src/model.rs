//! The validated shape of a `#[vectorize]` / `#[kernel_fn]` function, borrowing the syn nodes
//! so that every later error can point at the user's tokens.

use crate::attr::VectorizeAttr;
use syn::{FnArg, Ident, ItemFn, Pat, ReturnType, Type};

pub(crate) struct Param<'a> {
    pub ident: &'a Ident,
    pub ty: &'a Type,
    pub mutable: bool,
}

pub(crate) struct Function<'a> {
    pub item: &'a ItemFn,
    pub params: Vec<Param<'a>>,
    /// The result types: one, or the elements of a returned tuple.
    pub outputs: Vec<&'a Type>,
    /// The single type parameter of a generic function.
    pub generic: Option<&'a Ident>,
}

impl<'a> Function<'a> {
    /// Reads what the signature says, leaving judgement to `check`. Parameters that are not
    /// `ident: Type` are left out here and reported by `check::check_params`.
    pub(crate) fn from_syn(item: &'a ItemFn) -> Self {
        let params = item
            .sig
            .inputs
            .iter()
            .filter_map(|arg| match arg {
                FnArg::Typed(pt) => match &*pt.pat {
                    Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => Some(Param {
                        ident: &pi.ident,
                        ty: &pt.ty,
                        mutable: pi.mutability.is_some(),
                    }),
                    _ => None,
                },
                FnArg::Receiver(_) => None,
            })
            .collect();
        let outputs = match &item.sig.output {
            ReturnType::Default => vec![],
            ReturnType::Type(_, ty) => match &**ty {
                Type::Tuple(t) => t.elems.iter().collect(),
                ty => vec![ty],
            },
        };
        let generic = item.sig.generics.type_params().next().map(|tp| &tp.ident);
        Function {
            item,
            params,
            outputs,
            generic,
        }
    }

    pub(crate) fn name(&self) -> &'a Ident {
        &self.item.sig.ident
    }
}

/// A `#[vectorize]` function with its attribute.
pub(crate) struct Vectorize<'a> {
    pub attr: VectorizeAttr,
    pub func: Function<'a>,
}
