//! The arguments of the three attributes: `#[vectorize(target = "cpu", types = [f32, f64],
//! fastmath = true)]`, `#[guvectorize("(m,n),(n,p)->(m,p)", targets = ["cpu", "parallel"])]` and
//! the argument-less `#[kernel_fn]`.
//!
//! Parsing goes on after a mistake: the arguments are split at their top-level commas and each
//! is read on its own, so a bad value, an unknown key and an invalid layout are all recorded in
//! one compile. What could not be read is left at its default, which later passes accept
//! without further errors. Parsing keeps spans; [`crate::check`] judges the values.

use crate::errors::Errors;
use crate::layout::{parse_layout, Layout};
use proc_macro2::{Span, TokenStream, TokenTree};
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{LitStr, Token, Type};

pub(crate) const KNOWN_TARGETS: &[&str] = &["cpu", "parallel", "cuda"];

/// Which entry point runs: it decides how the arguments are read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Macro {
    Vectorize,
    Guvectorize,
    KernelFn,
}

impl Macro {
    /// The attribute as messages name it: `#[vectorize]`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Macro::Vectorize => "#[vectorize]",
            Macro::Guvectorize => "#[guvectorize]",
            Macro::KernelFn => "#[kernel_fn]",
        }
    }
}

/// What the attribute makes of the function, with what only that kind has.
pub(crate) enum Kind {
    /// `#[vectorize]`: element-wise over scalars.
    Vectorize,
    /// `#[guvectorize]`: over core sub-arrays, as the layout says.
    Guvectorize(GuLayout),
    /// `#[kernel_fn]`: a helper that ufunc bodies call.
    KernelFn,
}

impl Kind {
    /// The attribute as messages name it: `#[vectorize]`.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Kind::Vectorize => Macro::Vectorize.name(),
            Kind::Guvectorize(_) => Macro::Guvectorize.name(),
            Kind::KernelFn => Macro::KernelFn.name(),
        }
    }
}

/// The layout string of `#[guvectorize]`.
pub(crate) struct GuLayout {
    /// As written; empty when it is missing.
    pub text: String,
    /// The parsed layout; no operands when it is missing or invalid (an error was recorded).
    pub layout: Layout,
    /// Whether `layout` was parsed from a valid layout string, so that checks may compare it
    /// with the parameters.
    pub valid: bool,
}

pub(crate) struct Attr {
    pub kind: Kind,
    /// Every target named, in order, with its literal (for spans). The first is the default.
    pub targets: Vec<LitStr>,
    /// Where `target` / `targets` were written, to reject both at once.
    pub target_keys: Vec<Span>,
    /// `types = [...]`: the element types a generic function is instantiated for.
    pub types: Option<(Span, Vec<Type>)>,
    /// `fastmath = true`: `#[vectorize]` lane code may contract `a * b + c` into fused
    /// multiply-adds; the cuda kernel (of either kind) compiles with `--use_fast_math`.
    pub fastmath: Option<(Span, bool)>,
    /// `identity = expr`: the result of reducing no elements (`reduce` and its kin).
    pub identity: Option<(Span, syn::Expr)>,
    /// `associative = true`: the function is associative and commutative, so `reduce` (over
    /// any axes) and `accumulate` (a blocked, parallel scan) may regroup it instead of
    /// applying it strictly in order.
    pub associative: Option<(Span, bool)>,
}

