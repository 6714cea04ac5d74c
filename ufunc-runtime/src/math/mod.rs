//! Vector-friendly math: branch-free, `#[inline(always)]` versions of the transcendental
//! functions, so that a lane body calling them vectorizes inside every instruction-set entry.
//!
//! The macro rewrites `x.exp()` in a `#[vectorize]` body to `LaneMath::exp::<M>(x)`; `M` tells
//! whether fused multiply-add is available. Accuracy, max error in ulp against the correctly
//! rounded result (f32, checked against f64 libm) or against the platform libm (f64), tested in
//! `tests/math_ulp.rs`:
//!
//! | function | f32 | f64 |
//! | --- | --- | --- |
//! | `exp`, `exp2` | 1 | 1 |
//! | `ln`, `log2`, `log10` | 1 (subnormal inputs included) | 1 |
//! | `sin`, `cos` | 1 for every finite x (exact reduction; checked exhaustively) | libm |
//! | `tan` | 2 for every finite x | libm |
//! | `tanh` | 2 | libm |
//! | `powf` | 1 (computed in f64) | libm |
//! | `powi` | bit-identical to `f32::powi` / `f64::powi` (same multiplication order) | same |
//!
//! "libm" means the method calls the standard library per element: correct, not vectorized.
//! `Complex` methods always use num-complex (scalar).

// Coefficients are written with the digits their sources publish.
#[allow(clippy::excessive_precision)]
mod f32_impl;
#[rustfmt::skip]
mod f32_quadrants;
#[allow(clippy::excessive_precision)]
mod f64_impl;

use crate::isa::Isa;
use num_complex::Complex;

