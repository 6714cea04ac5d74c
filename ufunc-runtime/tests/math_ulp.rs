//! The ulp bounds stated in `src/math/mod.rs`, checked on dense samples of each function's
//! domain, with and without fused multiply-add. f32 results are compared with the f64 libm
//! result rounded to f32 (the correctly rounded value, up to f64's own tiny error); f64 results
//! with the platform libm.

use ufunc_runtime::{Isa, LaneMath, NoFma, WithFma};

/// Distance in representable values between two floats of the same sign class.
fn ulps32(a: f32, b: f32) -> u64 {
    if a.is_nan() && b.is_nan() || a == b {
        return 0;
    }
    if a.is_nan() || b.is_nan() {
        return u64::MAX;
    }
    let key = |x: f32| {
        let i = x.to_bits() as i32;
        (if i < 0 { i32::MIN - i } else { i }) as i64
    };
    (key(a) - key(b)).unsigned_abs()
}

fn ulps64(a: f64, b: f64) -> u64 {
    if a.is_nan() && b.is_nan() || a == b {
        return 0;
    }
    if a.is_nan() || b.is_nan() {
        return u64::MAX;
    }
    let key = |x: f64| {
        let i = x.to_bits() as i64;
        (if i < 0 { i64::MIN - i } else { i }) as i128
    };
    (key(a) - key(b)).unsigned_abs() as u64
}

/// `count` points spread log-uniformly over [lo, hi] (both positive), plus their negatives if
/// `signed`, plus special values.
fn samples32(lo: f32, hi: f32, count: usize, signed: bool) -> Vec<f32> {
    let (l, h) = (lo.ln(), hi.ln());
    let mut v: Vec<f32> = (0..count)
        .map(|i| (l + (h - l) * (i as f32 + 0.5) / count as f32).exp())
        .collect();
    if signed {
        let neg: Vec<f32> = v.iter().map(|x| -x).collect();
        v.extend(neg);
    }
    v.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
    ]);
    v
}

fn samples64(lo: f64, hi: f64, count: usize, signed: bool) -> Vec<f64> {
    let (l, h) = (lo.ln(), hi.ln());
    let mut v: Vec<f64> = (0..count)
        .map(|i| (l + (h - l) * (i as f64 + 0.5) / count as f64).exp())
        .collect();
    if signed {
        let neg: Vec<f64> = v.iter().map(|x| -x).collect();
        v.extend(neg);
    }
    v.extend([
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::MIN_POSITIVE,
    ]);
    v
}

fn check32<M: Isa>(
    name: &str,
    xs: &[f32],
    bound: u64,
    ours: impl Fn(f32) -> f32,
    reference: impl Fn(f64) -> f64,
) {
    let mut worst = (0u64, 0.0f32);
    for &x in xs {
        let want = reference(x as f64) as f32;
        let got = ours(x);
        let d = ulps32(got, want);
        if d > worst.0 {
            worst = (d, x);
        }
    }
    assert!(
        worst.0 <= bound,
        "{name} (fma: {}): {} ulp at x = {:e} (bound {bound})",
        M::FMA,
        worst.0,
        worst.1
    );
}

fn check64<M: Isa>(
    name: &str,
    xs: &[f64],
    bound: u64,
    ours: impl Fn(f64) -> f64,
    reference: impl Fn(f64) -> f64,
) {
    let mut worst = (0u64, 0.0f64);
    for &x in xs {
        let d = ulps64(ours(x), reference(x));
        if d > worst.0 {
            worst = (d, x);
        }
    }
    assert!(
        worst.0 <= bound,
        "{name} (fma: {}): {} ulp at x = {:e} (bound {bound})",
        M::FMA,
        worst.0,
        worst.1
    );
}

fn f32_functions<M: Isa>() {
    let n = 200_000;
    let wide = samples32(1e-30, 100.0, n, true);
    check32::<M>("exp", &wide, 1, |x| LaneMath::exp::<M>(x), f64::exp);
    check32::<M>("exp2", &wide, 1, |x| LaneMath::exp2::<M>(x), f64::exp2);
    let positive = samples32(1e-45, 3e38, n, false);
    check32::<M>("ln", &positive, 1, |x| LaneMath::ln::<M>(x), f64::ln);
    check32::<M>("log2", &positive, 1, |x| LaneMath::log2::<M>(x), f64::log2);
    check32::<M>(
        "log10",
        &positive,
        1,
        |x| LaneMath::log10::<M>(x),
        f64::log10,
    );
    check32::<M>(
        "ln of negatives",
        &[-1.0, -1e-30],
        0,
        |x| LaneMath::ln::<M>(x),
        f64::ln,
    );
    // Small angles densely, then every binade up to f32::MAX (the reduction is exact for all).
    let mut angles = samples32(1e-30, 1e8, n, true);
    angles.extend(samples32(1e8, f32::MAX, n, true));
    check32::<M>("sin", &angles, 1, |x| LaneMath::sin::<M>(x), f64::sin);
    check32::<M>("cos", &angles, 1, |x| LaneMath::cos::<M>(x), f64::cos);
    check32::<M>("tan", &angles, 2, |x| LaneMath::tan::<M>(x), f64::tan);
    let hyper = samples32(1e-30, 100.0, n, true);
    check32::<M>("tanh", &hyper, 2, |x| LaneMath::tanh::<M>(x), f64::tanh);
    for y in [
        -3.5f32, -2.0, -1.0, -0.5, 0.0, 0.3, 0.5, 1.0, 2.0, 3.0, 7.25, 40.0,
    ] {
        check32::<M>(
            &format!("powf(x, {y})"),
            &samples32(1e-20, 1e20, n / 10, true),
            1,
            |x| LaneMath::powf::<M>(x, y),
            |x| x.powf(y as f64),
        );
    }
    for n in [-7, -2, -1, 0, 1, 2, 3, 5, 8, 17] {
        for &x in &wide {
            assert_eq!(
                LaneMath::powi::<M>(x, n).to_bits(),
                x.powi(n).to_bits(),
                "powi({x}, {n}) must match f32::powi bit for bit"
            );
        }
    }
}

