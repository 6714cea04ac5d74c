//! The functions the cuda tests run: ufuncs and gufuncs covering the translated subset.

use ufunc::prelude::*;

pub(crate) const SQRT_2PI: f32 = 2.506_628_3;
pub(crate) const OFFSET: f64 = 0.1;

#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn square_sum(a: f32, b: f32) -> f32 {
    (a + b) * (a + b)
}

/// `square_sum` as a gufunc of scalars: its companions must behave as the ufunc's.
#[guvectorize("(),()->()", targets = ["cpu", "cuda"])]
pub(crate) fn gu_square_sum(a: f32, b: f32) -> f32 {
    (a + b) * (a + b)
}

#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn gaussian_pdf(x: f32, mean: f32, sigma: f32) -> f32 {
    (-0.5 * ((x - mean) / sigma).powi(2)).exp() / (sigma * SQRT_2PI)
}

#[kernel_fn]
pub(crate) fn polar_to_cartesian(rho: f32, theta: f32) -> (f32, f32) {
    (rho * theta.cos(), rho * theta.sin())
}

#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn polar_distance(rho1: f32, theta1: f32, rho2: f32, theta2: f32) -> f32 {
    let (x1, y1) = polar_to_cartesian(rho1, theta1);
    let (x2, y2) = polar_to_cartesian(rho2, theta2);
    ((x1 - x2).powi(2) + (y1 - y2).powi(2)).sqrt()
}

#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn int_ops(a: i32, b: i32) -> i32 {
    let q = a / b;
    let r = a % b;
    let s = (a << 3) ^ (b >> 1);
    match r {
        0 => q,
        1 | 2 => q.wrapping_mul(s),
        _ => -q,
    }
}

#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn collatz_steps(n: u64) -> u32 {
    let mut x = n;
    let mut steps = 0;
    while x > 1 {
        x = if x % 2 == 0 { x / 2 } else { 3 * x + 1 };
        steps += 1;
    }
    steps
}

#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn series(x: f64, terms: u32) -> (f64, bool) {
    let mut sum = 0.0;
    let mut term = 1.0;
    for k in 0..terms {
        sum += term;
        term *= x / (k as f64 + 1.0);
        if term.abs() < 1e-17 {
            break;
        }
    }
    (sum + OFFSET, sum > 1.0)
}

#[vectorize(types = [f32, f64], targets = ["cpu", "cuda"])]
pub(crate) fn clamp_scale<T>(x: T, lo: T, hi: T) -> T {
    let y = if x < lo {
        lo
    } else if x > hi {
        hi
    } else {
        x
    };
    y * 2.0 + (x as f64 * 0.5) as T
}

#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn cmul_conj(a: Complex<f64>, b: Complex<f64>) -> Complex<f64> {
    let p = a * b.conj();
    p / Complex::new(p.norm(), 0.0)
}

#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn saturating_cast(x: f32) -> i8 {
    assert!(!x.is_nan());
    (x * 100.0) as i8
}

#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn math_zoo(x: f32, y: f32) -> f32 {
    let a = x.abs().min(3.0).max(-y) + x.mul_add(1.5, -0.25);
    let b = x.floor() + x.ceil() * 0.5 + x.trunc() * 0.25 + x.round();
    let c = if x > 0.5 {
        x * 3.0
    } else if x < -0.5 {
        -x
    } else {
        x / 7.0
    };
    let d = x.exp2() + y.abs().log10() + x.tanh() + y.abs().powf(1.7) + x.atan2(y) + x.hypot(y);
    a + b + c + d + f32::max(x, y) + x.signum() + x.clamp(-1.0, 1.0)
}

#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn bytes_and_bools(a: u8, b: u8, flag: bool) -> (u8, bool) {
    let mixed = a.wrapping_mul(b) ^ 0x5a;
    let shifted = (a << 2) | (b >> 1);
    (if flag { mixed } else { shifted }, !flag && a > b)
}

pub(crate) const SCALE: f32 = 0.5;

#[kernel_fn]
pub(crate) fn scaled(x: f32) -> f32 {
    x * SCALE
}

#[kernel_fn]
pub(crate) fn scaled_twice(x: f32) -> (f32, f32) {
    (scaled(x), scaled(scaled(x)))
}

#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn nested_helpers(x: f32) -> f32 {
    let (a, b) = scaled_twice(x);
    scaled(a) + b + SCALE
}

#[vectorize(targets = ["cpu", "cuda"], fastmath = true)]
pub(crate) fn fused_poly(x: f64) -> f64 {
    let mut acc = 1.0;
    let mut p = x;
    let mut k = 1;
    loop {
        acc += p / k as f64;
        p *= x;
        k += 1;
        if k > 8 {
            break;
        }
    }
    acc
}

#[guvectorize("(m,n),(n,p)->(m,p)", targets = ["cpu", "cuda"])]
pub(crate) fn gu_matmul(a: ArrayView2<f32>, b: ArrayView2<f32>, mut c: ArrayViewMut2<f32>) {
    let (m, n) = a.dim();
    let p = b.ncols();
    for i in 0..m {
        for j in 0..p {
            let mut acc = 0.0;
            for k in 0..n {
                acc += a[[i, k]] * b[[k, j]];
            }
            c[[i, j]] = acc;
        }
    }
}

