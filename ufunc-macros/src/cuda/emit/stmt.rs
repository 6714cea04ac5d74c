//! Statements: control flow, loops, `match`, macros.

use super::*;

impl Emitter<'_> {
    /// An expression used as a statement.
    pub(super) fn emit_stmt_expr(&mut self, e: &Expr) -> String {
        match e {
            Expr::If(ei) => self.emit_if_stmt(ei),
            Expr::ForLoop(f) => self.emit_for(f),
            Expr::While(w) => {
                if w.label.is_some() {
                    self.unsupported(w, "a labelled loop");
                }
                let (cond, _) = self.emit_expr(&w.cond, Some(&Ty::elem("bool")));
                let body = self.emit_block_stmts(&w.body);
                format!("while ({cond}) {{\n{body}}}\n")
            }
            Expr::Loop(l) => {
                if l.label.is_some() {
                    self.unsupported(l, "a labelled loop");
                }
                let body = self.emit_block_stmts(&l.body);
                format!("for (;;) {{\n{body}}}\n")
            }
            Expr::Break(b) => {
                if b.label.is_some() || b.expr.is_some() {
                    self.unsupported(b, "`break` with a label or value");
                }
                "break;\n".into()
            }
            Expr::Continue(c) => {
                if c.label.is_some() {
                    self.unsupported(c, "`continue` with a label");
                }
                "continue;\n".into()
            }
            Expr::Return(r) => match &r.expr {
                Some(v) => {
                    let ret = self.ret.clone();
                    let (v, _) = self.emit_expr(v, Some(&ret));
                    format!("return {v};\n")
                }
                None if self.ret == Ty::Unit => "return;\n".into(),
                None => self.unsupported(r, "`return` without a value").0,
            },
            Expr::Block(b) => {
                let body = self.emit_block_stmts(&b.block);
                format!("{{\n{body}}}\n")
            }
            Expr::Match(m) => self.emit_match(m, None).0,
            Expr::Macro(m) => self.emit_macro(&m.mac),
            e => {
                let (code, _) = self.emit_expr(e, None);
                format!("{code};\n")
            }
        }
    }

    /// A block whose value is not used.
    pub(super) fn emit_block_stmts(&mut self, block: &Block) -> String {
        let (mut code, tail) = self.emit_block_parts(block, None, false);
        if let Some((e, _)) = tail {
            code.push_str(&format!("(void)({e});\n"));
        }
        code
    }

    pub(super) fn emit_if_stmt(&mut self, ei: &syn::ExprIf) -> String {
        let (cond, _) = self.emit_expr(&ei.cond, Some(&Ty::elem("bool")));
        let then = self.emit_block_stmts(&ei.then_branch);
        let mut code = format!("if ({cond}) {{\n{then}}}");
        if let Some((_, e)) = &ei.else_branch {
            match &**e {
                Expr::If(inner) => code.push_str(&format!(" else {}", self.emit_if_stmt(inner))),
                Expr::Block(b) => {
                    let body = self.emit_block_stmts(&b.block);
                    code.push_str(&format!(" else {{\n{body}}}\n"));
                }
                other => {
                    self.unsupported(other, "this `else` branch");
                }
            }
        } else {
            code.push('\n');
        }
        code
    }

    pub(super) fn emit_for(&mut self, f: &syn::ExprForLoop) -> String {
        if f.label.is_some() {
            self.unsupported(f, "a labelled loop");
        }
        if let Expr::MethodCall(mc) = unparen(&f.expr) {
            if mc.args.is_empty() && (mc.method == "iter" || mc.method == "iter_mut") {
                return self.emit_for_elements(f, &mc.receiver);
            }
        }
        // `(a..b).step_by(k)` with a literal `k > 0`, and `(a..b).rev()`: counted loops.
        let (range_expr, order) = match unparen(&f.expr) {
            Expr::MethodCall(mc) if mc.method == "rev" && mc.args.is_empty() => {
                (unparen(&mc.receiver), Order::Reverse)
            }
            Expr::MethodCall(mc) if mc.method == "step_by" && mc.args.len() == 1 => {
                let step = match unparen(&mc.args[0]) {
                    Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(k),
                        ..
                    }) => k.base10_parse::<u64>().ok().filter(|&k| k > 0),
                    _ => None,
                };
                match step {
                    Some(k) => (unparen(&mc.receiver), Order::Step(k)),
                    None => {
                        self.unsupported(
                            &mc.args[0],
                            "a `step_by` step that is not a positive integer literal",
                        );
                        (unparen(&mc.receiver), Order::Step(1))
                    }
                }
            }
            other => (other, Order::Forward),
        };
        if order != Order::Forward && !matches!(range_expr, Expr::Range(_)) {
            self.unsupported(
                range_expr,
                "`rev` or `step_by` of anything but a range `a..b`",
            );
        }
        let bounds = match range_expr {
            Expr::Range(r) => match (&r.start, &r.end) {
                (Some(start), Some(end)) => Some((r, start, end)),
                _ => {
                    self.unsupported(r, "an open range");
                    None
                }
            },
            _ => {
                self.unsupported(&f.expr, "`for` over anything but a range `a..b`");
                None
            }
        };
        let (s, e, ty) = match bounds {
            Some((_, start, end)) => {
                let (s, st) = self.emit_expr(start, None);
                let (e, et) = self.emit_expr(end, Some(&st));
                let ty = match Ty::join(&st, &et) {
                    Ty::IntLit => Ty::elem("i32"),
                    t => t,
                };
                (s, e, ty)
            }
            None => (String::new(), String::new(), Ty::Opaque),
        };
        let name = match &*f.pat {
            Pat::Ident(pi) => pi.ident.to_string(),
            Pat::Wild(_) => format!("_{}", self.tmp()),
            other => {
                self.unsupported(other, "this loop pattern");
                format!("_{}", self.tmp())
            }
        };
        self.env.push();
        let var = self.env.declare(&name, ty.clone(), None);
        let body = self.emit_block_stmts(&f.body);
        self.env.pop();
        let Some((r, _, _)) = bounds else {
            // The body was still searched for untranslatable nodes.
            return PLACEHOLDER.into();
        };
        let cmp = match r.limits {
            syn::RangeLimits::HalfOpen(_) => "<",
            syn::RangeLimits::Closed(_) => "<=",
        };
        let (s, e) = (self.retype_literal(&s, &ty), self.retype_literal(&e, &ty));
        let t = ty.cpp();
        if order != Order::Forward {
            // The iteration count in 64-bit unsigned arithmetic (exact for any integer range),
            // then each value from it: no overflow past the end, and `continue` stays correct.
            let closed = cmp == "<=";
            let span =
                format!("(unsigned long long)__end_{var} - (unsigned long long)__start_{var}");
            let count = match order {
                Order::Step(k) if closed => format!("({span}) / {k}ULL + 1ULL"),
                Order::Step(k) => format!("({span} - 1ULL) / {k}ULL + 1ULL"),
                _ if closed => format!("{span} + 1ULL"),
                _ => span,
            };
            let value = match order {
                Order::Step(k) => format!("(unsigned long long)__start_{var} + __i_{var} * {k}ULL"),
                _ if closed => format!("(unsigned long long)__end_{var} - __i_{var}"),
                _ => format!("(unsigned long long)__end_{var} - 1ULL - __i_{var}"),
            };
            let nonempty = if closed { ">=" } else { ">" };
            return format!(
                "{{
const {t} __start_{var} = {s};
const {t} __end_{var} = {e};
const unsigned long long __n_{var} = __end_{var} {nonempty} __start_{var} ? {count} : 0ULL;
for (unsigned long long __i_{var} = 0; __i_{var} < __n_{var}; ++__i_{var}) {{
{t} {var} = ({t})({value});
{body}}}
}}
"
            );
        }
        if let Some(k) = self.mapped.iter().position(|&p| std::ptr::eq(p, f)) {
            // Each thread runs the iteration of its own index; the thread of the last index (or
            // the only thread, for an empty axis) also runs the iterations past the output's
            // extent, in order, so a mapped loop does exactly what the serial loop does.
            return format!(
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
            );
        }
        format!(
            "for ({t} {var} = {s}, __end_{var} = {e}; {var} {cmp} __end_{var}; ++{var}) {{\n{body}}}\n"
        )
    }

    /// `for x in a.iter()` / `a.iter_mut()` over a view: `x` is a C++ reference to each
    /// element in logical order (`*x` reads or writes it).
    fn emit_for_elements(&mut self, f: &syn::ExprForLoop, view: &Expr) -> String {
        let (v, vt) = self.emit_expr(view, None);
        let elem = match vt {
            Ty::View { elem, .. } => Some(*elem),
            Ty::Unsupported => None,
            _ => {
                self.unsupported(view, "`for` over the iterator of anything but a view");
                None
            }
        };
        let name = match &*f.pat {
            Pat::Ident(pi) => pi.ident.to_string(),
            Pat::Reference(r) if matches!(&*r.pat, Pat::Ident(_)) => match &*r.pat {
                Pat::Ident(pi) => pi.ident.to_string(),
                _ => unreachable!("checked above"),
            },
            Pat::Wild(_) => format!("_{}", self.tmp()),
            other => return self.unsupported(other, "this loop pattern").0,
        };
        let (tv, k) = (self.tmp(), self.tmp());
        self.env.push();
        let var = self
            .env
            .declare(&name, elem.clone().unwrap_or(Ty::Unsupported), None);
        // The body is searched for untranslatable nodes even when the loop is one.
        let body = self.emit_block_stmts(&f.body);
        self.env.pop();
        if elem.is_none() {
            return PLACEHOLDER.into();
        }
        format!(
            "{{\nauto {tv} = {v};\nfor (long long {k} = 0; {k} < {tv}.len(); ++{k}) {{\n\
             auto& {var} = __ufunc_view_at({tv}, {k});\n{body}}}\n}}\n"
        )
    }

    pub(super) fn emit_macro(&mut self, mac: &syn::Macro) -> String {
        let name = macro_name(mac);
        match name.as_str() {
            "panic" | "unreachable" | "todo" | "unimplemented" | "assert" | "debug_assert" => {
                self.emit_panic(mac, &name)
            }
            _ => self.unsupported(mac, &format!("the macro `{name}!`")).0,
        }
    }

    /// `match` on an integer: an if-chain in a lambda that yields the arm's value.
    pub(super) fn emit_match(&mut self, m: &syn::ExprMatch, expected: Option<&Ty>) -> (String, Ty) {
        let (scrutinee, st) = self.emit_expr(&m.expr, None);
        if st == Ty::Unsupported {
            return (scrutinee, st);
        }
        // A helper's result is opaque here, but rustc has checked that the patterns fit it.
        if !(st.is_integer() || st == Ty::elem("bool") || st == Ty::Opaque) {
            // Its arms' patterns would only repeat this error.
            return self.unsupported(&m.expr, "`match` on anything but an integer or bool");
        }
        let s = self.tmp();
        let mut code = format!("auto {s} = {scrutinee};\n");
        let mut ty = Ty::Unit;
        for (k, arm) in m.arms.iter().enumerate() {
            if arm.guard.is_some() {
                self.unsupported(arm, "a match guard");
            }
            let cond = self.pattern_condition(&arm.pat, &s);
            let hint = if ty.is_known() {
                Some(ty.clone())
            } else {
                expected.cloned()
            };
            let body = match &*arm.body {
                Expr::Block(b) if expected.is_none() => {
                    let stmts = self.emit_block_stmts(&b.block);
                    format!("{{\n{stmts}}}")
                }
                e if expected.is_none() && is_statement_like(e) => {
                    format!("{{\n{}}}", self.emit_stmt_expr(e))
                }
                e => {
                    let (v, t) = self.emit_expr(e, hint.as_ref());
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
            return (code, Ty::Unit);
        }
        code.push_str("__ufunc_panic(__UFUNC_PANIC_UNREACHABLE);\nreturn {};\n");
        (format!("[&]() -> {} {{\n{code}}}()", decl_type(&ty)), ty)
    }

    /// The condition under which an integer `match` arm's pattern matches the value named `s`.
    fn pattern_condition(&self, pat: &Pat, s: &str) -> String {
        match pat {
            Pat::Wild(_) => "true".into(),
            Pat::Lit(l) => {
                let (v, _) = self.emit_lit(&l.lit, None);
                format!("{s} == {v}")
            }
            Pat::Or(o) => {
                let parts: Vec<String> = o
                    .cases
                    .iter()
                    .map(|c| self.pattern_condition(c, s))
                    .collect();
                format!("({})", parts.join(" || "))
            }
            Pat::Range(r) => {
                let bound = |e: &Option<Box<Expr>>| -> Option<String> {
                    match e.as_deref() {
                        None => None,
                        Some(Expr::Lit(l)) => Some(self.emit_lit(&l.lit, None).0),
                        Some(Expr::Unary(u)) if matches!(u.op, UnOp::Neg(_)) => match &*u.expr {
                            Expr::Lit(l) => Some(format!("-{}", self.emit_lit(&l.lit, None).0)),
                            other => Some(self.unsupported(other, "this range bound").0),
                        },
                        Some(other) => Some(self.unsupported(other, "this range bound").0),
                    }
                };
                let lo = bound(&r.start).map(|v| format!("{s} >= {v}"));
                let hi = bound(&r.end).map(|v| match r.limits {
                    syn::RangeLimits::HalfOpen(_) => format!("{s} < {v}"),
                    syn::RangeLimits::Closed(_) => format!("{s} <= {v}"),
                });
                match (lo, hi) {
                    (Some(a), Some(b)) => format!("({a} && {b})"),
                    (Some(a), None) | (None, Some(a)) => a,
                    (None, None) => "true".into(),
                }
            }
            other => {
                self.unsupported(
                    other,
                    "this pattern (match arms take integer literals, ranges, `|` and `_`)",
                )
                .0
            }
        }
    }
}

/// How a `for` loop walks its range: as written, `.rev()`, or `.step_by(k)`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    Forward,
    Reverse,
    Step(u64),
}