impl Attr {
    /// Reads the arguments of `mac`; every problem is recorded in `errors` and parsing goes on
    /// with the next argument.
    pub(crate) fn from_tokens(tokens: TokenStream, mac: Macro, errors: &Errors) -> Attr {
        let mut args = split_args(tokens, errors).into_iter();
        let kind = match mac {
            Macro::Vectorize => Kind::Vectorize,
            Macro::KernelFn => {
                let rest: TokenStream = args.by_ref().flatten().collect();
                if !rest.is_empty() {
                    errors.spanned(rest, "#[kernel_fn] takes no arguments");
                }
                Kind::KernelFn
            }
            Macro::Guvectorize => {
                let (layout, rest) = layout_arg(args.next().unwrap_or_default(), errors);
                let mut with_rest = Vec::new();
                with_rest.extend(rest);
                with_rest.extend(args);
                args = with_rest.into_iter();
                Kind::Guvectorize(layout)
            }
        };
        let mut attr = Attr {
            kind,
            targets: Vec::new(),
            target_keys: Vec::new(),
            types: None,
            fastmath: None,
            identity: None,
            associative: None,
        };
        for arg in args {
            let parser = |input: ParseStream| attr.parse_arg(input, mac);
            errors.record(parser.parse2(arg.into_iter().collect()));
        }
        attr
    }

    /// One `key = value` argument.
    fn parse_arg(&mut self, input: ParseStream, mac: Macro) -> syn::Result<()> {
        let key = input.call(syn::Path::parse_mod_style)?;
        let Some(ident) = key.get_ident().filter(|i| {
            [
                "target",
                "targets",
                "types",
                "fastmath",
                "identity",
                "associative",
            ]
            .contains(&i.to_string().as_str())
        }) else {
            return Err(syn::Error::new_spanned(key, unknown_argument(mac)));
        };
        let span = ident.span();
        input.parse::<Token![=]>()?;
        match ident.to_string().as_str() {
            "target" => {
                let target = input.parse()?;
                self.targets.push(target);
                self.target_keys.push(span);
            }
            "targets" => {
                self.targets.extend(bracketed_list::<LitStr>(input)?);
                self.target_keys.push(span);
            }
            "types" => self.types = Some((span, bracketed_list::<Type>(input)?)),
            "identity" => self.identity = Some((span, input.parse()?)),
            "associative" => {
                let value: syn::LitBool = input.parse()?;
                self.associative = Some((span, value.value));
            }
            _ => {
                let value: syn::LitBool = input.parse()?;
                self.fastmath = Some((span, value.value));
            }
        }
        Ok(())
    }

    /// Whether `cuda` is among the targets.
    pub(crate) fn wants_cuda(&self) -> bool {
        self.targets.iter().any(|t| t.value() == "cuda")
    }

    /// Whether `associative = true` was given.
    pub(crate) fn associative(&self) -> bool {
        self.associative.is_some_and(|(_, on)| on)
    }

    /// Whether `fastmath = true` was given.
    pub(crate) fn fastmath(&self) -> bool {
        self.fastmath.is_some_and(|(_, on)| on)
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

/// `[a, b, ...]`.
fn bracketed_list<T: Parse>(input: ParseStream) -> syn::Result<Vec<T>> {
    let content;
    syn::bracketed!(content in input);
    let list = Punctuated::<T, Token![,]>::parse_terminated(&content)?;
    Ok(list.into_iter().collect())
}

fn unknown_argument(mac: Macro) -> String {
    match mac {
        Macro::Guvectorize => "unknown argument of #[guvectorize]; after the layout, expected \
             `target = \"...\"`, `targets = [...]`, `types = [...]` or `fastmath = true`"
            .into(),
        _ => format!(
            "unknown argument of {}; expected `target = \"...\"`, `targets = [...]`, \
             `types = [...]`, `fastmath = true`, `identity = ...` or `associative = true`",
            mac.name()
        ),
    }
}

/// The arguments between top-level commas (a trailing comma is allowed). An empty argument
/// elsewhere is recorded and left out.
fn split_args(tokens: TokenStream, errors: &Errors) -> Vec<Vec<TokenTree>> {
    let mut args = vec![Vec::new()];
    for tt in tokens {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' => {
                if args.last().is_some_and(Vec::is_empty) {
                    errors.at(p.span(), "expected an argument before this `,`");
                } else {
                    args.push(Vec::new());
                }
            }
            _ => args.last_mut().expect("one at least").push(tt),
        }
    }
    args.retain(|a| !a.is_empty());
    args
}