fn f64_functions<M: Isa>() {
    let n = 200_000;
    let wide = samples64(1e-300, 700.0, n, true);
    check64::<M>("exp", &wide, 1, |x| LaneMath::exp::<M>(x), f64::exp);
    check64::<M>("exp2", &wide, 1, |x| LaneMath::exp2::<M>(x), f64::exp2);
    let positive = samples64(5e-324, 1.7e308, n, false);
    check64::<M>("ln", &positive, 1, |x| LaneMath::ln::<M>(x), f64::ln);
    check64::<M>("log2", &positive, 1, |x| LaneMath::log2::<M>(x), f64::log2);
    check64::<M>(
        "log10",
        &positive,
        1,
        |x| LaneMath::log10::<M>(x),
        f64::log10,
    );
    for n in [-3, 0, 1, 2, 7] {
        for &x in &wide {
            assert_eq!(LaneMath::powi::<M>(x, n).to_bits(), x.powi(n).to_bits());
        }
    }
}

#[test]
fn f32_within_stated_bounds_without_fma() {
    f32_functions::<NoFma>();
}

#[test]
fn f32_within_stated_bounds_with_fma() {
    f32_functions::<WithFma>();
}

#[test]
fn f64_within_stated_bounds_without_fma() {
    f64_functions::<NoFma>();
}

#[test]
fn f64_within_stated_bounds_with_fma() {
    f64_functions::<WithFma>();
}

#[test]
fn special_values_follow_ieee() {
    type M = NoFma;
    assert_eq!(LaneMath::exp::<M>(f32::INFINITY), f32::INFINITY);
    assert_eq!(LaneMath::exp::<M>(f32::NEG_INFINITY), 0.0);
    assert!(LaneMath::exp::<M>(f32::NAN).is_nan());
    assert_eq!(LaneMath::ln::<M>(0.0f32), f32::NEG_INFINITY);
    assert!(LaneMath::ln::<M>(-1.0f32).is_nan());
    assert!(LaneMath::sin::<M>(f32::INFINITY).is_nan());
    assert_eq!(LaneMath::sin::<M>(-0.0f32).to_bits(), (-0.0f32).to_bits());
    assert_eq!(LaneMath::tan::<M>(-0.0f32).to_bits(), (-0.0f32).to_bits());
    assert_eq!(LaneMath::cos::<M>(-0.0f32), 1.0);
    assert_eq!(LaneMath::powf::<M>(0.0f32, -1.0), f32::INFINITY);
    assert_eq!(LaneMath::powf::<M>(-2.0f32, 3.0), -8.0);
    assert!(LaneMath::powf::<M>(-2.0f32, 0.5).is_nan());
    assert_eq!(LaneMath::ln::<M>(f64::INFINITY), f64::INFINITY);
    assert_eq!(LaneMath::exp::<M>(1000.0f64), f64::INFINITY);
}

/// Every positive finite f32 (sin and cos are odd and even by construction of the reduction):
/// the stated bounds hold everywhere, with and without FMA. About three minutes in release:
/// `cargo test --release -p ufunc-runtime --test math_ulp -- --ignored`.
#[test]
#[ignore]
fn f32_trigonometry_exhaustive() {
    fn all<M: Isa>() {
        let mut worst = [(0u64, 0.0f32); 3];
        for bits in 0..0x7f80_0000u32 {
            let x = f32::from_bits(bits);
            let y = x as f64;
            let errors = [
                ulps32(LaneMath::sin::<M>(x), y.sin() as f32),
                ulps32(LaneMath::cos::<M>(x), y.cos() as f32),
                ulps32(LaneMath::tan::<M>(x), y.tan() as f32),
            ];
            for (w, e) in worst.iter_mut().zip(errors) {
                if e > w.0 {
                    *w = (e, x);
                }
            }
        }
        let bounds = [1, 1, 2];
        for ((name, w), bound) in ["sin", "cos", "tan"].iter().zip(worst).zip(bounds) {
            assert!(
                w.0 <= bound,
                "{name} (fma: {}): {} ulp at x = {:e}",
                M::FMA,
                w.0,
                w.1
            );
        }
    }
    all::<WithFma>();
    all::<NoFma>();
}
