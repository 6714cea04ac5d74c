//! Expressions: literals, paths, operators, calls, methods, indexing.

use super::*;

impl Emitter<'_> {
    /// An expression, with the type it has. `expected` types bare literals.
    pub(crate) fn emit_expr(&mut self, e: &Expr, expected: Option<&Ty>) -> (String, Ty) {
        match e {
            Expr::Lit(l) => self.emit_lit(&l.lit, expected),
            Expr::Paren(p) => {
                let (c, t) = self.emit_expr(&p.expr, expected);
                (format!("({c})"), t)
            }
            Expr::Group(g) => self.emit_expr(&g.expr, expected),
            Expr::Path(p) => self.emit_path(p),
            Expr::Binary(b) => self.emit_binary(b, expected),
            Expr::Unary(u) => self.emit_unary(u, expected),
            Expr::Cast(c) => {
                let (v, _) = self.emit_expr(&c.expr, None);
                let Some(to) = ty_of(&c.ty) else {
                    return self.unsupported(&c.ty, "a cast to a non-element type");
                };
                (format!("__ufunc_cast<{}>({v})", to.cpp()), to)
            }
            Expr::MethodCall(m) => self.emit_method(m, expected),
            Expr::Call(c) => self.emit_call(c, expected),
            Expr::Tuple(t) => {
                let exp: Vec<Option<Ty>> = match expected {
                    Some(Ty::Tuple(ts)) => ts.iter().cloned().map(Some).collect(),
                    _ => vec![None; t.elems.len()],
                };
                let mut parts = Vec::new();
                let mut tys = Vec::new();
                for (k, x) in t.elems.iter().enumerate() {
                    let (c, ty) = self.emit_expr(x, exp.get(k).and_then(|t| t.as_ref()));
                    parts.push(c);
                    tys.push(ty);
                }
                let ty = Ty::Tuple(tys);
                if ty.is_known() && tys_known(&ty) {
                    (format!("{}{{{}}}", ty.cpp(), parts.join(", ")), ty)
                } else {
                    (
                        format!("__ufunc_make_tuple({})", parts.join(", ")),
                        Ty::Opaque,
                    )
                }
            }
            Expr::Field(f) => {
                let (base, bt) = self.emit_expr(&f.base, None);
                match &f.member {
                    syn::Member::Unnamed(i) => {
                        let k = i.index as usize;
                        let ty = match bt {
                            Ty::Tuple(ts) => ts.get(k).cloned().unwrap_or(Ty::Opaque),
                            _ => Ty::Opaque,
                        };
                        (format!("{base}.f{k}"), ty)
                    }
                    syn::Member::Named(n) if n == "re" || n == "im" => {
                        let ty = match &bt {
                            Ty::Elem(c) if c == "Complex<f32>" => Ty::elem("f32"),
                            Ty::Elem(c) if c == "Complex<f64>" => Ty::elem("f64"),
                            _ => Ty::Opaque,
                        };
                        (format!("{base}.{n}"), ty)
                    }
                    syn::Member::Named(n) => self.unsupported(n, "this field"),
                }
            }
            Expr::If(ei) => self.emit_if_expr(ei, expected),
            Expr::Block(b) => {
                let (code, tail) = self.emit_block_parts(&b.block, expected, true);
                match tail {
                    Some((v, t)) if code.is_empty() => (format!("({v})"), t),
                    Some((v, t)) => (format!("[&]() {{\n{code}return {v};\n}}()"), t),
                    None => self.unsupported(b, "a block without a value used as a value"),
                }
            }
            Expr::Match(m) => match self.emit_match(m, expected) {
                (_, Ty::Unit) => self.unsupported(m, "a `match` without a value used as a value"),
                value => value,
            },
            Expr::Assign(a) => {
                let (target, tt) = self.emit_expr(&a.left, None);
                let (value, vt) = self.emit_expr(&a.right, Some(&tt));
                if let Expr::Path(p) = unparen(&a.left) {
                    if let Some(id) = p.path.get_ident() {
                        self.env.refine(&id.to_string(), &vt);
                    }
                }
                (format!("{target} = {value}"), Ty::Unit)
            }
            Expr::Macro(m) => self.unsupported(m, &format!("the macro `{}!`", macro_name(&m.mac))),
            Expr::Reference(r) => self.unsupported(r, "a reference"),
            Expr::Closure(c) => self.unsupported(c, "a closure"),
            Expr::Index(i) => self.emit_index(i),
            Expr::Range(r) => self.unsupported(r, "a range outside `for`"),
            Expr::Try(t) => self.unsupported(t, "the `?` operator"),
            Expr::Unsafe(u) => self.unsupported(u, "an `unsafe` block"),
            Expr::Struct(s) => self.unsupported(s, "a struct literal"),
            Expr::Array(a) => self.unsupported(a, "an array"),
            Expr::Repeat(a) => self.unsupported(a, "an array"),
            other => self.unsupported(other, "this expression"),
        }
    }

    pub(super) fn emit_path(&mut self, p: &syn::ExprPath) -> (String, Ty) {
        if p.qself.is_some() {
            return self.unsupported(p, "a qualified path");
        }
        if let Some(id) = p.path.get_ident() {
            let name = id.to_string();
            if let (Some(ty), Some(cpp)) = (self.env.lookup(&name), self.env.cpp_name(&name)) {
                return (cpp, ty);
            }
        }
        // Anything else is a value from the surrounding scope, captured by value.
        let cpp = format!(
            "__ufunc_const_{}",
            p.path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect::<Vec<_>>()
                .join("_")
        );
        if !self.captures.consts.iter().any(|(c, _)| *c == cpp) {
            self.captures.consts.push((cpp.clone(), p.path.clone()));
        }
        (cpp, Ty::Opaque)
    }

    pub(super) fn emit_binary(
        &mut self,
        b: &syn::ExprBinary,
        expected: Option<&Ty>,
    ) -> (String, Ty) {
        use BinOp::*;
        let compare = matches!(b.op, Eq(_) | Ne(_) | Lt(_) | Le(_) | Gt(_) | Ge(_));
        let logical = matches!(b.op, And(_) | Or(_));
        let shift = matches!(b.op, Shl(_) | Shr(_) | ShlAssign(_) | ShrAssign(_));
        let bool_ty = Ty::elem("bool");
        let left_hint = if logical {
            Some(&bool_ty)
        } else if compare || shift {
            None
        } else {
            expected
        };
        let (l, lt) = self.emit_expr(&b.left, left_hint);
        let right_hint = if shift {
            None
        } else if logical {
            Some(bool_ty.clone())
        } else if lt.is_known() {
            Some(lt.clone())
        } else {
            left_hint.cloned()
        };
        let (r, rt) = self.emit_expr(&b.right, right_hint.as_ref());
        // A literal on the left takes the type the right side turned out to have.
        let (l, lt) = if !lt.is_known() && rt.is_known() && !shift && !logical {
            self.again(|e| e.emit_expr(&b.left, Some(&rt)))
        } else {
            (l, lt)
        };
        // A literal-initialised binding learns its type from what it meets.
        if !shift && !logical {
            for (side, other) in [(&b.left, &rt), (&b.right, &lt)] {
                if let Expr::Path(p) = unparen(side) {
                    if let Some(id) = p.path.get_ident() {
                        self.env.refine(&id.to_string(), other);
                    }
                }
            }
        }
        // `Complex<T> op T` and `T op Complex<T>` are complex (the prelude defines them as
        // num-complex does).
        let is_complex = |t: &Ty| matches!(t, Ty::Elem(c) if c.starts_with("Complex"));
        let ty = if is_complex(&rt) && !is_complex(&lt) && !shift {
            rt.clone()
        } else {
            Ty::join(&lt, &rt)
        };
        // An opaque operand meeting a literal: the literal takes the operand's C++ type. An
        // operand holding a lambda (a block, a `match`) is bound to a variable first: C++17
        // allows no lambda inside `decltype`.
        let mut bound = None;
        let mut bind = |e: String| {
            if is_compound(&b.op) || !e.contains("[&]") {
                return e;
            }
            bound = Some(format!("auto __ufunc_opaque = {e};"));
            "__ufunc_opaque".to_string()
        };
        let (l, r) = match (&lt, &rt) {
            (Ty::Opaque, Ty::FloatLit | Ty::IntLit) if !shift => {
                let l = bind(l);
                let r = format!("((decltype({l}))({r}))");
                (l, r)
            }
            // A compound assignment's left side is a place, which must stay one.
            (Ty::FloatLit | Ty::IntLit, Ty::Opaque) if !shift && !is_compound(&b.op) => {
                let r = bind(r);
                (format!("((decltype({r}))({l}))"), r)
            }
            _ => (l, r),
        };
        let in_scope = |value: String| match &bound {
            Some(binding) => format!("[&]() {{ {binding} return {value}; }}()"),
            None => value,
        };
        if compare || logical {
            let op = b.op.to_token_stream().to_string();
            return (in_scope(format!("{l} {op} {r}")), bool_ty);
        }
        let Some((name, symbol, compound)) = arith(&b.op) else {
            return self.unsupported(b, "this operator");
        };
        let floating = ty.is_float() || matches!(&ty, Ty::Elem(c) if c.starts_with("Complex"));
        let infix = floating && matches!(name, "add" | "sub" | "mul" | "div");
        let value = if infix {
            if compound {
                format!("({l} {symbol} {r})")
            } else {
                format!("{l} {symbol} {r}")
            }
        } else {
            format!("__ufunc_{name}({l}, {r})")
        };
        if compound {
            (format!("{l} = {value}"), Ty::Unit)
        } else {
            (in_scope(value), if shift { lt } else { ty })
        }
    }

    pub(super) fn emit_unary(&mut self, u: &syn::ExprUnary, expected: Option<&Ty>) -> (String, Ty) {
        let (v, t) = self.emit_expr(&u.expr, expected);
        match u.op {
            // An opaque operand (a helper's result) may be a small integer that C++'s `-` would
            // promote to int: `__ufunc_neg` keeps its type (and wraps, as Rust does).
            UnOp::Neg(_) if t.is_float() || t.is_complex() => (format!("-{v}"), t),
            UnOp::Neg(_) => (format!("__ufunc_neg({v})"), t),
            UnOp::Not(_) if t == Ty::elem("bool") => (format!("!{v}"), t),
            UnOp::Not(_) => (format!("__ufunc_not({v})"), t),
            UnOp::Deref(_) => match t {
                Ty::Ptr(elem) => (format!("(*{v})"), *elem),
                // A binding of `for x in a.iter()`: a C++ reference, used as its value.
                Ty::Elem(_) => (v, t),
                Ty::Unsupported => (v, t),
                _ => self.unsupported(u, "dereferencing anything but a `&mut` output"),
            },
            _ => self.unsupported(u, "this operator"),
        }
    }

    pub(super) fn emit_if_expr(&mut self, ei: &syn::ExprIf, expected: Option<&Ty>) -> (String, Ty) {
        let Some((_, else_expr)) = &ei.else_branch else {
            let c = self.emit_if_stmt(ei);
            return (format!("[&]() {{\n{c}}}()"), Ty::Unit);
        };
        let (cond, _) = self.emit_expr(&ei.cond, Some(&Ty::elem("bool")));
        let then_expr = Expr::Block(syn::ExprBlock {
            attrs: vec![],
            label: None,
            block: ei.then_branch.clone(),
        });
        let (a, at) = self.emit_expr(&then_expr, expected);
        let hint = if at.is_known() {
            Some(at.clone())
        } else {
            expected.cloned()
        };
        let (b, bt) = self.emit_expr(else_expr, hint.as_ref());
        let (a, at) = if !at.is_known() && bt.is_known() {
            self.again(|e| e.emit_expr(&then_expr, Some(&bt)))
        } else {
            (a, at)
        };
        (format!("({cond} ? {a} : {b})"), Ty::join(&at, &bt))
    }

    /// `a[[i, j]]` on a view (a reference, so it can be assigned), or `a.shape()[k]`.
    pub(super) fn emit_index(&mut self, i: &syn::ExprIndex) -> (String, Ty) {
        let (base, bt) = self.emit_expr(&i.expr, None);
        let usize_ty = Ty::elem("usize");
        match bt {
            Ty::View { elem, rank, .. } => {
                let indices: Vec<&Expr> = match unparen(&i.index) {
                    Expr::Array(a) => a.elems.iter().collect(),
                    e => vec![e],
                };
                if indices.len() != rank {
                    return self.unsupported(
                        &i.index,
                        &format!("indexing a {rank}-d view with {} indices", indices.len()),
                    );
                }
                let mut parts = Vec::new();
                for e in indices {
                    parts.push(self.emit_expr(e, Some(&usize_ty)).0);
                }
                (format!("{base}({})", parts.join(", ")), *elem)
            }
            Ty::Shape(view) => {
                let (k, _) = self.emit_expr(&i.index, Some(&usize_ty));
                (format!("((usize){view}.shape[{k}])"), usize_ty)
            }
            Ty::Unsupported => (base, bt),
            _ => self.unsupported(i, "indexing anything but a gufunc view"),
        }
    }

    /// `dim()`, `nrows()`, `ncols()`, `len()`, `is_empty()`, `shape()` and the other methods of
    /// a view the prelude implements (`sum`, `fill`, `dot`, `row`, `column`, `len_of`).
    pub(super) fn emit_view_method(
        &mut self,
        m: &syn::ExprMethodCall,
        recv: &str,
        elem: &Ty,
        rank: usize,
    ) -> (String, Ty) {
        let usize_ty = Ty::elem("usize");
        let axis = |k: usize| format!("((usize){recv}.shape[{k}])");
        match m.method.to_string().as_str() {
            "dim" if rank == 1 => (axis(0), usize_ty),
            "dim" => (
                format!(
                    "__ufunc_make_tuple({})",
                    (0..rank).map(axis).collect::<Vec<_>>().join(", ")
                ),
                Ty::Tuple(vec![usize_ty; rank]),
            ),
            "nrows" if rank == 2 => (axis(0), usize_ty),
            "ncols" if rank == 2 => (axis(1), usize_ty),
            "len" => (format!("((usize){recv}.len())"), usize_ty),
            "is_empty" => (format!("({recv}.len() == 0)"), Ty::elem("bool")),
            "shape" => (String::new(), Ty::Shape(recv.to_string())),
            "len_of" => match m.args.first().map(unparen) {
                Some(Expr::Call(c)) if c.args.len() == 1 => {
                    let (k, _) = self.emit_expr(&c.args[0], Some(&usize_ty));
                    (format!("((usize){recv}.shape[{k}])"), usize_ty)
                }
                _ => self.unsupported(m, "`len_of` with anything but `Axis(k)`"),
            },
            "sum" => (format!("__ufunc_view_sum({recv})"), elem.clone()),
            "fill" => {
                let (v, _) = match m.args.first() {
                    Some(a) => self.emit_expr(a, Some(elem)),
                    None => return self.unsupported(m, "`fill` without a value"),
                };
                (format!("__ufunc_view_fill({recv}, {v})"), Ty::Unit)
            }
            "dot" if rank == 1 => {
                let other = match m.args.first().map(unparen) {
                    Some(Expr::Reference(r)) => &*r.expr,
                    Some(e) => e,
                    None => return self.unsupported(m, "`dot` without an operand"),
                };
                match self.emit_expr(other, None) {
                    (b, Ty::View { rank: 1, .. }) => {
                        (format!("__ufunc_view_dot({recv}, {b})"), elem.clone())
                    }
                    (b, Ty::Unsupported) => (b, Ty::Unsupported),
                    _ => self.unsupported(other, "`dot` with anything but a 1-d view"),
                }
            }
            "row" | "row_mut" | "column" | "column_mut" if rank == 2 => {
                let axis = if m.method.to_string().starts_with("row") {
                    0
                } else {
                    1
                };
                let (i, _) = match m.args.first() {
                    Some(a) => self.emit_expr(a, Some(&usize_ty)),
                    None => return self.unsupported(m, "a row or column without an index"),
                };
                let ty = Ty::View {
                    elem: Box::new(elem.clone()),
                    rank: 1,
                    mutable: m.method.to_string().ends_with("_mut"),
                };
                (format!("__ufunc_view_lane({recv}, {axis}, {i})"), ty)
            }
            "iter" | "iter_mut" => self.unsupported(
                &m.method,
                "`iter()` other than in `for x in a.iter()` (for a sum, `a.sum()`)",
            ),
            other => self.unsupported(
                &m.method,
                &format!("the view method `{other}` (write it as a loop over indices)"),
            ),
        }
    }

    pub(super) fn emit_method(
        &mut self,
        m: &syn::ExprMethodCall,
        expected: Option<&Ty>,
    ) -> (String, Ty) {
        let name = m.method.to_string();
        // The expected type reaches the receiver only through methods that return its type
        // (`(100 + x).count_ones()` is a u32 whatever `x` is: its literal is `x`'s type).
        let keeps_type = !matches!(
            name.as_str(),
            "count_ones"
                | "is_nan"
                | "is_finite"
                | "is_infinite"
                | "is_sign_negative"
                | "is_sign_positive"
                | "norm"
                | "norm_sqr"
                | "arg"
        );
        let (recv, rt) = self.emit_expr(&m.receiver, expected.filter(|_| keeps_type));
        match rt {
            Ty::View { elem, rank, .. } => return self.emit_view_method(m, &recv, &elem, rank),
            Ty::Unsupported => return (recv, rt),
            _ => {}
        }
        let arg_hint = match name.as_str() {
            "powi" => Some(Ty::elem("i32")),
            "powf" if matches!(&rt, Ty::Elem(c) if c.starts_with("Complex")) => Some(real_of(&rt)),
            _ if rt.is_known() => Some(rt.clone()),
            _ => None,
        };
        let mut args = vec![recv];
        for a in &m.args {
            args.push(self.emit_expr(a, arg_hint.as_ref()).0);
        }
        let result = match name.as_str() {
            "exp" | "exp2" | "exp_m1" | "ln" | "ln_1p" | "log2" | "log10" | "sin" | "cos"
            | "tan" | "asin" | "acos" | "atan" | "sinh" | "cosh" | "tanh" | "asinh" | "acosh"
            | "atanh" | "sqrt" | "cbrt" | "abs" | "floor" | "ceil" | "round" | "trunc"
            | "signum" | "recip" | "powi" | "powf" | "mul_add" | "min" | "max" | "atan2"
            | "hypot" | "clamp" | "to_degrees" | "to_radians" | "copysign" | "fract" => rt.clone(),
            "is_nan" | "is_finite" | "is_infinite" | "is_sign_negative" | "is_sign_positive" => {
                Ty::elem("bool")
            }
            "conj" => rt.clone(),
            "norm" | "norm_sqr" | "arg" => real_of(&rt),
            "wrapping_add" | "wrapping_sub" | "wrapping_mul" | "wrapping_neg" | "wrapping_abs" => {
                rt.clone()
            }
            "count_ones" => Ty::elem("u32"),
            _ => return self.unsupported(&m.method, &format!("the method `{name}`")),
        };
        let func = match name.as_str() {
            "wrapping_add" => "__ufunc_add".to_string(),
            "wrapping_sub" => "__ufunc_sub".to_string(),
            "wrapping_mul" => "__ufunc_mul".to_string(),
            "wrapping_neg" => "__ufunc_neg".to_string(),
            "wrapping_abs" => "__ufunc_abs".to_string(),
            n => format!("__ufunc_{n}"),
        };
        (format!("{func}({})", args.join(", ")), result)
    }

    pub(super) fn emit_call(&mut self, c: &syn::ExprCall, expected: Option<&Ty>) -> (String, Ty) {
        let Expr::Path(p) = unparen(&c.func) else {
            return self.unsupported(&c.func, "calling this");
        };
        let segs: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        match segs
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice()
        {
            [helper] if helper.starts_with(|ch: char| ch.is_lowercase()) => {
                let mut args = Vec::new();
                for a in &c.args {
                    args.push(self.emit_expr(a, None).0);
                }
                let ident = p.path.segments[0].ident.clone();
                if !self.captures.helpers.contains(&ident) {
                    self.captures.helpers.push(ident);
                }
                (
                    format!("__ufunc_helper_{helper}({})", args.join(", ")),
                    Ty::Opaque,
                )
            }
            [ty @ ("f32" | "f64"), method] => {
                let hint = Ty::elem(ty);
                let mut args = Vec::new();
                for a in &c.args {
                    args.push(self.emit_expr(a, Some(&hint)).0);
                }
                let ret = if method.starts_with("is_") {
                    Ty::elem("bool")
                } else {
                    hint
                };
                (format!("__ufunc_{method}({})", args.join(", ")), ret)
            }
            ["Complex", "new"] => {
                let real = match expected {
                    Some(t @ Ty::Elem(c)) if c.starts_with("Complex") => real_of(t),
                    _ => Ty::Opaque,
                };
                let hint = if real.is_known() {
                    Some(real.clone())
                } else {
                    None
                };
                let mut args = Vec::new();
                let mut arg_ty = Ty::Opaque;
                for a in &c.args {
                    let (v, t) = self.emit_expr(a, hint.as_ref());
                    arg_ty = Ty::join(&arg_ty, &t);
                    args.push(v);
                }
                let ty = match (&real, &arg_ty) {
                    (Ty::Elem(r), _) | (_, Ty::Elem(r)) => Ty::Elem(format!("Complex<{r}>")),
                    _ => Ty::Opaque,
                };
                (format!("__ufunc_complex({})", args.join(", ")), ty)
            }
            [modules @ .., name] if is_function_path(modules, name) => {
                let path = segs.join("::");
                self.error(
                    &c.func,
                    &format!(
                        "calling `{path}` is not supported in a cuda kernel: only the body of a \
                         #[kernel_fn] helper called by its plain name can be translated to CUDA; \
                         mark `{name}` #[kernel_fn] and call it as `{name}(..)`"
                    ),
                );
                for a in &c.args {
                    self.emit_expr(a, None);
                }
                (PLACEHOLDER.into(), Ty::Unsupported)
            }
            _ => {
                let unsupported = self.unsupported(
                    &c.func,
                    "calling a function that is not a #[kernel_fn] helper",
                );
                for a in &c.args {
                    self.emit_expr(a, None);
                }
                unsupported
            }
        }
    }

    /// A Rust literal; unsuffixed numbers take the expected type.
    pub(super) fn emit_lit(&self, lit: &Lit, expected: Option<&Ty>) -> (String, Ty) {
        let expected_elem = match expected {
            Some(Ty::Elem(t)) => Some(t.as_str()),
            _ => None,
        };
        match lit {
            Lit::Bool(b) => (b.value.to_string(), Ty::elem("bool")),
            Lit::Float(f) => {
                let digits = f.base10_digits().to_string();
                match f.suffix() {
                    "" => match expected_elem {
                        Some(t @ ("f32" | "f64")) => (typed_literal(&digits, t), Ty::elem(t)),
                        Some(t) if t.starts_with("Complex") => {
                            let real = if t.ends_with("f32>") { "f32" } else { "f64" };
                            (typed_literal(&digits, real), Ty::elem(real))
                        }
                        _ => (typed_literal(&digits, "f64"), Ty::FloatLit),
                    },
                    s => (typed_literal(&digits, s), Ty::elem(s)),
                }
            }
            Lit::Int(i) => {
                let digits = i.base10_digits().to_string();
                match i.suffix() {
                    "" => match expected_elem {
                        Some(t) if t != "bool" && !t.starts_with("Complex") => {
                            (typed_literal(&digits, t), Ty::elem(t))
                        }
                        _ => (digits, Ty::IntLit),
                    },
                    s => (typed_literal(&digits, s), Ty::elem(s)),
                }
            }
            other => self.unsupported(other, "this literal"),
        }
    }
}

