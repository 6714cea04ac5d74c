//! Which loops of a gufunc core can run as one GPU thread per output element instead of one
//! thread per loop item (Numba's CUDA gufuncs run one thread per item, so a batch of one matrix
//! is one thread). The core must be: `let` statements, then a perfect nest of `for` loops over
//! ranges whose variables index the leading axes of the only output, `c[[i, j, ..]]`, and a body
//! that carries nothing from one iteration to another: it assigns only to its own locals and to
//! `c` at exactly those indices, reads `c` only there, and has no `return` and no
//! `break`/`continue` of a mapped loop. Each thread then runs the `let`s and the body for its
//! own indices.

use syn::visit::Visit;
use syn::{Block, Expr, ExprForLoop, Ident, Pat, Stmt};

/// The loops to map, outermost first (empty when the core does not have the shape above).
pub(crate) fn mapped_loops<'a>(
    block: &'a Block,
    out: &Ident,
    out_rank: usize,
) -> Vec<&'a ExprForLoop> {
    let Some((last, prefix)) = block.stmts.split_last() else {
        return Vec::new();
    };
    let mut outer_names = Vec::new();
    for stmt in prefix {
        let Stmt::Local(local) = stmt else {
            return Vec::new();
        };
        if has_effects(local) {
            return Vec::new();
        }
        collect_names(&local.pat, &mut outer_names);
    }
    let Some(mut current) = as_for(last) else {
        return Vec::new();
    };
    let mut nest = Vec::new();
    loop {
        let Pat::Ident(var) = &*current.pat else {
            return Vec::new();
        };
        if current.label.is_some() || !matches!(&*current.expr, Expr::Range(_)) {
            return Vec::new();
        }
        outer_names.push(var.ident.to_string());
        nest.push(current);
        match current.body.stmts.as_slice() {
            [inner] if nest.len() < out_rank => match as_for(inner) {
                Some(f) => current = f,
                None => break,
            },
            _ => break,
        }
    }
    let vars: Vec<String> = nest
        .iter()
        .map(|f| match &*f.pat {
            Pat::Ident(p) => p.ident.to_string(),
            _ => unreachable!("checked above"),
        })
        .collect();
    let body = &nest.last().expect("one loop at least").body;
    let mut check = Independent {
        out: out.to_string(),
        vars: &vars,
        outer: &outer_names,
        own: Vec::new(),
        loop_depth: 0,
        ok: true,
    };
    collect_block_names(body, &mut check.own);
    check.visit_block(body);
    if check.ok {
        nest
    } else {
        Vec::new()
    }
}

fn as_for(stmt: &Stmt) -> Option<&ExprForLoop> {
    match stmt {
        Stmt::Expr(Expr::ForLoop(f), _) => Some(f),
        _ => None,
    }
}

/// Whether a `let` initialiser assigns, loops or calls a macro (anything but a pure value).
fn has_effects(local: &syn::Local) -> bool {
    struct Effects(bool);
    impl<'ast> Visit<'ast> for Effects {
        fn visit_expr(&mut self, e: &'ast Expr) {
            match e {
                Expr::Assign(_)
                | Expr::ForLoop(_)
                | Expr::While(_)
                | Expr::Loop(_)
                | Expr::Macro(_)
                | Expr::Return(_) => self.0 = true,
                Expr::Binary(b) if super::emit::is_compound_assign(&b.op) => self.0 = true,
                _ => syn::visit::visit_expr(self, e),
            }
        }
    }
    let mut v = Effects(false);
    v.visit_local(local);
    v.0
}

fn collect_names(pat: &Pat, names: &mut Vec<String>) {
    struct Names<'n>(&'n mut Vec<String>);
    impl<'ast> Visit<'ast> for Names<'_> {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.0.push(p.ident.to_string());
        }
    }
    Names(names).visit_pat(pat);
}

/// Every name a block binds, anywhere inside it (`let` and `for` patterns).
fn collect_block_names(block: &Block, names: &mut Vec<String>) {
    struct Bound<'n>(&'n mut Vec<String>);
    impl<'ast> Visit<'ast> for Bound<'_> {
        fn visit_local(&mut self, l: &'ast syn::Local) {
            collect_names(&l.pat, self.0);
            syn::visit::visit_local(self, l);
        }
        fn visit_expr_for_loop(&mut self, f: &'ast ExprForLoop) {
            collect_names(&f.pat, self.0);
            syn::visit::visit_expr_for_loop(self, f);
        }
    }
    Bound(names).visit_block(block);
}

/// Checks that the innermost body's iterations are independent (see the module docs).
struct Independent<'a> {
    out: String,
    vars: &'a [String],
    outer: &'a [String],
    own: Vec<String>,
    loop_depth: usize,
    ok: bool,
}

impl Independent<'_> {
    /// Whether `e` is `c[[i, j, ..]]` with the mapped variables leading.
    fn is_own_element(&self, e: &Expr) -> bool {
        let Expr::Index(ix) = e else { return false };
        if !is_path(&ix.expr, &self.out) {
            return false;
        }
        let indices: Vec<&Expr> = match &*ix.index {
            Expr::Array(a) => a.elems.iter().collect(),
            single => vec![single],
        };
        indices.len() >= self.vars.len()
            && self.vars.iter().zip(&indices).all(|(v, e)| is_path(e, v))
    }

    /// Whether an assignment to `target` stays inside one iteration.
    fn assigns_own(&self, target: &Expr) -> bool {
        if self.is_own_element(target) {
            return true;
        }
        let mut root = target;
        while let Expr::Field(f) = root {
            root = &f.base;
        }
        match root {
            Expr::Path(p) => p.path.get_ident().is_some_and(|id| {
                let name = id.to_string();
                self.own.contains(&name) && !self.outer.contains(&name)
            }),
            _ => false,
        }
    }
}

