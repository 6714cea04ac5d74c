//! Statements: control flow, loops, `match`, macros.

use super::expr::emit_lit;
use super::*;

impl Emitter {
    /// An expression used as a statement.
    pub(super) fn emit_stmt_expr(&mut self, e: &Expr) -> Res<String> {
        match e {
            Expr::If(ei) => self.emit_if_stmt(ei),
            Expr::ForLoop(f) => self.emit_for(f),
            Expr::While(w) => {
                if w.label.is_some() {
                    return unsupported(w, "a labelled loop");
                }
                let (cond, _) = self.emit_expr(&w.cond, Some(&Ty::elem("bool")))?;
                let body = self.emit_block_stmts(&w.body)?;
                Ok(format!("while ({cond}) {{\n{body}}}\n"))
            }
            Expr::Loop(l) => {
                if l.label.is_some() {
                    return unsupported(l, "a labelled loop");
                }
                let body = self.emit_block_stmts(&l.body)?;
                Ok(format!("for (;;) {{\n{body}}}\n"))
            }
            Expr::Break(b) => {
                if b.label.is_some() || b.expr.is_some() {
                    return unsupported(b, "`break` with a label or value");
                }
                Ok("break;\n".into())
            }
            Expr::Continue(c) => {
                if c.label.is_some() {
                    return unsupported(c, "`continue` with a label");
                }
                Ok("continue;\n".into())
            }
            Expr::Return(r) => match &r.expr {
                Some(v) => {
                    let ret = self.ret.clone();
                    let (v, _) = self.emit_expr(v, Some(&ret))?;
                    Ok(format!("return {v};\n"))
                }
                None if self.ret == Ty::Unit => Ok("return;\n".into()),
                None => unsupported(r, "`return` without a value"),
            },
            Expr::Block(b) => {
                let body = self.emit_block_stmts(&b.block)?;
                Ok(format!("{{\n{body}}}\n"))
            }
            Expr::Match(m) => self.emit_match(m, None).map(|(c, _)| c),
            Expr::Macro(m) => self.emit_macro(&m.mac),
            e => {
                let (code, _) = self.emit_expr(e, None)?;
                Ok(format!("{code};\n"))
            }
        }
    }

    /// A block whose value is not used.
    pub(super) fn emit_block_stmts(&mut self, block: &Block) -> Res<String> {
        let (mut code, tail) = self.emit_block_parts(block, None, false)?;
        if let Some((e, _)) = tail {
            code.push_str(&format!("(void)({e});\n"));
        }
        Ok(code)
    }

    pub(super) fn emit_if_stmt(&mut self, ei: &syn::ExprIf) -> Res<String> {
        let (cond, _) = self.emit_expr(&ei.cond, Some(&Ty::elem("bool")))?;
        let then = self.emit_block_stmts(&ei.then_branch)?;
        let mut code = format!("if ({cond}) {{\n{then}}}");
        if let Some((_, e)) = &ei.else_branch {
            match &**e {
                Expr::If(inner) => code.push_str(&format!(" else {}", self.emit_if_stmt(inner)?)),
                Expr::Block(b) => {
                    let body = self.emit_block_stmts(&b.block)?;
                    code.push_str(&format!(" else {{\n{body}}}\n"));
                }
                other => return unsupported(other, "this `else` branch"),
            }
        } else {
            code.push('\n');
        }
        Ok(code)
    }