/// An arithmetic or bitwise operator: the runtime helper suffix, the C++ symbol, and whether it
/// is the compound-assignment form.
pub(super) fn arith(op: &BinOp) -> Option<(&'static str, &'static str, bool)> {
    use BinOp::*;
    Some(match op {
        Add(_) => ("add", "+", false),
        Sub(_) => ("sub", "-", false),
        Mul(_) => ("mul", "*", false),
        Div(_) => ("div", "/", false),
        Rem(_) => ("rem", "%", false),
        BitAnd(_) => ("and", "&", false),
        BitOr(_) => ("or", "|", false),
        BitXor(_) => ("xor", "^", false),
        Shl(_) => ("shl", "<<", false),
        Shr(_) => ("shr", ">>", false),
        AddAssign(_) => ("add", "+", true),
        SubAssign(_) => ("sub", "-", true),
        MulAssign(_) => ("mul", "*", true),
        DivAssign(_) => ("div", "/", true),
        RemAssign(_) => ("rem", "%", true),
        BitAndAssign(_) => ("and", "&", true),
        BitOrAssign(_) => ("or", "|", true),
        BitXorAssign(_) => ("xor", "^", true),
        ShlAssign(_) => ("shl", "<<", true),
        ShrAssign(_) => ("shr", ">>", true),
        _ => return None,
    })
}

