//! The element types the transforms take and give: `f32`, `f64`, `Complex<f32>`, `Complex<f64>`.

use num_complex::Complex;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl<T: super::FftReal> Sealed for num_complex::Complex<T> {}
}

/// An element of an array the transforms read or write: `f32`, `f64`, `Complex<f32>` or
/// `Complex<f64>`. The transform is computed in [`FftElement::Real`]: `f32` stays `f32`.
///
/// ```
/// use ufunc_runtime::fft::FftElement;
/// use num_complex::Complex;
/// assert_eq!(2.0f32.to_complex(), Complex::new(2.0, 0.0));
/// assert!(<Complex<f64> as FftElement>::COMPLEX);
/// ```
pub trait FftElement:
    Copy + Default + Send + Sync + std::fmt::Debug + 'static + sealed::Sealed
{
    /// The floating-point type of the computation.
    type Real: FftReal;
    /// Whether the element is complex.
    const COMPLEX: bool;
    /// The value as a complex number (a real value gets a zero imaginary part).
    fn to_complex(self) -> Complex<Self::Real>;
    /// `p` as a pointer to complex elements, where the element is complex.
    #[doc(hidden)]
    fn complex_ptr(p: *mut Self) -> Option<*mut Complex<Self::Real>>;
    /// `p` as a pointer to real elements, where the element is real.
    #[doc(hidden)]
    fn real_ptr(p: *mut Self) -> Option<*mut Self::Real>;
}

/// The real element types, `f32` and `f64`: the inputs of `rfft`, the outputs of `irfft`, and
/// the floating-point type every transform computes in.
pub trait FftReal:
    FftElement<Real = Self> + rustfft::FftNum + num_traits::Float + Default + std::fmt::Debug
{
    /// The value as `f64`.
    fn as_f64(self) -> f64;
    /// The nearest value to an `f64`.
    fn of_f64(x: f64) -> Self;
}

macro_rules! impl_real {
    ($($t:ty),*) => {$(
        impl FftElement for $t {
            type Real = $t;
            const COMPLEX: bool = false;
            fn to_complex(self) -> Complex<$t> {
                Complex::new(self, 0.0)
            }
            fn complex_ptr(_: *mut Self) -> Option<*mut Complex<$t>> {
                None
            }
            fn real_ptr(p: *mut Self) -> Option<*mut $t> {
                Some(p)
            }
        }
        impl FftReal for $t {
            fn as_f64(self) -> f64 {
                self as f64
            }
            fn of_f64(x: f64) -> Self {
                x as $t
            }
        }
    )*};
}
impl_real!(f32, f64);

impl<T: FftReal> FftElement for Complex<T> {
    type Real = T;
    const COMPLEX: bool = true;
    fn to_complex(self) -> Complex<T> {
        self
    }
    fn complex_ptr(p: *mut Self) -> Option<*mut Complex<T>> {
        Some(p)
    }
    fn real_ptr(_: *mut Self) -> Option<*mut T> {
        None
    }
}
