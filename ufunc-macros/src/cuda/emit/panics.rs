//! `panic!`, `assert!`, `unreachable!`, `todo!` and `unimplemented!` on cuda: each site gets a
//! code of its own (`__UFUNC_PANIC_SITE_BASE + k` in a body, `__UFUNC_HELPER_SITE_BASE +` [`helper_site_offset`]` + k` in a
//! `#[kernel_fn]` helper) and an entry in the kernel's (or the helper's) message table
//! ([`PanicSpec`], generated into the Rust side), and the thread that raises a launch's first
//! panic writes up to four of the message's arguments beside it; the host formats the message
//! as the CPU targets' panic would read (`ufunc-runtime/src/cuda/panics.rs`).

use super::{Emitter, PLACEHOLDER};
use proc_macro2::TokenStream;
use quote::quote;
use syn::punctuated::Punctuated;
use syn::{Expr, Lit, LitStr, Token};

/// How many arguments the device carries (the runtime's `panics::ARGS`).
const ARGS: usize = 4;

/// The C++ name of a body's first site code (the prelude defines it as the runtime's
/// `SITE_CODE_BASE`).
pub(crate) const BODY_SITE_BASE: &str = "__UFUNC_PANIC_SITE_BASE";

/// How many panic sites one helper may have: its codes are a block of this many.
pub(crate) const HELPER_SITES: usize = 1024;

/// Where helper `name`'s block of [`HELPER_SITES`] codes starts, counted from the runtime's
/// `HELPER_SITE_CODE_BASE` (the prelude's `__UFUNC_HELPER_SITE_BASE`): chosen by a hash of the
/// name (FNV-1a, 20 bits), so the same in every kernel that calls the helper. Two helpers of one
/// kernel whose names hash alike (about one pair in a million) would share codes, and a panic
/// of one could be reported with the other's message.
pub(crate) fn helper_site_offset(name: &str) -> i32 {
    let hash = name.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    ((hash & 0xf_ffff) as i32) * HELPER_SITES as i32
}

/// One panic site of a body or helper: its index `k` (code base + `k`) and its message,
/// a Rust expression of type `&'static str` (a format string when `formatted`).
pub(crate) struct PanicSpec {
    pub index: usize,
    pub message: TokenStream,
    pub formatted: bool,
}

