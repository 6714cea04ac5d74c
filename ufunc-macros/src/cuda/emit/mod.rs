//! Rust body -> CUDA C++: one `emit_*` function per expression kind, writing into strings. The
//! emitter runs twice over a body: the first pass learns the types of bindings initialised with
//! bare literals from their later uses; the second writes the code with those types.
//! Statements live in `stmt`, expressions in `expr`.
//!
//! Translation is a check: what cannot be translated is recorded at its span in the
//! invocation's [`Errors`] and the emitter goes on with a placeholder, so one compile reports
//! every unsupported node. Only the second pass records (the first walks the same nodes), and
//! so does no part of a body that is emitted again to retype its literals.

mod expr;
mod panics;
mod stmt;

pub(crate) use expr::is_compound as is_compound_assign;
use expr::{is_compound, typed_literal};
pub(crate) use panics::{helper_site_offset, PanicSpec, BODY_SITE_BASE, HELPER_SITES};

use super::types::{Env, Ty};
use crate::errors::Errors;
use crate::lane::macro_name;
use crate::types::{elem_kind, ElemKind};
use quote::ToTokens;
use syn::{BinOp, Block, Expr, Lit, Pat, Stmt, Type, UnOp};

/// What the emitted body refers to outside itself.
#[derive(Default)]
pub(crate) struct Captures {
    /// Paths captured by value (consts, `f32::MAX`...): their C++ names and Rust paths.
    pub consts: Vec<(String, syn::Path)>,
    /// `#[kernel_fn]` helpers called.
    pub helpers: Vec<syn::Ident>,
    /// The body's panic sites, in the order of their codes.
    pub panics: Vec<PanicSpec>,
}

pub(crate) const SUPPORTED: &str = "supported: let, arithmetic, comparisons, casts with \
    `as`, if/else, match on integers, for over ranges (also `.rev()`, `.step_by(k)`), while, \
    loop, break, continue, return, tuples, math methods of f32/f64/Complex, #[kernel_fn] \
    helpers, consts, panic!/assert!, and in gufuncs `a[[i, j]]`, `dim`, `nrows`, `ncols`, \
    `len`, `len_of`, `is_empty`, `shape()[k]`, `sum`, `fill`, `dot` (1-d), `row`, `column` \
    (and `_mut`), `for x in a.iter()`/`iter_mut()` of views";

/// The code an untranslatable node leaves in its place (never compiled: its error stops
/// generation).
const PLACEHOLDER: &str = "__ufunc_unsupported";

/// The Rust element type of `ty` as a `Ty`, if it is one (`usize`/`isize` too: gufunc bodies
/// index with them).
pub(crate) fn ty_of(ty: &Type) -> Option<Ty> {
    if let Type::Path(p) = ty {
        if let Some(id) = p.path.get_ident() {
            if id == "usize" || id == "isize" {
                return Some(Ty::Elem(id.to_string()));
            }
        }
    }
    match ty {
        Type::Tuple(t) => t
            .elems
            .iter()
            .map(ty_of)
            .collect::<Option<Vec<_>>>()
            .map(Ty::Tuple),
        _ => {
            let kind = elem_kind(ty, None)?;
            let name = ty.to_token_stream().to_string().replace(' ', "");
            let name = match kind {
                ElemKind::Complex if name.ends_with("f32>") => "Complex<f32>".to_string(),
                ElemKind::Complex => "Complex<f64>".to_string(),
                _ => name.rsplit("::").next().unwrap_or(&name).to_string(),
            };
            Some(Ty::Elem(name))
        }
    }
}