#[guvectorize("(n),(n)->(),()", targets = ["cpu", "cuda"])]
pub(crate) fn gu_dot_and_norm(a: ArrayView1<f64>, b: ArrayView1<f64>, norm: &mut f64) -> f64 {
    let mut dot = 0.0;
    let mut sq = 0.0;
    for i in 0..a.len() {
        dot += a[i] * b[i];
        sq += a[i] * a[i];
    }
    *norm = sq.sqrt();
    dot
}

#[guvectorize("(n),()->(k)", targets = ["cpu", "cuda"])]
pub(crate) fn gu_histogram(x: ArrayView1<f32>, top: f32, mut counts: ArrayViewMut1<u32>) {
    let k = counts.len();
    for i in 0..x.len() {
        let bin = (x[i] / top * k as f32) as usize;
        if bin < k {
            counts[bin] += 1;
        }
    }
}

#[guvectorize("(),(),(n,2)->()", targets = ["cpu", "cuda"])]
pub(crate) fn gu_inside(x: f32, y: f32, poly: ArrayView2<f32>) -> bool {
    let n = poly.nrows();
    let mut inside = false;
    let mut j = n - 1;
    for i in 0..n {
        let (xi, yi, xj, yj) = (poly[[i, 0]], poly[[i, 1]], poly[[j, 0]], poly[[j, 1]]);
        if (yi > y) != (yj > y) && x < (xj - xi) * (y - yi) / (yj - yi) + xi {
            inside = !inside;
        }
        j = i;
    }
    inside
}

/// A thread per output element on cuda (triangular: the inner bound depends on the outer index).
#[guvectorize("(n,n)->(n,n)", targets = ["cpu", "cuda"])]
pub(crate) fn gu_lower_cumsum(a: ArrayView2<f64>, mut c: ArrayViewMut2<f64>) {
    let n = a.nrows();
    for i in 0..n {
        for j in 0..=i {
            let mut s = 0.0;
            for k in j..=i {
                s += a[[k, j]];
            }
            c[[i, j]] = s;
        }
    }
}

/// A mapped loop whose range runs past the output: an index error, as on the CPU.
#[guvectorize("(n)->(n)", targets = ["cpu", "cuda"])]
pub(crate) fn gu_overrun(a: ArrayView1<f32>, mut c: ArrayViewMut1<f32>) {
    for i in 0..a.len() + 1 {
        c[[i]] = 2.0;
    }
}

/// A mapped loop that runs past the output but guards its writes: fine on every target.
#[guvectorize("(n),(m)->(n)", targets = ["cpu", "cuda"])]
pub(crate) fn gu_guarded(a: ArrayView1<f32>, extra: ArrayView1<f32>, mut c: ArrayViewMut1<f32>) {
    for i in 0..a.len() + extra.len() {
        if i < a.len() {
            c[[i]] = a[[i]] * 2.0 + extra.len() as f32;
        }
    }
}

/// Every cuda ufunc above: name and source.
pub(crate) fn sources() -> Vec<(&'static str, String)> {
    let mut sources = vec![
        ("square_sum", square_sum::cuda_source()),
        ("gaussian_pdf", gaussian_pdf::cuda_source()),
        ("polar_distance", polar_distance::cuda_source()),
        ("int_ops", int_ops::cuda_source()),
        ("collatz_steps", collatz_steps::cuda_source()),
        ("series", series::cuda_source()),
        ("clamp_scale_f32", __ufunc_clamp_scale_f32::cuda_source()),
        ("clamp_scale_f64", __ufunc_clamp_scale_f64::cuda_source()),
        ("cmul_conj", cmul_conj::cuda_source()),
        ("saturating_cast", saturating_cast::cuda_source()),
        ("math_zoo", math_zoo::cuda_source()),
        ("bytes_and_bools", bytes_and_bools::cuda_source()),
        ("nested_helpers", nested_helpers::cuda_source()),
        ("fused_poly", fused_poly::cuda_source()),
        ("gu_square_sum", gu_square_sum::cuda_source()),
        ("gu_matmul", gu_matmul::cuda_source()),
        ("gu_dot_and_norm", gu_dot_and_norm::cuda_source()),
        ("gu_histogram", gu_histogram::cuda_source()),
        ("gu_inside", gu_inside::cuda_source()),
        ("gu_lower_cumsum", gu_lower_cumsum::cuda_source()),
        ("gu_overrun", gu_overrun::cuda_source()),
        ("gu_guarded", gu_guarded::cuda_source()),
    ];
    sources.extend(super::ports::sources());
    sources.extend(super::numba_ports::sources());
    sources.extend(super::methods::sources());
    sources.extend(super::generated::sources());
    sources.extend(super::regressions::sources());
    sources.extend(super::views::sources());
    sources
}