fn is_path(e: &Expr, name: &str) -> bool {
    let e = match e {
        Expr::Paren(p) => &*p.expr,
        e => e,
    };
    matches!(e, Expr::Path(p) if p.path.is_ident(name))
}

impl<'ast> Visit<'ast> for Independent<'_> {
    fn visit_expr(&mut self, e: &'ast Expr) {
        match e {
            Expr::Assign(a) => {
                self.ok &= self.assigns_own(&a.left);
                // The target's own indices are read; check them, not the target.
                if let Expr::Index(ix) = &*a.left {
                    self.visit_expr(&ix.index);
                }
                self.visit_expr(&a.right);
            }
            Expr::Binary(b) if super::emit::is_compound_assign(&b.op) => {
                self.ok &= self.assigns_own(&b.left);
                if let Expr::Index(ix) = &*b.left {
                    self.visit_expr(&ix.index);
                }
                self.visit_expr(&b.right);
            }
            Expr::Index(ix) if is_path(&ix.expr, &self.out) => {
                self.ok &= self.is_own_element(e);
                self.visit_expr(&ix.index);
            }
            Expr::Return(_) => self.ok = false,
            Expr::Break(_) | Expr::Continue(_) if self.loop_depth == 0 => self.ok = false,
            Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) => {
                self.loop_depth += 1;
                syn::visit::visit_expr(self, e);
                self.loop_depth -= 1;
            }
            // The output passed anywhere else (a method taking `&mut self`, a helper) could
            // touch other elements; shape queries on it are fine.
            Expr::MethodCall(m) if is_path(&m.receiver, &self.out) => {
                let name = m.method.to_string();
                self.ok &= matches!(
                    name.as_str(),
                    "dim" | "shape" | "nrows" | "ncols" | "len" | "is_empty"
                );
                for arg in &m.args {
                    self.visit_expr(arg);
                }
            }
            Expr::Path(p) if p.path.is_ident(&self.out) => self.ok = false,
            _ => syn::visit::visit_expr(self, e),
        }
    }

    fn visit_item(&mut self, _: &'ast syn::Item) {
        self.ok = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapped(src: &str, rank: usize) -> usize {
        let block: Block = syn::parse_str(src).unwrap();
        let out: Ident = syn::parse_str("c").unwrap();
        mapped_loops(&block, &out, rank).len()
    }

    #[test]
    fn independent_nests_are_mapped() {
        let matmul = "{
            let (m, n) = a.dim();
            let p = b.ncols();
            for i in 0..m {
                for j in 0..p {
                    let mut acc = 0.0;
                    for k in 0..n { acc += a[[i, k]] * b[[k, j]]; if acc > 1e30 { break; } }
                    c[[i, j]] = acc;
                }
            }
        }";
        assert_eq!(mapped(matmul, 2), 2);
        // Only as deep as the output's rank, and a row per thread when the nest is shallower.
        assert_eq!(mapped(matmul, 1), 1);
        let rows =
            "{ for i in 0..c.nrows() { for j in 0..c.ncols() { c[[i, j]] = 1.0; } let x = 1; } }";
        assert_eq!(mapped(rows, 2), 1);
        let triangle = "{ for i in 0..n { for j in 0..=i { c[[i, j]] += a[[i, j]]; } } }";
        assert_eq!(mapped(triangle, 2), 2);
    }

    #[test]
    fn carried_state_keeps_one_thread_per_item() {
        // An accumulator declared outside the nest.
        assert_eq!(
            mapped(
                "{ let mut s = 0.0; for i in 0..n { s += 1.0; c[[i]] = s; } }",
                1
            ),
            0
        );
        // Another element of the output read or written.
        assert_eq!(
            mapped("{ for i in 1..n { c[[i]] = c[[i - 1]] + 1.0; } }", 1),
            0
        );
        assert_eq!(mapped("{ for i in 0..n { c[[0]] += a[[i]]; } }", 1), 0);
        assert_eq!(
            mapped("{ for i in 0..n { c[[n - 1 - i]] = a[[i]]; } }", 1),
            0
        );
        // Leaving the mapped loop early, or the function.
        assert_eq!(
            mapped(
                "{ for i in 0..n { if a[[i]] < 0.0 { break; } c[[i]] = 1.0; } }",
                1
            ),
            0
        );
        assert_eq!(
            mapped(
                "{ for i in 0..n { if a[[i]] < 0.0 { return; } c[[i]] = 1.0; } }",
                1
            ),
            0
        );
        // Statements other than `let` before the nest, or after it.
        assert_eq!(
            mapped("{ c[[0]] = 1.0; for i in 0..n { c[[i]] = 2.0; } }", 1),
            0
        );
        assert_eq!(
            mapped("{ for i in 0..n { c[[i]] = 2.0; } let x = 1; }", 1),
            0
        );
        // The loop variable assigned, or a loop over something else.
        assert_eq!(mapped("{ for i in 0..n { i = 0; c[[i]] = 2.0; } }", 1), 0);
        assert_eq!(mapped("{ for i in xs { c[[i]] = 2.0; } }", 1), 0);
    }
}
