//! f32 kernels. Every branch is a select between values already computed, so loops vectorize.

use super::f32_quadrants::{QUADRANTS_HI, QUADRANTS_REST};
use super::{fmadd32, fmadd64};
use crate::isa::Isa;

const LOG2E: f32 = std::f32::consts::LOG2_E;
// ln 2 split so that n * LN2_HI is exact for |n| < 2^15 (Cody-Waite).
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// Adding then subtracting 1.5 * 2^23 rounds an f32 of magnitude < 2^22 to the nearest integer.
const ROUND_MAGIC: f32 = 12_582_912.0;

/// `e^r` for |r| <= ln(2)/2 (Cephes expf polynomial).
#[inline(always)]
fn exp_poly<M: Isa>(r: f32) -> f32 {
    let mut p = 1.987_569_1e-4f32;
    p = fmadd32::<M>(p, r, 1.398_2e-3);
    p = fmadd32::<M>(p, r, 8.333_452e-3);
    p = fmadd32::<M>(p, r, 4.166_579_6e-2);
    p = fmadd32::<M>(p, r, 1.666_666_5e-1);
    p = fmadd32::<M>(p, r, 5.000_000_1e-1);
    fmadd32::<M>(p, r * r, r) + 1.0
}

/// `p * 2^n` for integer n in [-152, 129], exact unless the result is subnormal (then rounded once).
#[inline(always)]
fn scale(p: f32, n: i32) -> f32 {
    let n1 = n >> 1;
    let n2 = n - n1;
    let s1 = f32::from_bits(((n1 + 127) as u32) << 23);
    let s2 = f32::from_bits(((n2 + 127) as u32) << 23);
    p * s1 * s2
}

#[inline(always)]
pub(super) fn exp<M: Isa>(x: f32) -> f32 {
    let xc = x.clamp(-104.0, 89.0);
    let t = fmadd32::<M>(xc, LOG2E, ROUND_MAGIC);
    let n = t - ROUND_MAGIC;
    let ni = (t.to_bits() as i32).wrapping_sub(0x4B40_0000);
    let r = fmadd32::<M>(-n, LN2_HI, xc);
    let r = fmadd32::<M>(-n, LN2_LO, r);
    let y = scale(exp_poly::<M>(r), ni);
    // A NaN x survives the clamp and the arithmetic above, and fails both comparisons.
    let y = if x > 88.722_84 { f32::INFINITY } else { y };
    if x < -103.972_08 {
        0.0
    } else {
        y
    }
}

#[inline(always)]
pub(super) fn exp2<M: Isa>(x: f32) -> f32 {
    let xc = x.clamp(-151.0, 129.0);
    let t = xc + ROUND_MAGIC;
    let n = t - ROUND_MAGIC;
    let ni = (t.to_bits() as i32).wrapping_sub(0x4B40_0000);
    // The reduced argument is exact; computing its product with ln 2 in f64 keeps 1 ulp.
    let r = ((xc - n) as f64 * std::f64::consts::LN_2) as f32;
    let y = scale(exp_poly::<M>(r), ni);
    let y = if x >= 128.0 { f32::INFINITY } else { y };
    let y = if x < -150.0 { 0.0 } else { y };
    if x.is_nan() {
        x
    } else {
        y
    }
}

/// Splits a positive finite x into k and f with x = 2^k * (1 + f), 1 + f in [sqrt(2)/2, sqrt(2)),
/// and returns (k, ln(1 + f)) (musl logf's reduction and polynomial).
#[inline(always)]
fn ln_parts<M: Isa>(x: f32) -> (f32, f32, f32) {
    let subnormal = x < f32::MIN_POSITIVE;
    let xs = if subnormal { x * 33_554_432.0 } else { x }; // 2^25
    let mut ix = xs.to_bits();
    ix = ix.wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    let k = (ix >> 23) as i32 - 0x7f - if subnormal { 25 } else { 0 };
    ix = (ix & 0x007f_ffff) + 0x3f35_04f3;
    let f = f32::from_bits(ix) - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * fmadd32::<M>(w, 0.242_790_79, 0.400_009_72);
    let t2 = z * fmadd32::<M>(w, 0.284_987_87, 0.666_666_6);
    let r = t2 + t1;
    let hfsq = 0.5 * f * f;
    // ln(1+f) = f - hfsq + s*(hfsq+R); returned as the pieces (f, s*(hfsq+R) - hfsq).
    (k as f32, f, fmadd32::<M>(s, hfsq + r, -hfsq))
}

