//! f64 kernels (exp, exp2 and the logarithms); branch-free like the f32 ones.

use super::fmadd64;
use crate::isa::Isa;

const LOG2E: f64 = std::f64::consts::LOG2_E;
// fdlibm's split of ln 2: n * LN2_HI is exact for |n| < 2^21.
const LN2_HI: f64 = 6.931_471_803_691_238_164_9e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;
const ROUND_MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52

/// `e^r` for |r| <= ln(2)/2: Taylor series to degree 13, error below 2^-60.
#[inline(always)]
fn exp_poly<M: Isa>(r: f64) -> f64 {
    const C: [f64; 12] = [
        1.0 / 6_227_020_800.0,
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
    ];
    let mut p = C[0];
    for c in &C[1..] {
        p = fmadd64::<M>(p, r, *c);
    }
    // 1 + r + r^2 * p, with the small terms summed first.
    fmadd64::<M>(p, r * r, r) + 1.0
}

/// `p * 2^n` for integer n in [-1080, 1025].
#[inline(always)]
fn scale(p: f64, n: i64) -> f64 {
    let n1 = n >> 1;
    let n2 = n - n1;
    let s1 = f64::from_bits(((n1 + 1023) as u64) << 52);
    let s2 = f64::from_bits(((n2 + 1023) as u64) << 52);
    p * s1 * s2
}

#[inline(always)]
pub(super) fn exp<M: Isa>(x: f64) -> f64 {
    let xc = x.clamp(-746.0, 710.0);
    let t = fmadd64::<M>(xc, LOG2E, ROUND_MAGIC);
    let n = t - ROUND_MAGIC;
    let ni = (t.to_bits() as i64).wrapping_sub(0x4338_0000_0000_0000);
    let r = fmadd64::<M>(-n, LN2_HI, xc);
    let r = fmadd64::<M>(-n, LN2_LO, r);
    let y = scale(exp_poly::<M>(r), ni);
    let y = if x > 709.782_712_893_384 {
        f64::INFINITY
    } else {
        y
    };
    let y = if x < -745.133_219_101_941_1 { 0.0 } else { y };
    if x.is_nan() {
        x
    } else {
        y
    }
}

#[inline(always)]
pub(super) fn exp2<M: Isa>(x: f64) -> f64 {
    let xc = x.clamp(-1080.0, 1025.0);
    let t = xc + ROUND_MAGIC;
    let n = t - ROUND_MAGIC;
    let ni = (t.to_bits() as i64).wrapping_sub(0x4338_0000_0000_0000);
    // r = (x - n) * ln2 in two pieces to keep the product's rounding error out.
    let d = xc - n;
    let r = d * std::f64::consts::LN_2;
    let r_err = fmadd64::<M>(d, std::f64::consts::LN_2, -r);
    let p = exp_poly::<M>(r);
    let p = fmadd64::<M>(p, r_err, p);
    let y = scale(p, ni);
    let y = if x >= 1024.0 { f64::INFINITY } else { y };
    let y = if x < -1075.0 { 0.0 } else { y };
    if x.is_nan() {
        x
    } else {
        y
    }
}

/// k and the pieces of ln(1+f) (fdlibm's __ieee754_log polynomial, musl's reduction).
#[inline(always)]
fn ln_parts<M: Isa>(x: f64) -> (f64, f64, f64) {
    let subnormal = x < f64::MIN_POSITIVE;
    let xs = if subnormal {
        x * 18_014_398_509_481_984.0
    } else {
        x
    }; // 2^54
    let bits = xs.to_bits();
    let mut hx = (bits >> 32) as u32;
    hx = hx.wrapping_add(0x3ff0_0000 - 0x3fe6_a09e);
    let k = (hx >> 20) as i32 - 0x3ff - if subnormal { 54 } else { 0 };
    hx = (hx & 0x000f_ffff) + 0x3fe6_a09e;
    let m = f64::from_bits(((hx as u64) << 32) | (bits & 0xffff_ffff));
    let f = m - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * fmadd64::<M>(
        w,
        fmadd64::<M>(
            w,
            1.531_383_769_920_937_332e-1,
            2.222_219_843_214_978_396e-1,
        ),
        3.999_999_999_940_941_908e-1,
    );
    let t2 = z * fmadd64::<M>(
        w,
        fmadd64::<M>(
            w,
            fmadd64::<M>(
                w,
                1.479_819_860_511_658_591e-1,
                1.818_357_216_161_805_012e-1,
            ),
            2.857_142_874_366_239_149e-1,
        ),
        6.666_666_666_666_735_13e-1,
    );
    let r = t2 + t1;
    (k as f64, f, s * (hfsq + r) - hfsq)
}

#[inline(always)]
fn log_special(x: f64, y: f64) -> f64 {
    let y = if x == 0.0 { f64::NEG_INFINITY } else { y };
    let y = if x < 0.0 { f64::NAN } else { y };
    let y = if x == f64::INFINITY { x } else { y };
    if x.is_nan() {
        x
    } else {
        y
    }
}

#[inline(always)]
pub(super) fn ln<M: Isa>(x: f64) -> f64 {
    let (k, f, lo) = ln_parts::<M>(x);
    let y = fmadd64::<M>(k, LN2_HI, fmadd64::<M>(k, LN2_LO, lo) + f);
    log_special(x, y)
}

#[inline(always)]
pub(super) fn log2<M: Isa>(x: f64) -> f64 {
    const IVLN2HI: f64 = 1.442_695_040_721_446_275_7;
    const IVLN2LO: f64 = 1.675_171_316_488_651_380_5e-10;
    let (k, f, lo) = ln_parts::<M>(x);
    // Split f into a high part with a zeroed low word, as fdlibm's log2 does.
    let hi = f64::from_bits(f.to_bits() & 0xffff_ffff_0000_0000);
    let lo = (f - hi) + lo;
    let val_hi = hi * IVLN2HI;
    let val_lo = (lo + hi) * IVLN2LO + lo * IVLN2HI;
    let w = k + val_hi;
    let val_lo = val_lo + ((k - w) + val_hi);
    log_special(x, val_lo + w)
}

/// ln(x) for a positive f32 argument, in f64 (used by f32 `powf`).
#[inline(always)]
pub(super) fn ln_of_positive<M: Isa>(x: f64) -> f64 {
    let (k, f, lo) = ln_parts::<M>(x);
    fmadd64::<M>(k, LN2_HI, fmadd64::<M>(k, LN2_LO, lo) + f)
}

#[inline(always)]
pub(super) fn log10<M: Isa>(x: f64) -> f64 {
    const IVLN10HI: f64 = 4.342_944_818_781_688_809_4e-1;
    const IVLN10LO: f64 = 2.508_294_671_164_527_522_98e-11;
    const LOG10_2HI: f64 = 3.010_299_956_636_117_713_2e-1;
    const LOG10_2LO: f64 = 3.694_239_077_158_930_786_6e-13;
    let (k, f, lo) = ln_parts::<M>(x);
    let hi = f64::from_bits(f.to_bits() & 0xffff_ffff_0000_0000);
    let lo = (f - hi) + lo;
    let val_hi = hi * IVLN10HI;
    let y = k * LOG10_2HI;
    let val_lo = k * LOG10_2LO + (lo + hi) * IVLN10LO + lo * IVLN10HI;
    let w = y + val_hi;
    let val_lo = val_lo + ((y - w) + val_hi);
    log_special(x, val_lo + w)
}