pub(crate) struct Emitter<'e> {
    /// Where untranslatable nodes are recorded.
    errors: &'e Errors,
    /// While positive, nothing is recorded: the learning pass, and nodes emitted again.
    quiet: u32,
    pub env: Env,
    pub captures: Captures,
    next_tmp: usize,
    next_binding: usize,
    /// The function's return type, for `return` and the tail expression.
    ret: Ty,
    /// Loops run as one thread per index (see `mapping.rs`), outermost first: level `k` takes
    /// its variable from `__ufunc_mapped[k]`.
    pub mapped: Vec<*const syn::ExprForLoop>,
    /// The C++ expression of the code of the function's first panic site (see `panics`): the
    /// kernel's `__UFUNC_PANIC_SITE_BASE` for a body, a code range of its own for a helper,
    /// whose fragment is shared by every kernel that calls it.
    pub site_base: String,
}

impl<'e> Emitter<'e> {
    /// An emitter for a function returning `ret`; `record` false for the learning pass.
    pub(crate) fn new(ret: Ty, errors: &'e Errors, record: bool) -> Self {
        Emitter {
            errors,
            quiet: u32::from(!record),
            env: Env::default(),
            captures: Captures::default(),
            next_tmp: 0,
            next_binding: 0,
            ret,
            mapped: Vec::new(),
            site_base: BODY_SITE_BASE.to_string(),
        }
    }

    /// Records that `node` cannot be translated (`what` names it) and returns a placeholder.
    fn unsupported(&self, node: impl ToTokens, what: &str) -> (String, Ty) {
        self.error(
            node,
            &format!("{what} is not supported in a cuda kernel; {SUPPORTED}"),
        );
        (PLACEHOLDER.into(), Ty::Unsupported)
    }

    /// Records `message` at `node`, unless quiet.
    fn error(&self, node: impl ToTokens, message: &str) {
        if self.quiet == 0 {
            self.errors.spanned(node, message);
        }
    }

    /// Runs `emit` without recording: for a node emitted a second time.
    fn again<T>(&mut self, emit: impl FnOnce(&mut Self) -> T) -> T {
        self.quiet += 1;
        let value = emit(self);
        self.quiet -= 1;
        value
    }

    fn tmp(&mut self) -> String {
        self.next_tmp += 1;
        format!("__ufunc_t{}", self.next_tmp)
    }

    /// The body of a function: statements, the tail expression returned.
    pub(crate) fn emit_fn_body(&mut self, block: &Block) -> String {
        self.next_tmp = 0;
        let ret = self.ret.clone();
        let want_value = ret != Ty::Unit;
        let (mut code, tail) = self.emit_block_parts(block, Some(&ret), want_value);
        if let Some((expr, _)) = tail {
            code.push_str(&format!("return {expr};\n"));
        }
        code
    }

    /// Statements of `block` and, if it ends in an expression, that expression and its type.
    /// With `want_value` false every expression statement is a C++ statement.
    fn emit_block_parts(
        &mut self,
        block: &Block,
        expected: Option<&Ty>,
        want_value: bool,
    ) -> (String, Option<(String, Ty)>) {
        self.env.push();
        let mut code = String::new();
        let mut tail = None;
        let n = block.stmts.len();
        for (i, stmt) in block.stmts.iter().enumerate() {
            match stmt {
                Stmt::Local(l) => code.push_str(&self.emit_let(l)),
                Stmt::Item(syn::Item::Const(c)) => {
                    self.unsupported(c, "a `const` item inside the body (declare it outside)");
                }
                Stmt::Item(item) => {
                    self.unsupported(item, "an item declared inside the body");
                }
                Stmt::Expr(e, semi) => {
                    if want_value && i + 1 == n && semi.is_none() && !is_statement_like(e) {
                        tail = Some(self.emit_expr(e, expected));
                    } else {
                        code.push_str(&self.emit_stmt_expr(e));
                    }
                }
                Stmt::Macro(m) => code.push_str(&self.emit_macro(&m.mac)),
            }
        }
        self.env.pop();
        (code, tail)
    }