pub(crate) fn is_compound(op: &BinOp) -> bool {
    arith(op).is_some_and(|(_, _, c)| c)
}

/// A literal written for an element type: `2.0` as f32 is `2.0f`, as an integer `((i64)2)`.
pub(crate) fn typed_literal(text: &str, ty: &str) -> String {
    match ty {
        "f32" => {
            let t = if text.contains(['.', 'e', 'E']) {
                text.to_string()
            } else {
                format!("{text}.0")
            };
            format!("{t}f")
        }
        "f64" => {
            if text.contains(['.', 'e', 'E']) {
                text.to_string()
            } else {
                format!("{text}.0")
            }
        }
        "bool" => text.to_string(),
        t if t.starts_with("Complex") => format!("__ufunc_complex({text}, 0.0)"),
        t => format!("(({t}){text})"),
    }
}

/// Whether `modules::name` names a free function (`self::helper`, `crate::math::helper`): every
/// segment lower-case and none a primitive type (`i64::abs` is a method).
fn is_function_path(modules: &[&str], name: &str) -> bool {
    let lower = |s: &str| s.starts_with(|ch: char| ch.is_lowercase() || ch == '_');
    let primitive =
        |s: &str| crate::types::INTEGER_NAMES.contains(&s) || ["f32", "f64", "bool"].contains(&s);
    lower(name) && modules.iter().all(|m| lower(m) && !primitive(m))
}
