//! The scalar element types a ufunc signature may use.

use syn::{GenericArgument, PathArguments, Type};

pub(crate) const ELEMENT_TYPES: &str =
    "f32, f64, i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, bool, Complex<f32>, Complex<f64>";

const PRIMITIVES: &[&str] = &[
    "f32", "f64", "i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32", "u64", "usize", "bool",
];

pub(crate) const INTEGER_NAMES: &[&str] = &[
    "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize",
];

/// The kind of a parameter or result type.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ElemKind {
    Float,
    Integer,
    Bool,
    Complex,
    /// The function's type parameter (a `types = [...]` list decides what it is).
    Generic,
}

/// Classifies `ty` as an element type, or `None` if it is not one. `generic` is the name of the
/// function's type parameter, if any.
pub(crate) fn elem_kind(ty: &Type, generic: Option<&syn::Ident>) -> Option<ElemKind> {
    let Type::Path(tp) = ty else {
        return match ty {
            Type::Paren(p) => elem_kind(&p.elem, generic),
            Type::Group(g) => elem_kind(&g.elem, generic),
            _ => None,
        };
    };
    if tp.qself.is_some() {
        return None;
    }
    let last = tp.path.segments.last()?;
    let name = last.ident.to_string();
    if tp.path.segments.len() == 1 && generic.is_some_and(|g| last.ident == *g) {
        return Some(ElemKind::Generic);
    }
    if PRIMITIVES.contains(&name.as_str()) && matches!(last.arguments, PathArguments::None) {
        return Some(match name.as_str() {
            "f32" | "f64" => ElemKind::Float,
            "bool" => ElemKind::Bool,
            _ => ElemKind::Integer,
        });
    }
    if name == "Complex" {
        if let PathArguments::AngleBracketed(args) = &last.arguments {
            if let [GenericArgument::Type(inner)] = args.args.iter().collect::<Vec<_>>()[..] {
                return match elem_kind(inner, generic)? {
                    ElemKind::Float | ElemKind::Generic => Some(ElemKind::Complex),
                    _ => None,
                };
            }
        }
    }
    None
}