/// Applies IEEE special cases of a logarithm: negative -> NaN, 0 -> -inf, inf -> inf, NaN -> NaN.
#[inline(always)]
fn log_special(x: f32, y: f32) -> f32 {
    let y = if x == 0.0 { f32::NEG_INFINITY } else { y };
    let y = if x < 0.0 { f32::NAN } else { y };
    let y = if x == f32::INFINITY { x } else { y };
    if x.is_nan() {
        x
    } else {
        y
    }
}

#[inline(always)]
pub(super) fn ln<M: Isa>(x: f32) -> f32 {
    let (k, f, lo) = ln_parts::<M>(x);
    // Sum in f64: k*ln2 + f + lo with one final rounding.
    let y = (k as f64 * std::f64::consts::LN_2 + (f as f64 + lo as f64)) as f32;
    log_special(x, y)
}

#[inline(always)]
pub(super) fn log2<M: Isa>(x: f32) -> f32 {
    let (k, f, lo) = ln_parts::<M>(x);
    let y = (k as f64 + (f as f64 + lo as f64) * std::f64::consts::LOG2_E) as f32;
    log_special(x, y)
}

#[inline(always)]
pub(super) fn log10<M: Isa>(x: f32) -> f32 {
    let (k, f, lo) = ln_parts::<M>(x);
    let y = (k as f64 * std::f64::consts::LOG10_2
        + (f as f64 + lo as f64) * std::f64::consts::LOG10_E) as f32;
    log_special(x, y)
}

/// Adding then subtracting 1.5 * 2^52 rounds an f64 of magnitude < 2^51 to the nearest integer,
/// which is left in the low bits of the sum.
const ROUND_MAGIC64: f64 = 6_755_399_441_055_744.0;

/// `x` as `r + q * pi/2` with |r| <= pi/4 (r in f64, relative error about 2^-50 for every finite
/// f32, however large) and the quadrant `q` in the low two bits.
///
/// x = m * 2^E with m a 24-bit integer, so x * 2/pi mod 4 = m * (2^E * 2/pi mod 4); the table gives
/// that factor per exponent as HI + REST with m * HI exact, and the two parts are taken mod 4 in
/// turn. Two table loads per lane, which vectorize as gathers (the tables are `const`, not
/// `static`: a static of another crate may alias the loop's outputs, which stops
/// vectorization). Exhaustively checked: sin and cos within 1 ulp of the correctly rounded
/// result for all 2^31 positive finite f32 (`tests/math_ulp.rs`).
#[inline(always)]
fn quadrant<M: Isa>(x: f32) -> (f64, u32) {
    let bits = x.to_bits();
    let e8 = (bits >> 23) & 0xff;
    let mantissa = bits & 0x7f_ffff;
    let m = (if e8 == 0 {
        mantissa
    } else {
        mantissa | 0x80_0000
    }) as f64;
    let m = if (bits as i32) < 0 { -m } else { m };
    let whole = m * QUADRANTS_HI[e8 as usize];
    let t1 = whole + ROUND_MAGIC64;
    let fraction = whole - (t1 - ROUND_MAGIC64);
    let s = fmadd64::<M>(m, QUADRANTS_REST[e8 as usize], fraction);
    let t2 = s + ROUND_MAGIC64;
    let r = (s - (t2 - ROUND_MAGIC64)) * std::f64::consts::FRAC_PI_2;
    let q = (t1.to_bits() as u32).wrapping_add(t2.to_bits() as u32);
    (r, q)
}

/// (sin r, cos r) for |r| <= pi/4 in f64 (musl's __sindf/__cosdf kernels).
#[inline(always)]
fn sin_cos_kernel<M: Isa>(r: f64) -> (f64, f64) {
    let z = r * r;
    let w = z * z;
    let s = {
        let rr = fmadd64::<M>(z, 2.718_311_493_989_822e-6, -1.983_933_483_609_663_2e-4);
        let s = z * r;
        (r + s * fmadd64::<M>(z, 8.333_329_385_889_463e-3, -0.166_666_666_416_265_24)) + s * w * rr
    };
    let c = {
        let rr = fmadd64::<M>(z, 2.439_044_879_627_741e-5, -1.388_676_377_460_993e-3);
        ((1.0 + z * -0.499_999_997_251_031) + w * 4.166_662_332_373_906e-2) + (w * z) * rr
    };
    (s, c)
}

