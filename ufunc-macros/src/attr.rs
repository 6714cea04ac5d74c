//! The arguments of `#[vectorize(...)]`: `target = "cpu"`, `targets = ["cpu", "parallel"]`,
//! `types = [f32, f64]`. Parsing keeps spans; [`crate::check`] judges the values.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{LitStr, Token, Type};

pub(crate) const KNOWN_TARGETS: &[&str] = &["cpu", "parallel"];

#[derive(Default)]
pub(crate) struct VectorizeAttr {
    /// Every target named, in order, with its literal (for spans). The first is the default.
    pub targets: Vec<LitStr>,
    /// Where `target` / `targets` were written, to reject both at once.
    pub target_keys: Vec<Span>,
    /// `types = [...]`: the element types a generic function is instantiated for.
    pub types: Option<(Span, Vec<Type>)>,
}

pub(crate) fn parse_vectorize_attr(tokens: TokenStream) -> syn::Result<VectorizeAttr> {
    let mut attr = VectorizeAttr::default();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("target") {
            attr.target_keys.push(meta.path.get_ident().unwrap().span());
            attr.targets.push(meta.value()?.parse()?);
            Ok(())
        } else if meta.path.is_ident("targets") {
            attr.target_keys.push(meta.path.get_ident().unwrap().span());
            let content;
            let value = meta.value()?;
            syn::bracketed!(content in value);
            let list = Punctuated::<LitStr, Token![,]>::parse_terminated(&content)?;
            attr.targets.extend(list);
            Ok(())
        } else if meta.path.is_ident("types") {
            let span = meta.path.get_ident().unwrap().span();
            let content;
            let value = meta.value()?;
            syn::bracketed!(content in value);
            let list = Punctuated::<Type, Token![,]>::parse_terminated(&content)?;
            attr.types = Some((span, list.into_iter().collect()));
            Ok(())
        } else {
            Err(meta.error(
                "unknown argument of #[vectorize]; expected `target = \"...\"`, \
                 `targets = [...]` or `types = [...]`",
            ))
        }
    });
    parser.parse2(tokens)?;
    Ok(attr)
}
