//! The element types a ufunc parameter or result may have.

mod sealed {
    pub trait Sealed {}
}

/// A scalar type that ufunc parameters and results may have: `f32`, `f64`, `i8`..`i64`,
/// `isize`, `u8`..`u64`, `usize` (Numba's `intp`), `bool`, `Complex<f32>` and `Complex<f64>`.
///
/// ```
/// fn takes<T: ufunc_runtime::Element>(_: T) {}
/// takes(1.0f32);
/// takes(num_complex::Complex::new(1.0f64, 2.0));
/// ```
pub trait Element: Copy + Default + Send + Sync + 'static + sealed::Sealed {
    /// The type's name as written in Rust, for messages.
    const NAME: &'static str;
}

macro_rules! elements {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const NAME: &'static str = stringify!($t);
        }
    )*};
}

/// Invokes `$m!(f32, f64, ..., Complex<f64>)` with every element type: the one list that the
/// per-type impls of the crate are stamped out from.
macro_rules! for_each_element {
    ($m:ident) => {
        $m!(
            f32,
            f64,
            i8,
            i16,
            i32,
            i64,
            isize,
            u8,
            u16,
            u32,
            u64,
            usize,
            bool,
            num_complex::Complex<f32>,
            num_complex::Complex<f64>
        );
    };
}
pub(crate) use for_each_element;

for_each_element!(elements);
