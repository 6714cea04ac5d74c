//! The lane form of a body: the same Rust, rewritten so that it vectorizes inside the runtime's
//! per-instruction-set loops. Math methods become branch-free `LaneMath` calls, helper calls go
//! to the helper's lane version, and `if`/`else` with pure arms computes both arms and selects.
//! Bodies that are not straight-line code keep the scalar function (see [`scalar_reason`]).

use crate::types::INTEGER_NAMES;
use proc_macro2::Span;
use quote::quote_spanned;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{parse_quote, parse_quote_spanned, Block, Expr};

/// Methods with a vector implementation in `ufunc_runtime::LaneMath`, with their argument counts.
const LANE_MATH: &[(&str, usize)] = &[
    ("exp", 0),
    ("exp2", 0),
    ("ln", 0),
    ("log2", 0),
    ("log10", 0),
    ("sin", 0),
    ("cos", 0),
    ("tan", 0),
    ("tanh", 0),
    ("powf", 1),
    ("powi", 1),
];

/// The name a macro is called by: `vec` for `vec![..]` and `std::vec![..]`.
pub(crate) fn macro_name(mac: &syn::Macro) -> String {
    mac.path
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default()
}

/// Why `block` cannot be lane code, or `None` if it is straight-line code.
pub(crate) fn scalar_reason(block: &Block) -> Option<String> {
    struct Finder(Option<String>);
    impl Finder {
        fn found(&mut self, what: &str) {
            if self.0.is_none() {
                self.0 = Some(format!("the body contains {what}"));
            }
        }
    }
    impl<'ast> Visit<'ast> for Finder {
        fn visit_expr(&mut self, e: &'ast Expr) {
            match e {
                Expr::ForLoop(_) => self.found("a `for` loop"),
                Expr::While(_) => self.found("a `while` loop"),
                Expr::Loop(_) => self.found("a `loop`"),
                Expr::Return(_) => self.found("a `return`"),
                Expr::Match(_) => self.found("a `match`"),
                Expr::Break(_) | Expr::Continue(_) => self.found("`break` or `continue`"),
                Expr::Closure(_) => self.found("a closure"),
                Expr::Try(_) => self.found("the `?` operator"),
                Expr::Let(_) => self.found("an `if let` or `while let`"),
                Expr::Macro(m) => self.found(&format!("a macro call (`{}!`)", macro_name(&m.mac))),
                _ => {}
            }
            syn::visit::visit_expr(self, e);
        }
        fn visit_stmt_macro(&mut self, m: &'ast syn::StmtMacro) {
            self.found(&format!("a macro call (`{}!`)", macro_name(&m.mac)));
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut f = Finder(None);
    f.visit_block(block);
    f.0
}

/// Whether evaluating any expression of `block` can panic: true as soon as an integer type or
/// an integer literal (other than a `powi` exponent) appears. Float, complex and bool arithmetic
/// never panics, so such bodies may compute both arms of an `if`.
pub(crate) fn mentions_integers(block: &Block) -> bool {
    struct Finder(bool);
    impl<'ast> Visit<'ast> for Finder {
        fn visit_path_segment(&mut self, s: &'ast syn::PathSegment) {
            if INTEGER_NAMES.contains(&s.ident.to_string().as_str()) {
                self.0 = true;
            }
            syn::visit::visit_path_segment(self, s);
        }
        fn visit_lit_int(&mut self, _: &'ast syn::LitInt) {
            self.0 = true;
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            self.visit_expr(&m.receiver);
            if m.method != "powi" {
                for a in &m.args {
                    self.visit_expr(a);
                }
            }
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut f = Finder(false);
    f.visit_block(block);
    f.0
}

/// How a body is rewritten into lane form.
#[derive(Clone, Copy)]
pub(crate) struct LaneOptions {
    /// `if c { a } else { b }` whose arms have no assignments and no function calls becomes
    /// "compute both, then select" (only where no expression can panic).
    pub speculate: bool,
    /// `a * b + c` becomes a fused multiply-add where the instruction set has one.
    pub fastmath: bool,
}

/// Rewrites `block` into lane form for the instruction-set parameter `isa`.
pub(crate) fn rewrite(block: &Block, isa: &syn::Ident, options: LaneOptions) -> Block {
    let mut block = block.clone();
    Rewriter { isa, options }.visit_block_mut(&mut block);
    block
}

struct Rewriter<'a> {
    isa: &'a syn::Ident,
    options: LaneOptions,
}

/// `x` without surrounding parentheses.
fn unparen(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => unparen(&p.expr),
        Expr::Group(g) => unparen(&g.expr),
        e => e,
    }
}

impl VisitMut for Rewriter<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        let isa = self.isa;
        match e {
            Expr::MethodCall(mc) if mc.turbofish.is_none() => {
                let name = mc.method.to_string();
                if LANE_MATH.contains(&(name.as_str(), mc.args.len())) {
                    let method = &mc.method;
                    let receiver = &mc.receiver;
                    let args = mc.args.iter();
                    let span = mc.method.span();
                    *e = parse_quote_spanned! {span=>
                        ::ufunc::__private::LaneMath::#method::<#isa>(#receiver #(, #args)*)
                    };
                }
            }
            Expr::Call(call) => {
                if let Expr::Path(p) = &*call.func {
                    if let Some(ident) = helper_name(p) {
                        // `#[kernel_fn]` helpers give their lane form; a plain function (see
                        // `plain_helper_fallbacks`) gives itself.
                        let span = ident.span();
                        let lane =
                            quote_spanned!(span=> (#ident::__ufunc_lane_of::<#isa, _>(#ident)));
                        *call.func = parse_quote!(#lane);
                    }
                }
            }
            Expr::Binary(add) if self.options.fastmath && matches!(add.op, syn::BinOp::Add(_)) => {
                let product = |e: &Expr| match unparen(e) {
                    Expr::Binary(m) if matches!(m.op, syn::BinOp::Mul(_)) => {
                        Some(((*m.left).clone(), (*m.right).clone()))
                    }
                    _ => None,
                };
                let fused = match (product(&add.left), product(&add.right)) {
                    (Some((a, b)), _) => Some((a, b, (*add.right).clone())),
                    (None, Some((a, b))) => Some((a, b, (*add.left).clone())),
                    _ => None,
                };
                if let Some((a, b, c)) = fused {
                    let span = add.op.span();
                    *e = parse_quote_spanned! {span=>
                        ::ufunc::__private::FusedMulAdd::fused_mul_add::<#isa>(#a, #b, #c)
                    };
                }
            }
            Expr::If(ei) if self.options.speculate && ei.else_branch.is_some() => {
                let then_block = &ei.then_branch;
                let else_expr = &ei.else_branch.as_ref().unwrap().1;
                if is_pure(&Expr::Block(syn::ExprBlock {
                    attrs: vec![],
                    label: None,
                    block: then_block.clone(),
                })) && is_pure(else_expr)
                {
                    let cond = &ei.cond;
                    let span = ei.if_token.span();
                    *e = parse_quote_spanned! {span=> {
                        let __ufunc_then = #then_block;
                        let __ufunc_else = #else_expr;
                        if #cond { __ufunc_then } else { __ufunc_else }
                    }};
                }
            }
            _ => {}
        }
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// A call `name(..)` to a plain lower-case function: a `#[kernel_fn]` helper, or a plain function
/// (or closure) that runs as it is.
pub(crate) fn helper_name(p: &syn::ExprPath) -> Option<&syn::Ident> {
    if p.qself.is_some() || p.path.leading_colon.is_some() || p.path.segments.len() != 1 {
        return None;
    }
    let seg = &p.path.segments[0];
    let first = seg.ident.to_string().chars().next()?;
    (matches!(seg.arguments, syn::PathArguments::None) && first.is_lowercase())
        .then_some(&seg.ident)
}

/// No assignment, no macro, and no function call other than lane math (already rewritten) and
/// float or complex associated functions (`f32::max`, `Complex::new`): helpers may panic.
fn is_pure(e: &Expr) -> bool {
    fn known_pure_call(e: &Expr) -> bool {
        let Expr::Call(c) = e else { return false };
        let Expr::Path(p) = &*c.func else {
            return false;
        };
        let first = p.path.segments.first().map(|s| s.ident.to_string());
        matches!(first.as_deref(), Some("ufunc" | "f32" | "f64" | "Complex"))
    }
    struct Finder(bool);
    impl<'ast> Visit<'ast> for Finder {
        fn visit_expr(&mut self, e: &'ast Expr) {
            let call = matches!(e, Expr::Call(_)) && !known_pure_call(e);
            if call
                || matches!(e, Expr::Assign(_) | Expr::Macro(_))
                || matches!(e, Expr::Binary(b) if is_compound_assign(&b.op))
            {
                self.0 = false;
            }
            syn::visit::visit_expr(self, e);
        }
        fn visit_stmt_macro(&mut self, _: &'ast syn::StmtMacro) {
            self.0 = false;
        }
    }
    let mut f = Finder(true);
    f.visit_expr(e);
    f.0
}

fn is_compound_assign(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitXorAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}

/// The identifier of the instruction-set type parameter in generated lane functions.
pub(crate) fn isa_ident() -> syn::Ident {
    syn::Ident::new("__UfuncM", Span::call_site())
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    fn lane(src: &str, speculate: bool) -> String {
        let block: Block = syn::parse_str(src).unwrap();
        let options = LaneOptions {
            speculate,
            fastmath: false,
        };
        rewrite(&block, &isa_ident(), options)
            .to_token_stream()
            .to_string()
    }

    #[test]
    fn math_methods_become_lane_math() {
        let out = lane("{ (x * 2.0).exp() + y.powi(2) + x.sqrt() }", false);
        assert!(
            out.contains(":: ufunc :: __private :: LaneMath :: exp :: < __UfuncM > ((x * 2.0))")
        );
        assert!(out.contains("LaneMath :: powi :: < __UfuncM > (y , 2)"));
        assert!(out.contains("x . sqrt ()"), "{out}");
    }

    #[test]
    fn helper_calls_go_to_lane_versions() {
        let out = lane(
            "{ polar(a, b) + f32::max(a, b) + Complex::new(a, b) }",
            false,
        );
        assert!(
            out.contains("(polar :: __ufunc_lane_of :: < __UfuncM , _ > (polar)) (a , b)"),
            "{out}"
        );
        assert!(out.contains("f32 :: max (a , b)"));
        assert!(out.contains("Complex :: new (a , b)"));
    }

    #[test]
    fn pure_if_else_is_speculated_only_when_allowed() {
        let src = "{ if x > 0.0 { x.ln() } else { 0.0 } }";
        assert!(lane(src, true).contains("let __ufunc_then"));
        assert!(!lane(src, false).contains("let __ufunc_then"));
        let assigning = "{ let mut y = 0.0; if x > 0.0 { y = 1.0 } else { y = 2.0 }; y }";
        assert!(!lane(assigning, true).contains("let __ufunc_then"));
    }

    #[test]
    fn fastmath_contracts_products_plus_addends() {
        let block: Block = syn::parse_str("{ a * b + c + (x * 2.0) }").unwrap();
        let options = LaneOptions {
            speculate: false,
            fastmath: true,
        };
        let out = rewrite(&block, &isa_ident(), options)
            .to_token_stream()
            .to_string();
        // (a*b + c) + (x*2): the outer sum contracts its right product; the inner one its left.
        assert_eq!(
            out.matches("FusedMulAdd :: fused_mul_add :: < __UfuncM >")
                .count(),
            2,
            "{out}"
        );
    }

    #[test]
    fn reasons_and_integer_detection() {
        let b: Block = syn::parse_str("{ let mut s = 0.0; for i in 0..3 { s += x; } s }").unwrap();
        assert_eq!(scalar_reason(&b).unwrap(), "the body contains a `for` loop");
        let b: Block = syn::parse_str("{ (x + y).powi(2) }").unwrap();
        assert_eq!(scalar_reason(&b), None);
        assert!(!mentions_integers(&b));
        let b: Block = syn::parse_str("{ x * (n as f32) + 1.0 }").unwrap();
        assert!(!mentions_integers(&b));
        let b: Block = syn::parse_str("{ (x as i32) as f32 }").unwrap();
        assert!(mentions_integers(&b));
    }
}