/// Multiply-add that uses the FMA instruction where `M` has it, and a separate multiply and add
/// (two roundings) otherwise; math kernels are written to be accurate either way.
#[inline(always)]
pub(crate) fn fmadd32<M: Isa>(a: f32, b: f32, c: f32) -> f32 {
    if M::FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

#[inline(always)]
pub(crate) fn fmadd64<M: Isa>(a: f64, b: f64, c: f64) -> f64 {
    if M::FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// The methods a `#[vectorize]` body's math calls are rewritten to.
///
/// ```
/// use ufunc_runtime::{LaneMath, NoFma};
/// let y = LaneMath::exp::<NoFma>(1.0f32);
/// assert!((y - std::f32::consts::E).abs() <= f32::EPSILON * 3.0);
/// ```
pub trait LaneMath: Copy {
    /// The exponent type of `powf`.
    type Real: Copy;
    /// `e^self`.
    fn exp<M: Isa>(self) -> Self;
    /// `2^self`.
    fn exp2<M: Isa>(self) -> Self;
    /// Natural logarithm.
    fn ln<M: Isa>(self) -> Self;
    /// Base-2 logarithm.
    fn log2<M: Isa>(self) -> Self;
    /// Base-10 logarithm.
    fn log10<M: Isa>(self) -> Self;
    /// Sine.
    fn sin<M: Isa>(self) -> Self;
    /// Cosine.
    fn cos<M: Isa>(self) -> Self;
    /// Tangent.
    fn tan<M: Isa>(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh<M: Isa>(self) -> Self;
    /// `self^y`.
    fn powf<M: Isa>(self, y: Self::Real) -> Self;
    /// `self^n` by binary powering, in the same order as the standard library.
    fn powi<M: Isa>(self, n: i32) -> Self;
}

impl LaneMath for f32 {
    type Real = f32;
    #[inline(always)]
    fn exp<M: Isa>(self) -> f32 {
        f32_impl::exp::<M>(self)
    }
    #[inline(always)]
    fn exp2<M: Isa>(self) -> f32 {
        f32_impl::exp2::<M>(self)
    }
    #[inline(always)]
    fn ln<M: Isa>(self) -> f32 {
        f32_impl::ln::<M>(self)
    }
    #[inline(always)]
    fn log2<M: Isa>(self) -> f32 {
        f32_impl::log2::<M>(self)
    }
    #[inline(always)]
    fn log10<M: Isa>(self) -> f32 {
        f32_impl::log10::<M>(self)
    }
    #[inline(always)]
    fn sin<M: Isa>(self) -> f32 {
        f32_impl::sin_cos::<M>(self).0
    }
    #[inline(always)]
    fn cos<M: Isa>(self) -> f32 {
        f32_impl::sin_cos::<M>(self).1
    }
    #[inline(always)]
    fn tan<M: Isa>(self) -> f32 {
        f32_impl::tan::<M>(self)
    }
    #[inline(always)]
    fn tanh<M: Isa>(self) -> f32 {
        f32_impl::tanh::<M>(self)
    }
    #[inline(always)]
    fn powf<M: Isa>(self, y: f32) -> f32 {
        f32_impl::powf::<M>(self, y)
    }
    #[inline(always)]
    fn powi<M: Isa>(self, n: i32) -> f32 {
        powi_binary(self, n, 1.0, |a, b| a * b, |r| 1.0 / r)
    }
}

impl LaneMath for f64 {
    type Real = f64;
    #[inline(always)]
    fn exp<M: Isa>(self) -> f64 {
        f64_impl::exp::<M>(self)
    }
    #[inline(always)]
    fn exp2<M: Isa>(self) -> f64 {
        f64_impl::exp2::<M>(self)
    }
    #[inline(always)]
    fn ln<M: Isa>(self) -> f64 {
        f64_impl::ln::<M>(self)
    }
    #[inline(always)]
    fn log2<M: Isa>(self) -> f64 {
        f64_impl::log2::<M>(self)
    }
    #[inline(always)]
    fn log10<M: Isa>(self) -> f64 {
        f64_impl::log10::<M>(self)
    }
    #[inline(always)]
    fn sin<M: Isa>(self) -> f64 {
        f64::sin(self)
    }
    #[inline(always)]
    fn cos<M: Isa>(self) -> f64 {
        f64::cos(self)
    }
    #[inline(always)]
    fn tan<M: Isa>(self) -> f64 {
        f64::tan(self)
    }
    #[inline(always)]
    fn tanh<M: Isa>(self) -> f64 {
        f64::tanh(self)
    }
    #[inline(always)]
    fn powf<M: Isa>(self, y: f64) -> f64 {
        f64::powf(self, y)
    }
    #[inline(always)]
    fn powi<M: Isa>(self, n: i32) -> f64 {
        powi_binary(self, n, 1.0, |a, b| a * b, |r| 1.0 / r)
    }
}

macro_rules! complex_lane_math {
    ($t:ty) => {
        impl LaneMath for Complex<$t> {
            type Real = $t;
            #[inline(always)]
            fn exp<M: Isa>(self) -> Self {
                Complex::exp(self)
            }
            #[inline(always)]
            fn exp2<M: Isa>(self) -> Self {
                Complex::exp2(self)
            }
            #[inline(always)]
            fn ln<M: Isa>(self) -> Self {
                Complex::ln(self)
            }
            #[inline(always)]
            fn log2<M: Isa>(self) -> Self {
                Complex::log2(self)
            }
            #[inline(always)]
            fn log10<M: Isa>(self) -> Self {
                Complex::log10(self)
            }
            #[inline(always)]
            fn sin<M: Isa>(self) -> Self {
                Complex::sin(self)
            }
            #[inline(always)]
            fn cos<M: Isa>(self) -> Self {
                Complex::cos(self)
            }
            #[inline(always)]
            fn tan<M: Isa>(self) -> Self {
                Complex::tan(self)
            }
            #[inline(always)]
            fn tanh<M: Isa>(self) -> Self {
                Complex::tanh(self)
            }
            #[inline(always)]
            fn powf<M: Isa>(self, y: $t) -> Self {
                Complex::powf(self, y)
            }
            #[inline(always)]
            fn powi<M: Isa>(self, n: i32) -> Self {
                Complex::powi(&self, n)
            }
        }
    };
}

complex_lane_math!(f32);
complex_lane_math!(f64);

/// `a * b + c` as `fastmath = true` lane code computes it: one fused multiply-add (a single
/// rounding) for floats where the instruction set has FMA, the plain expression otherwise.
///
/// ```
/// use ufunc_runtime::{FusedMulAdd, NoFma, WithFma};
/// let (a, b, c) = (0.1f32, 10.0f32, -1.0f32);
/// assert_eq!(FusedMulAdd::fused_mul_add::<WithFma>(a, b, c), a.mul_add(b, c));
/// assert_eq!(FusedMulAdd::fused_mul_add::<NoFma>(a, b, c), a * b + c);
/// assert_eq!(FusedMulAdd::fused_mul_add::<WithFma>(3i32, 4, 5), 17);
/// ```
pub trait FusedMulAdd: Copy {
    /// `self * b + c`, fused where possible.
    fn fused_mul_add<M: Isa>(self, b: Self, c: Self) -> Self;
}

impl FusedMulAdd for f32 {
    #[inline(always)]
    fn fused_mul_add<M: Isa>(self, b: f32, c: f32) -> f32 {
        fmadd32::<M>(self, b, c)
    }
}

impl FusedMulAdd for f64 {
    #[inline(always)]
    fn fused_mul_add<M: Isa>(self, b: f64, c: f64) -> f64 {
        fmadd64::<M>(self, b, c)
    }
}

macro_rules! plain_mul_add {
    ($($t:ty),*) => {$(
        impl FusedMulAdd for $t {
            #[inline(always)]
            fn fused_mul_add<M: Isa>(self, b: $t, c: $t) -> $t {
                self * b + c
            }
        }
    )*};
}

plain_mul_add!(
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
    Complex<f32>,
    Complex<f64>
);

/// Binary powering in the order of compiler-rt's `__powisf2`/`__powidf2` (what `powi` lowers to),
/// so results are bit-identical to the standard library's.
#[inline(always)]
fn powi_binary<T: Copy>(
    x: T,
    n: i32,
    one: T,
    mul: impl Fn(T, T) -> T,
    recip: impl Fn(T) -> T,
) -> T {
    let negative = n < 0;
    let mut b = n;
    let mut a = x;
    let mut r = one;
    loop {
        if b & 1 != 0 {
            r = mul(r, a);
        }
        b /= 2;
        if b == 0 {
            break;
        }
        a = mul(a, a);
    }
    if negative {
        recip(r)
    } else {
        r
    }
}