    fn emit_let(&mut self, l: &syn::Local) -> String {
        let (pat, annotated) = match &l.pat {
            Pat::Type(pt) => {
                let ty = ty_of(&pt.ty);
                if ty.is_none() {
                    self.error(&pt.ty, "a cuda kernel's bindings have element types");
                }
                (&*pt.pat, ty)
            }
            p => (p, None),
        };
        let Some(init) = &l.init else {
            return self.unsupported(l, "a `let` without a value").0;
        };
        if init.diverge.is_some() {
            return self.unsupported(l, "`let ... else`").0;
        }
        let (value, ty) = self.emit_expr(&init.expr, annotated.as_ref());
        let ty = annotated.unwrap_or(ty);
        match pat {
            Pat::Ident(pi) => {
                let name = pi.ident.to_string();
                // Both passes visit bindings in the same order, so the count identifies them.
                self.next_binding += 1;
                let id = self.next_binding;
                let cpp = self.env.declare(&name, ty.clone(), Some(id));
                let ty = self.env.lookup(&name).unwrap_or(ty);
                let value = self.retype_literal(&value, &ty);
                format!("{} {cpp} = {value};\n", decl_type(&ty))
            }
            Pat::Tuple(pt) => {
                let tmp = self.tmp();
                let mut code = format!("auto {tmp} = {value};\n");
                for (k, p) in pt.elems.iter().enumerate() {
                    let field_ty = match &ty {
                        Ty::Tuple(ts) => ts.get(k).cloned().unwrap_or(Ty::Opaque),
                        _ => Ty::Opaque,
                    };
                    match p {
                        Pat::Ident(pi) => {
                            let name = pi.ident.to_string();
                            let cpp = self.env.declare(&name, field_ty.clone(), None);
                            code.push_str(&format!(
                                "{} {cpp} = {tmp}.f{k};\n",
                                decl_type(&field_ty)
                            ));
                        }
                        Pat::Wild(_) => {}
                        other => {
                            self.unsupported(other, "this tuple pattern");
                        }
                    }
                }
                code
            }
            Pat::Wild(_) => format!("(void)({value});\n"),
            other => self.unsupported(other, "this `let` pattern").0,
        }
    }

    /// Re-spells a bare literal for the type its binding turned out to have.
    fn retype_literal(&self, value: &str, ty: &Ty) -> String {
        let Ty::Elem(t) = ty else {
            return value.to_string();
        };
        if value.parse::<i128>().is_ok() {
            return typed_literal(value, t);
        }
        match value.parse::<f64>() {
            Ok(v) if t == "f32" || t == "f64" => typed_literal(&format!("{v:?}"), t),
            _ => value.to_string(),
        }
    }
}

/// Declared type of a binding: opaque values use `auto`.
fn decl_type(ty: &Ty) -> String {
    match ty {
        // A row of a mutable view is a mutable view in C++ (rustc has checked the writes).
        Ty::Opaque | Ty::Unit | Ty::View { .. } => "auto".into(),
        Ty::Tuple(_) if !tys_known(ty) => "auto".into(),
        t => t.cpp(),
    }
}

fn tys_known(ty: &Ty) -> bool {
    match ty {
        Ty::Tuple(ts) => ts.iter().all(tys_known),
        t => t.is_known(),
    }
}

fn real_of(t: &Ty) -> Ty {
    match t {
        Ty::Elem(c) if c == "Complex<f32>" => Ty::elem("f32"),
        Ty::Elem(c) if c == "Complex<f64>" => Ty::elem("f64"),
        other => other.clone(),
    }
}

fn unparen(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => unparen(&p.expr),
        Expr::Group(g) => unparen(&g.expr),
        e => e,
    }
}

/// Loops, lets-less control flow and assignments are statements in C++.
fn is_statement_like(e: &Expr) -> bool {
    matches!(
        e,
        Expr::ForLoop(_)
            | Expr::While(_)
            | Expr::Loop(_)
            | Expr::Break(_)
            | Expr::Continue(_)
            | Expr::Return(_)
            | Expr::Assign(_)
            | Expr::Macro(_)
    ) || matches!(e, Expr::Binary(b) if is_compound(&b.op))
        || matches!(e, Expr::If(i) if i.else_branch.is_none())
}
