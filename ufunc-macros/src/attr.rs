//! The arguments of `#[vectorize(...)]` (and of `#[guvectorize]` after its layout):
//! `target = "cpu"`, `targets = ["cpu", "parallel"]`, `types = [f32, f64]`, `fastmath = true`.
//! Parsing keeps spans; [`crate::check`] judges the values.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{LitStr, Token, Type};

pub(crate) const KNOWN_TARGETS: &[&str] = &["cpu", "parallel", "cuda"];

#[derive(Default)]
pub(crate) struct VectorizeAttr {
    /// Every target named, in order, with its literal (for spans). The first is the default.
    pub targets: Vec<LitStr>,
    /// Where `target` / `targets` were written, to reject both at once.
    pub target_keys: Vec<Span>,
    /// `types = [...]`: the element types a generic function is instantiated for.
    pub types: Option<(Span, Vec<Type>)>,
    /// `fastmath = true`: lane code may contract `a * b + c` into fused multiply-adds.
    pub fastmath: Option<(Span, bool)>,
}

impl VectorizeAttr {
    /// Whether `cuda` is among the targets.
    pub(crate) fn wants_cuda(&self) -> bool {
        self.targets.iter().any(|t| t.value() == "cuda")
    }

    /// The targets named, the default first; `cpu` when none is.
    pub(crate) fn target_names(&self) -> Vec<String> {
        if self.targets.is_empty() {
            vec!["cpu".into()]
        } else {
            self.targets.iter().map(|t| t.value()).collect()
        }
    }
}

/// Parses the arguments of `attribute` (`#[vectorize]` or `#[guvectorize]`, for messages).
pub(crate) fn parse_vectorize_attr(
    tokens: TokenStream,
    attribute: &str,
) -> syn::Result<VectorizeAttr> {
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
        } else if meta.path.is_ident("fastmath") {
            let span = meta.path.get_ident().unwrap().span();
            let value: syn::LitBool = meta.value()?.parse()?;
            attr.fastmath = Some((span, value.value));
            Ok(())
        } else if attribute == "#[guvectorize]" {
            Err(meta.error(
                "unknown argument of #[guvectorize]; after the layout, expected \
                 `target = \"...\"` or `targets = [...]`",
            ))
        } else {
            Err(meta.error(format!(
                "unknown argument of {attribute}; expected `target = \"...\"`, \
                 `targets = [...]`, `types = [...]` or `fastmath = true`"
            )))
        }
    });
    parser.parse2(tokens)?;
    Ok(attr)
}