    pub(super) fn emit_for(&mut self, f: &syn::ExprForLoop) -> Res<String> {
        if f.label.is_some() {
            return unsupported(f, "a labelled loop");
        }
        let Expr::Range(r) = unparen(&f.expr) else {
            return unsupported(&f.expr, "`for` over anything but a range `a..b`");
        };
        let (Some(start), Some(end)) = (&r.start, &r.end) else {
            return unsupported(r, "an open range");
        };
        let (s, st) = self.emit_expr(start, None)?;
        let (e, et) = self.emit_expr(end, Some(&st))?;
        let ty = match Ty::join(&st, &et) {
            Ty::IntLit => Ty::elem("i32"),
            t => t,
        };
        let name = match &*f.pat {
            Pat::Ident(pi) => pi.ident.to_string(),
            Pat::Wild(_) => format!("_{}", self.tmp()),
            other => return unsupported(other, "this loop pattern"),
        };
        self.env.push();
        self.env.declare(&name, ty.clone(), None);
        let body = self.emit_block_stmts(&f.body)?;
        self.env.pop();
        let cmp = match r.limits {
            syn::RangeLimits::HalfOpen(_) => "<",
            syn::RangeLimits::Closed(_) => "<=",
        };
        let (s, e) = (self.retype_literal(&s, &ty), self.retype_literal(&e, &ty));
        let var = local(&name);
        let t = ty.cpp();
        if let Some(k) = self.mapped.iter().position(|&p| std::ptr::eq(p, f)) {
            // Each thread runs the iteration of its own index; the thread of the last index (or
            // the only thread, for an empty axis) also runs the iterations past the output's
            // extent, in order, so a mapped loop does exactly what the serial loop does.
            return Ok(format!(
                "{{
const {t} __start_{var} = {s};
const {t} __end_{var} = {e};
const long long __len_{var} = __ufunc_mapped_len[{k}];
const long long __own_{var} = __ufunc_mapped[{k}];
if (__own_{var} < __len_{var}) {{
const {t} {var} = ({t})__own_{var};
if ({var} >= __start_{var} && {var} {cmp} __end_{var}) {{
{body}}}
}}
if (__own_{var} == (__len_{var} > 0 ? __len_{var} - 1 : 0)) {{
{t} __tail_{var} = ({t})__len_{var};
if (__tail_{var} < __start_{var}) __tail_{var} = __start_{var};
for ({t} {var} = __tail_{var}; {var} {cmp} __end_{var}; ++{var}) {{
{body}}}
}}
}}
"
            ));
        }
        Ok(format!(
            "for ({t} {var} = {s}, __end_{var} = {e}; {var} {cmp} __end_{var}; ++{var}) {{\n{body}}}\n"
        ))
    }

    pub(super) fn emit_macro(&mut self, mac: &syn::Macro) -> Res<String> {
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        match name.as_str() {
            "panic" | "unreachable" | "todo" | "unimplemented" => {
                Ok("__ufunc_panic(__UFUNC_PANIC_EXPLICIT);\n".into())
            }
            "assert" | "debug_assert" => {
                let args = mac.parse_body_with(
                    syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                )?;
                let Some(cond) = args.first() else {
                    return unsupported(mac, "an empty assert!");
                };
                let (c, _) = self.emit_expr(cond, Some(&Ty::elem("bool")))?;
                Ok(format!(
                    "if (!({c})) __ufunc_panic(__UFUNC_PANIC_EXPLICIT);\n"
                ))
            }
            _ => unsupported(mac, &format!("the macro `{name}!`")),
        }
    }

    /// `match` on an integer: an if-chain in a lambda that yields the arm's value.
    pub(super) fn emit_match(
        &mut self,
        m: &syn::ExprMatch,
        expected: Option<&Ty>,
    ) -> Res<(String, Ty)> {
        let (scrutinee, st) = self.emit_expr(&m.expr, None)?;
        if !(st.is_integer() || st == Ty::elem("bool")) {
            return unsupported(&m.expr, "`match` on anything but an integer or bool");
        }
        let s = self.tmp();
        let mut code = format!("auto {s} = {scrutinee};\n");
        let mut ty = Ty::Unit;
        for (k, arm) in m.arms.iter().enumerate() {
            if arm.guard.is_some() {
                return unsupported(arm, "a match guard");
            }
            let cond = pattern_condition(&arm.pat, &s)?;
            let hint = if ty.is_known() {
                Some(ty.clone())
            } else {
                expected.cloned()
            };
            let body = match &*arm.body {
                Expr::Block(b) if expected.is_none() => {
                    let stmts = self.emit_block_stmts(&b.block)?;
                    format!("{{\n{stmts}}}")
                }
                e if expected.is_none() && is_statement_like(e) => {
                    format!("{{\n{}}}", self.emit_stmt_expr(e)?)
                }
                e => {
                    let (v, t) = self.emit_expr(e, hint.as_ref())?;
                    if t != Ty::Unit {
                        ty = Ty::join(&ty, &t);
                        if ty == Ty::Unit {
                            ty = t;
                        }
                        format!("{{ return {v}; }}")
                    } else {
                        format!("{{ {v}; }}")
                    }
                }
            };
            let keyword = if k == 0 { "if" } else { "else if" };
            code.push_str(&format!("{keyword} ({cond}) {body}\n"));
        }
        if ty == Ty::Unit {
            return Ok((code, Ty::Unit));
        }
        code.push_str("__ufunc_panic(__UFUNC_PANIC_UNREACHABLE);\nreturn {};\n");
        Ok((format!("[&]() -> {} {{\n{code}}}()", decl_type(&ty)), ty))
    }
}

/// The condition under which an integer `match` arm's pattern matches the value named `s`.
pub(super) fn pattern_condition(pat: &Pat, s: &str) -> Res<String> {
    match pat {
        Pat::Wild(_) => Ok("true".into()),
        Pat::Lit(l) => {
            let (v, _) = emit_lit(&l.lit, None)?;
            Ok(format!("{s} == {v}"))
        }
        Pat::Or(o) => {
            let parts = o
                .cases
                .iter()
                .map(|c| pattern_condition(c, s))
                .collect::<Res<Vec<_>>>()?;
            Ok(format!("({})", parts.join(" || ")))
        }
        Pat::Range(r) => {
            let bound = |e: &Option<Box<Expr>>| -> Res<Option<String>> {
                match e.as_deref() {
                    None => Ok(None),
                    Some(Expr::Lit(l)) => Ok(Some(emit_lit(&l.lit, None)?.0)),
                    Some(Expr::Unary(u)) if matches!(u.op, UnOp::Neg(_)) => match &*u.expr {
                        Expr::Lit(l) => Ok(Some(format!("-{}", emit_lit(&l.lit, None)?.0))),
                        other => unsupported(other, "this range bound"),
                    },
                    Some(other) => unsupported(other, "this range bound"),
                }
            };
            let lo = bound(&r.start)?.map(|v| format!("{s} >= {v}"));
            let hi = bound(&r.end)?.map(|v| match r.limits {
                syn::RangeLimits::HalfOpen(_) => format!("{s} < {v}"),
                syn::RangeLimits::Closed(_) => format!("{s} <= {v}"),
            });
            Ok(match (lo, hi) {
                (Some(a), Some(b)) => format!("({a} && {b})"),
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => "true".into(),
            })
        }
        other => unsupported(
            other,
            "this pattern (match arms take integer literals, ranges, `|` and `_`)",
        ),
    }
}