/// (sin x, cos x): exact reduction to a quadrant, then the kernels in f64.
#[inline(always)]
pub(super) fn sin_cos<M: Isa>(x: f32) -> (f32, f32) {
    let (r, q) = quadrant::<M>(x);
    let (s, c) = sin_cos_kernel::<M>(r);
    let (sv, cv) = if q & 1 != 0 { (c, s) } else { (s, c) };
    let sin = if q & 2 != 0 { -sv } else { sv };
    let cos = if (q.wrapping_add(1)) & 2 != 0 {
        -cv
    } else {
        cv
    };
    let cos = if x.is_finite() { cos as f32 } else { f32::NAN };
    (odd_result(x, sin), cos)
}

/// An odd function's value `v` at `x` as f32: NaN for infinite or NaN `x`, and ±0 at ±0 (the
/// reduction and the kernels lose the zero's sign).
#[inline(always)]
fn odd_result(x: f32, v: f64) -> f32 {
    let v = if x.is_finite() { v as f32 } else { f32::NAN };
    if x == 0.0 {
        x
    } else {
        v
    }
}

#[inline(always)]
pub(super) fn tan<M: Isa>(x: f32) -> f32 {
    let (r, q) = quadrant::<M>(x);
    let (s, c) = sin_cos_kernel::<M>(r);
    odd_result(x, if q & 1 != 0 { -c / s } else { s / c })
}

#[inline(always)]
pub(super) fn tanh<M: Isa>(x: f32) -> f32 {
    let a = x.abs();
    // Small |x|: odd polynomial (Cephes tanhf); large: 1 - 2/(e^{2|x|} + 1).
    let z = x * x;
    let mut p = -5.704_988_7e-3f32;
    p = fmadd32::<M>(p, z, 2.063_908_9e-2);
    p = fmadd32::<M>(p, z, -5.373_971_6e-2);
    p = fmadd32::<M>(p, z, 1.333_144_2e-1);
    p = fmadd32::<M>(p, z, -3.333_328_2e-1);
    let small = fmadd32::<M>(p * z, x, x);
    let e = exp::<M>((2.0 * a).min(88.0));
    let large = (1.0 - 2.0 / (e + 1.0)).copysign(x);
    let y = if a < 0.625 { small } else { large };
    if x.is_nan() {
        x
    } else {
        y
    }
}

#[inline(always)]
pub(super) fn powf<M: Isa>(x: f32, y: f32) -> f32 {
    // y * ln|x| in f64: its error stays far below f32's half ulp even for large |y|.
    let ax = x.abs();
    let e = y as f64 * super::f64_impl::ln_of_positive::<M>(ax as f64);
    let v = super::f64_impl::exp::<M>(e.clamp(-800.0, 800.0)) as f32;
    // Special cases follow IEEE pow (as f32::powf does).
    let y_int = y == y.trunc();
    let y_odd = y_int && (y * 0.5) != (y * 0.5).trunc();
    let neg = x < 0.0;
    let v = if neg && !y_int { f32::NAN } else { v };
    let v = if neg && y_odd { -v } else { v };
    let v = if x == 0.0 {
        let z = if y < 0.0 { f32::INFINITY } else { 0.0 };
        if y_odd {
            z.copysign(x)
        } else {
            z
        }
    } else {
        v
    };
    let v = if ax.is_infinite() {
        let z = if y < 0.0 { 0.0 } else { f32::INFINITY };
        if neg && y_odd {
            -z
        } else {
            z
        }
    } else {
        v
    };
    let v = if y.is_infinite() && !ax.is_nan() {
        if ax == 1.0 {
            1.0
        } else if (ax > 1.0) == (y > 0.0) {
            f32::INFINITY
        } else {
            0.0
        }
    } else {
        v
    };
    let v = if x.is_nan() || y.is_nan() {
        f32::NAN
    } else {
        v
    };
    if y == 0.0 || x == 1.0 {
        1.0
    } else {
        v
    }
}