impl Emitter<'_> {
    /// The statement a panicking macro `name!` becomes.
    pub(super) fn emit_panic(&mut self, mac: &syn::Macro, name: &str) -> String {
        let args = match mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated) {
            Ok(args) => args.into_iter().collect::<Vec<_>>(),
            Err(e) => {
                if self.quiet == 0 {
                    self.errors.push(e);
                }
                return PLACEHOLDER.into();
            }
        };
        let (cond, message_args) = match name {
            "assert" | "debug_assert" => match args.split_first() {
                Some((cond, rest)) => (Some(cond), rest),
                None => return self.unsupported(mac, "an empty assert!").0,
            },
            _ => (None, &args[..]),
        };
        let prefix = match name {
            "unreachable" => "internal error: entered unreachable code",
            "todo" => "not yet implemented",
            "unimplemented" => "not implemented",
            _ => "",
        };
        let (message, formatted, values) = match message_args.split_first() {
            None => {
                let message = match (cond, name) {
                    (Some(c), _) => quote!(::core::concat!(
                        "assertion failed: ",
                        ::core::stringify!(#c)
                    )),
                    (None, "panic") => quote!("explicit panic"),
                    (None, _) => quote!(#prefix),
                };
                (message, false, Vec::new())
            }
            Some((Expr::Lit(l), rest)) if matches!(l.lit, Lit::Str(_)) => {
                let Lit::Str(lit) = &l.lit else {
                    unreachable!("matched a string literal")
                };
                let Some((template, values)) = self.format_args(lit, rest) else {
                    return PLACEHOLDER.into();
                };
                let template = if prefix.is_empty() {
                    template
                } else {
                    format!("{prefix}: {template}")
                };
                (quote!(#template), true, values)
            }
            Some((first, _)) => {
                return self
                    .unsupported(first, "a panic message that is not a string literal")
                    .0
            }
        };
        let index = self.captures.panics.len();
        self.captures.panics.push(PanicSpec {
            index,
            message,
            formatted,
        });
        let base = &self.site_base;
        let mut raise = format!("if (__ufunc_panic_first({base} + {index})) {{");
        for (i, value) in values.iter().take(ARGS).enumerate() {
            let (v, _) = self.emit_expr(value, None);
            raise.push_str(&format!(" __ufunc_panic_arg({i}, {v});"));
        }
        raise.push_str(" }\n");
        match cond {
            Some(c) => {
                let (c, _) = self.emit_expr(c, Some(&super::Ty::elem("bool")));
                format!("if (!({c})) {{ {raise}}}\n")
            }
            None => raise,
        }
    }

    /// The template of `lit` with each placeholder reduced to its format spec, and the value
    /// each placeholder takes, in order: positional and named arguments among `rest`, or
    /// variables captured by name (`{x}`). A spec other than `{}`, `{:?}`, `{:.N}` and `{:.N?}`
    /// is an error at `lit`.
    fn format_args(&mut self, lit: &LitStr, rest: &[Expr]) -> Option<(String, Vec<Expr>)> {
        let mut positional = Vec::new();
        let mut named = Vec::new();
        for e in rest {
            match e {
                Expr::Assign(a) => match &*a.left {
                    Expr::Path(p) if p.path.get_ident().is_some() => {
                        named.push((p.path.get_ident()?.to_string(), (*a.right).clone()))
                    }
                    _ => positional.push(e.clone()),
                },
                e => positional.push(e.clone()),
            }
        }
        let text = lit.value();
        let mut template = String::new();
        let mut values = Vec::new();
        let mut next = 0;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' | '}' if chars.peek() == Some(&c) => {
                    chars.next();
                    template.push(c);
                    template.push(c);
                }
                '{' => {
                    let inner: String = chars.by_ref().take_while(|&c| c != '}').collect();
                    let (arg, spec) = inner.split_once(':').unwrap_or((&inner, ""));
                    if !supported_spec(spec) {
                        self.error(
                            lit,
                            &format!(
                                "the format `{{{inner}}}` in a panic message is not supported \
                                 in a cuda kernel; supported: `{{}}`, `{{:?}}`, `{{:.N}}`, \
                                 `{{:.N?}}` of integers, floats and bools"
                            ),
                        );
                        return None;
                    }
                    let value = if arg.is_empty() {
                        next += 1;
                        positional.get(next - 1).cloned()
                    } else if let Ok(i) = arg.parse::<usize>() {
                        positional.get(i).cloned()
                    } else {
                        named
                            .iter()
                            .find(|(n, _)| n == arg)
                            .map(|(_, e)| e.clone())
                            .or_else(|| {
                                let ident = syn::Ident::new(arg, lit.span());
                                Some(syn::parse_quote!(#ident))
                            })
                    };
                    // rustc reports a missing argument on the CPU side.
                    values.push(value?);
                    template.push('{');
                    if !spec.is_empty() {
                        template.push(':');
                        template.push_str(spec);
                    }
                    template.push('}');
                }
                c => template.push(c),
            }
        }
        Some((template, values))
    }
}

/// `""`, `"?"`, `".N"` or `".N?"`.
fn supported_spec(spec: &str) -> bool {
    let spec = spec.strip_suffix('?').unwrap_or(spec);
    spec.is_empty()
        || spec
            .strip_prefix('.')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::supported_spec;

    #[test]
    fn specs() {
        for ok in ["", "?", ".3", ".10?"] {
            assert!(supported_spec(ok), "{ok}");
        }
        for bad in [">5", "#?", ".", ".*", "x", "5.2"] {
            assert!(!supported_spec(bad), "{bad}");
        }
    }
}