/// The layout string at the head of `#[guvectorize]`'s first argument, and what follows it in
/// that argument (tokens that need a comma before them, recorded, then read as an argument).
fn layout_arg(first: Vec<TokenTree>, errors: &Errors) -> (GuLayout, Option<Vec<TokenTree>>) {
    let missing = |span: Span| {
        errors.at(
            span,
            "#[guvectorize] needs the layout first, as in #[guvectorize(\"(m,n),(n,p)->(m,p)\")]",
        );
        GuLayout {
            text: String::new(),
            layout: Layout::default(),
            valid: false,
        }
    };
    let Some(head) = first.first() else {
        return (missing(Span::call_site()), None);
    };
    let lit = match head {
        TokenTree::Literal(l) => syn::parse2::<LitStr>(TokenTree::Literal(l.clone()).into()).ok(),
        _ => None,
    };
    let Some(lit) = lit else {
        return (missing(head.span()), Some(first));
    };
    let rest = first[1..].to_vec();
    if let Some(next) = rest.first() {
        errors.at(
            next.span(),
            "expected `,` after the layout, then `target = \"...\"` or `targets = [...]`",
        );
    }
    let text = lit.value();
    let (layout, valid) = match parse_layout(&text) {
        Ok(layout) => (layout, true),
        Err(e) => {
            errors.spanned(
                &lit,
                format!("invalid layout, at column {}: {}", e.column, e.message),
            );
            (Layout::default(), false)
        }
    };
    let layout = GuLayout {
        text,
        layout,
        valid,
    };
    (layout, (!rest.is_empty()).then_some(rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn messages(tokens: TokenStream, mac: Macro) -> (Attr, Vec<String>) {
        let errors = Errors::new();
        let attr = Attr::from_tokens(tokens, mac, &errors);
        let messages = match errors.check() {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        };
        (attr, messages)
    }

    #[test]
    fn every_argument_is_read() {
        let (attr, errs) = messages(
            quote!(
                targets = ["cpu", "cuda"],
                types = [f32, f64],
                fastmath = true,
            ),
            Macro::Vectorize,
        );
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(attr.target_names(), ["cpu", "cuda"]);
        assert!(attr.wants_cuda() && attr.fastmath());
        assert_eq!(attr.types.map(|(_, t)| t.len()), Some(2));
    }

    #[test]
    fn parsing_goes_on_after_a_mistake() {
        let (attr, errs) = messages(
            quote!(target = cpu, parallel = true, fastmath = 1, types = [f32]),
            Macro::Vectorize,
        );
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert_eq!(errs[0], "expected string literal");
        assert!(errs[1].starts_with("unknown argument of #[vectorize]"));
        // What could not be read stays at its default; what could, is kept.
        assert!(attr.targets.is_empty() && attr.target_keys.is_empty());
        assert!(attr.fastmath.is_none());
        assert!(attr.types.is_some());
    }

    #[test]
    fn a_layout_is_read_first_and_checked() {
        let (attr, errs) = messages(quote!("(n),(#)->()" target = "gpu"), Macro::Guvectorize);
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs[0].starts_with("expected `,` after the layout"));
        assert!(errs[1].starts_with("invalid layout, at column 6"));
        // The argument after the missing comma is still read.
        assert_eq!(attr.target_names(), ["gpu"]);
        let (attr, errs) = messages(quote!(target = "cpu"), Macro::Guvectorize);
        assert_eq!(errs.len(), 1);
        assert!(errs[0].contains("needs the layout first"));
        assert_eq!(attr.target_names(), ["cpu"]);
        let Kind::Guvectorize(layout) = attr.kind else {
            panic!("a gufunc")
        };
        assert!(!layout.valid && layout.layout.inputs.is_empty());
    }

    #[test]
    fn kernel_fn_takes_nothing() {
        assert!(messages(quote!(), Macro::KernelFn).1.is_empty());
        assert_eq!(
            messages(quote!(inline), Macro::KernelFn).1,
            ["#[kernel_fn] takes no arguments"]
        );
    }
}
