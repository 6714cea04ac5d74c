//! The small type inference the CUDA emitter needs: element types of parameters, let bindings
//! and expressions, with unsuffixed literals taking the type of what they meet, so that an f32
//! body never silently computes in double.

use std::collections::HashMap;

/// The type of an expression, as far as the emitter knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    /// An element type, by its Rust name (`f32`, `i64`, `bool`, `Complex<f32>`...).
    Elem(String),
    /// A tuple of known types.
    Tuple(Vec<Ty>),
    /// An unsuffixed float literal (or an expression of only such literals).
    FloatLit,
    /// An unsuffixed integer literal.
    IntLit,
    /// A value whose type only C++ knows (a helper's result): literals meeting it are cast
    /// with `decltype`.
    Opaque,
    /// `()`: statements.
    Unit,
    /// What an untranslatable node leaves: its error is recorded, and nothing that uses it
    /// reports another.
    Unsupported,
    /// A gufunc core view of `rank` dimensions (`ArrayViewN` / `ArrayViewMutN`).
    View {
        elem: Box<Ty>,
        rank: usize,
        mutable: bool,
    },
    /// A `()` core output taken as `&mut T`.
    Ptr(Box<Ty>),
    /// The `shape()` of a view, only to be indexed.
    Shape(String),
}

impl Ty {
    pub(crate) fn elem(name: &str) -> Ty {
        Ty::Elem(name.to_string())
    }

    pub(crate) fn is_float(&self) -> bool {
        matches!(self, Ty::Elem(n) if n == "f32" || n == "f64") || *self == Ty::FloatLit
    }

    pub(crate) fn is_complex(&self) -> bool {
        matches!(self, Ty::Elem(n) if n.starts_with("Complex"))
    }

    pub(crate) fn is_integer(&self) -> bool {
        matches!(self, Ty::Elem(n) if n.starts_with('i') || n.starts_with('u'))
            || *self == Ty::IntLit
    }

    pub(crate) fn is_known(&self) -> bool {
        matches!(
            self,
            Ty::Elem(_) | Ty::Tuple(_) | Ty::View { .. } | Ty::Ptr(_)
        )
    }

    /// The C++ spelling (prelude typedefs use the Rust names).
    pub(crate) fn cpp(&self) -> String {
        match self {
            Ty::Elem(n) if n == "Complex<f32>" => "c32".into(),
            Ty::Elem(n) if n == "Complex<f64>" => "c64".into(),
            Ty::Elem(n) => n.clone(),
            Ty::Tuple(ts) => format!(
                "__ufunc_tuple{}<{}>",
                ts.len(),
                ts.iter().map(Ty::cpp).collect::<Vec<_>>().join(", ")
            ),
            Ty::FloatLit => "f64".into(),
            Ty::IntLit => "i32".into(),
            Ty::View {
                elem,
                rank,
                mutable,
            } => format!(
                "__ufunc_view<{}{}, {rank}>",
                if *mutable { "" } else { "const " },
                elem.cpp()
            ),
            Ty::Ptr(elem) => format!("{}*", elem.cpp()),
            Ty::Opaque | Ty::Unit | Ty::Unsupported | Ty::Shape(_) => "auto".into(),
        }
    }

    /// The type two operands of an arithmetic operator have: a known type wins over a literal.
    pub(crate) fn join(a: &Ty, b: &Ty) -> Ty {
        match (a, b) {
            (x, y) if x.is_known() => {
                let _ = y;
                x.clone()
            }
            (_, y) if y.is_known() => y.clone(),
            (Ty::Unsupported, _) | (_, Ty::Unsupported) => Ty::Unsupported,
            (Ty::Opaque, _) | (_, Ty::Opaque) => Ty::Opaque,
            (Ty::FloatLit, _) | (_, Ty::FloatLit) => Ty::FloatLit,
            _ => a.clone(),
        }
    }
}

/// A variable in scope: its type, its binding id (for bindings whose type later uses may refine)
/// and its C++ name.
type Binding = (Ty, Option<usize>, String);

/// Variables in scope, and what the first pass learned about let bindings whose initial value
/// was a bare literal (keyed by the binding's position in the source).
#[derive(Default)]
pub(crate) struct Env {
    /// Per scope: Rust name -> its binding.
    scopes: Vec<HashMap<String, Binding>>,
    /// How many bindings shadowed a visible name so far, to name each one apart.
    shadows: usize,
    /// Resolved types of literal-initialised bindings, by binding id.
    pub(crate) learned: HashMap<usize, Ty>,
}

impl Env {
    pub(crate) fn push(&mut self) {
        self.scopes.push(HashMap::new());
    }

    pub(crate) fn pop(&mut self) {
        self.scopes.pop();
    }

    /// Declares `name` and returns its C++ name; `id` is set for bindings whose type may be
    /// refined by later uses. A Rust `let` may shadow a visible name (`let x = x.abs();`, or
    /// twice in one scope), which C++ forbids in one scope and which in a nested one would make
    /// the initialiser read the new variable: a shadowing binding gets a C++ name of its own,
    /// `r<k>_x`, which no Rust name can produce (those are all `r_x`).
    pub(crate) fn declare(&mut self, name: &str, ty: Ty, id: Option<usize>) -> String {
        let ty = match id.and_then(|i| self.learned.get(&i)) {
            Some(t) => t.clone(),
            None => ty,
        };
        let cpp = if self.lookup(name).is_some() {
            self.shadows += 1;
            format!("r{}_{name}", self.shadows)
        } else {
            format!("r_{name}")
        };
        self.scopes
            .last_mut()
            .expect("a scope")
            .insert(name.to_string(), (ty, id, cpp.clone()));
        cpp
    }

    pub(crate) fn lookup(&self, name: &str) -> Option<Ty> {
        self.entry(name).map(|(t, _, _)| t.clone())
    }

    /// The C++ name of the visible binding `name`.
    pub(crate) fn cpp_name(&self, name: &str) -> Option<String> {
        self.entry(name).map(|(_, _, c)| c.clone())
    }

    fn entry(&self, name: &str) -> Option<&Binding> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    /// A use of `name` met type `ty`: a literal-typed binding takes it.
    pub(crate) fn refine(&mut self, name: &str, ty: &Ty) {
        if !ty.is_known() {
            return;
        }
        for scope in self.scopes.iter_mut().rev() {
            if let Some((t, id, _)) = scope.get_mut(name) {
                if matches!(t, Ty::FloatLit | Ty::IntLit) {
                    *t = ty.clone();
                    if let Some(id) = id {
                        self.learned.insert(*id, ty.clone());
                    }
                }
                return;
            }
        }
    }
}
