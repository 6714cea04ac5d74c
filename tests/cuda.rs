//! The `cuda` target. Without a GPU (CI): every kernel generated here is compiled by a real NVRTC
//! (PTX for compute_90, and a cubin for sm_90 with ptxas's register report), the translation is
//! checked on its text, and calls return `Error::NoCudaDevice`. With a GPU, the same functions
//! run on cpu and cuda and must agree within the stated bound; `UFUNC_REQUIRE_GPU=1` turns the
//! "no device" skip into a failure, and `UFUNC_REQUIRE_NVRTC=1` (or `CI`) the NVRTC skip.

mod common;
use common::ulps;
use ndarray::{array, Array1, Array2};
use ufunc::prelude::*;

const SQRT_2PI: f32 = 2.506_628_3;
const OFFSET: f64 = 0.1;

#[vectorize(targets = ["cpu", "cuda"])]
fn square_sum(a: f32, b: f32) -> f32 {
    (a + b) * (a + b)
}

#[vectorize(targets = ["cpu", "cuda"])]
fn gaussian_pdf(x: f32, mean: f32, sigma: f32) -> f32 {
    (-0.5 * ((x - mean) / sigma).powi(2)).exp() / (sigma * SQRT_2PI)
}

#[kernel_fn]
fn polar_to_cartesian(rho: f32, theta: f32) -> (f32, f32) {
    (rho * theta.cos(), rho * theta.sin())
}

#[vectorize(targets = ["cpu", "cuda"])]
fn polar_distance(rho1: f32, theta1: f32, rho2: f32, theta2: f32) -> f32 {
    let (x1, y1) = polar_to_cartesian(rho1, theta1);
    let (x2, y2) = polar_to_cartesian(rho2, theta2);
    ((x1 - x2).powi(2) + (y1 - y2).powi(2)).sqrt()
}

#[vectorize(targets = ["cpu", "cuda"])]
fn int_ops(a: i32, b: i32) -> i32 {
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
fn collatz_steps(n: u64) -> u32 {
    let mut x = n;
    let mut steps = 0;
    while x > 1 {
        x = if x % 2 == 0 { x / 2 } else { 3 * x + 1 };
        steps += 1;
    }
    steps
}

#[vectorize(targets = ["cpu", "cuda"])]
fn series(x: f64, terms: u32) -> (f64, bool) {
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
fn clamp_scale<T>(x: T, lo: T, hi: T) -> T {
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
fn cmul_conj(a: Complex<f64>, b: Complex<f64>) -> Complex<f64> {
    let p = a * b.conj();
    p / Complex::new(p.norm(), 0.0)
}

#[vectorize(targets = ["cpu", "cuda"])]
fn saturating_cast(x: f32) -> i8 {
    assert!(!x.is_nan());
    (x * 100.0) as i8
}

#[vectorize(targets = ["cpu", "cuda"])]
fn math_zoo(x: f32, y: f32) -> f32 {
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
fn bytes_and_bools(a: u8, b: u8, flag: bool) -> (u8, bool) {
    let mixed = a.wrapping_mul(b) ^ 0x5a;
    let shifted = (a << 2) | (b >> 1);
    (if flag { mixed } else { shifted }, !flag && a > b)
}

const SCALE: f32 = 0.5;

#[kernel_fn]
fn scaled(x: f32) -> f32 {
    x * SCALE
}

#[kernel_fn]
fn scaled_twice(x: f32) -> (f32, f32) {
    (scaled(x), scaled(scaled(x)))
}

#[vectorize(targets = ["cpu", "cuda"])]
fn nested_helpers(x: f32) -> f32 {
    let (a, b) = scaled_twice(x);
    scaled(a) + b + SCALE
}

#[vectorize(targets = ["cpu", "cuda"], fastmath = true)]
fn fused_poly(x: f64) -> f64 {
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
fn gu_matmul(a: ArrayView2<f32>, b: ArrayView2<f32>, mut c: ArrayViewMut2<f32>) {
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
fn gu_dot_and_norm(a: ArrayView1<f64>, b: ArrayView1<f64>, norm: &mut f64) -> f64 {
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
fn gu_histogram(x: ArrayView1<f32>, top: f32, mut counts: ArrayViewMut1<u32>) {
    let k = counts.len();
    for i in 0..x.len() {
        let bin = (x[i] / top * k as f32) as usize;
        if bin < k {
            counts[bin] += 1;
        }
    }
}

#[guvectorize("(),(),(n,2)->()", targets = ["cpu", "cuda"])]
fn gu_inside(x: f32, y: f32, poly: ArrayView2<f32>) -> bool {
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
fn gu_lower_cumsum(a: ArrayView2<f64>, mut c: ArrayViewMut2<f64>) {
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
fn gu_overrun(a: ArrayView1<f32>, mut c: ArrayViewMut1<f32>) {
    for i in 0..a.len() + 1 {
        c[[i]] = 2.0;
    }
}

/// Every cuda ufunc above: name and source.
fn sources() -> Vec<(&'static str, String)> {
    vec![
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
        ("gu_matmul", gu_matmul::cuda_source()),
        ("gu_dot_and_norm", gu_dot_and_norm::cuda_source()),
        ("gu_histogram", gu_histogram::cuda_source()),
        ("gu_inside", gu_inside::cuda_source()),
        ("gu_lower_cumsum", gu_lower_cumsum::cuda_source()),
        ("gu_overrun", gu_overrun::cuda_source()),
    ]
}

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1") || std::env::var_os("CI").is_some()
}

#[test]
fn every_kernel_compiles_with_nvrtc() {
    if !ufunc::cuda::nvrtc_available() {
        assert!(
            !required("UFUNC_REQUIRE_NVRTC"),
            "NVRTC is required here but libnvrtc.so.13 cannot be loaded: run `bash scripts/test.sh`"
        );
        eprintln!("SKIPPED every_kernel_compiles_with_nvrtc: libnvrtc.so.13 not found (run `bash scripts/test.sh`, which installs it)");
        return;
    }
    for (name, src) in sources() {
        let ptx = ufunc::cuda::compile(
            &src,
            "compute_90",
            &["--fmad=false"],
            ufunc::cuda::NvrtcOutput::Ptx,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let ptx = String::from_utf8(ptx.image).unwrap();
        assert!(
            ptx.contains(&format!(".entry {name}_")),
            "{name}: a kernel named after the function"
        );
        let cubin = ufunc::cuda::compile(
            &src,
            "sm_90",
            &["--fmad=false", "--ptxas-options=-v"],
            ufunc::cuda::NvrtcOutput::Cubin,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            cubin.image.starts_with(b"\x7fELF"),
            "{name}: a cubin is an ELF image"
        );
        for line in cubin
            .log
            .lines()
            .filter(|l| l.contains("registers") || l.contains("spill"))
        {
            eprintln!("{name}: {}", line.trim());
        }
        assert!(
            !cubin
                .log
                .lines()
                .any(|l| l.contains("bytes spill stores") && !l.contains(" 0 bytes spill stores")),
            "{name} spills registers:\n{}",
            cubin.log
        );
    }
}

#[test]
fn the_cpu_side_of_the_new_bodies_works() {
    // Bodies written for cuda are ordinary ufuncs on the CPU too.
    let x = array![0.3f32, -2.0, 5.5];
    let z = math_zoo(&x, 1.5f32).unwrap();
    for (i, &v) in x.iter().enumerate() {
        let want = math_zoo::scalar(v, 1.5);
        assert!(
            (z[i] - want).abs() <= 1e-5 * (1.0 + want.abs()),
            "{} vs {want}",
            z[i]
        );
    }
    assert_eq!(nested_helpers(&array![2.0f32]).unwrap()[0], 0.5 + 0.5 + 0.5);
    assert_eq!(
        bytes_and_bools(&array![200u8], 3u8, true).unwrap().0[0],
        200u8.wrapping_mul(3) ^ 0x5a
    );
    assert!((fused_poly(&array![0.5f64]).unwrap()[0] - fused_poly::scalar(0.5)).abs() < 1e-15);
}

#[test]
fn translation_keeps_single_precision_and_exact_constants() {
    let src = gaussian_pdf::cuda_source();
    assert!(
        src.contains(
            "__device__ inline f32 __ufunc_body_gaussian_pdf(f32 r_x, f32 r_mean, f32 r_sigma)"
        ),
        "{src}"
    );
    let body_start = src.find("__ufunc_body_gaussian_pdf(f32").unwrap();
    let body = &src[body_start..body_start + src[body_start..].find("}\n").unwrap()];
    assert!(body.contains("-0.5f * "), "{body}");
    assert!(!body.contains("double") && !body.contains("f64"), "{body}");
    // The constant is captured by value, bit for bit.
    assert!(
        src.contains(&format!(
            "__ufunc_const_SQRT_2PI = {};",
            ufunc::__private::CudaLiteral::cuda_literal(&SQRT_2PI)
        )),
        "{src}"
    );
    let src = series::cuda_source();
    assert!(
        src.contains("__ufunc_const_OFFSET = 0x1.999999999999ap-4;"),
        "{src}"
    );
    assert!(src.contains("f64 r_sum = 0.0;"), "{src}");
    let src = polar_distance::cuda_source();
    assert!(src.contains("__ufunc_helper_polar_to_cartesian"), "{src}");
    assert_eq!(
        src.matches("#define __UFUNC_HELPER_polar_to_cartesian")
            .count(),
        1
    );
    let src = nested_helpers::cuda_source();
    // A helper reached twice is included twice, behind an include guard (NVRTC compiles it once:
    // see every_kernel_compiles_with_nvrtc).
    assert!(src.contains("#ifndef __UFUNC_HELPER_scaled\n"), "{src}");
    assert!(src.contains("#ifndef __ufunc_const_SCALE_DEFINED"), "{src}");
    let src = int_ops::cuda_source();
    assert!(
        src.contains("__ufunc_div(r_a, r_b)") && src.contains("__ufunc_rem(r_a, r_b)"),
        "{src}"
    );
}

/// Runs `check` against a GPU (or the simulator, with UFUNC_CUDA_SIM=1), or reports a visible
/// skip (a failure with UFUNC_REQUIRE_GPU=1). One check at a time: they count transfers.
fn on_gpu(test: &str, check: impl FnOnce()) {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    match square_sum::on(Target::Cuda, &array![1.0f32], 1.0f32) {
        Err(Error::NoCudaDevice { reason }) => {
            assert!(
                std::env::var("UFUNC_REQUIRE_GPU").map_or(true, |v| v != "1"),
                "{test}: a GPU is required (UFUNC_REQUIRE_GPU=1) but: {reason}"
            );
            eprintln!("SKIPPED {test}: no CUDA device ({reason})");
        }
        _ => check(),
    }
}

#[test]
fn without_a_device_the_call_is_an_error() {
    if let Err(e) = square_sum::on(Target::Cuda, &array![1.0f32], 1.0f32) {
        assert!(
            matches!(
                e,
                Error::NoCudaDevice { .. } | Error::Nvrtc { .. } | Error::NvrtcUnavailable
            ),
            "{e}"
        );
    }
    // Functions not compiled for cuda say so.
    #[vectorize]
    fn cpu_only(x: f32) -> f32 {
        x
    }
    let e = cpu_only::on(Target::Cuda, &array![1.0f32]).unwrap_err();
    assert!(matches!(e, Error::TargetNotCompiled { .. }), "{e}");
}

#[test]
fn cpu_and_cuda_agree() {
    on_gpu("cpu_and_cuda_agree", || {
        let x = Array1::from_shape_fn(100_003, |i| (i as f32) * 1e-3 - 50.0);
        let y = x.mapv(|v| v * 0.37 + 1.0);
        // Exact: IEEE add/mul, no contraction (--fmad=false).
        assert_eq!(
            square_sum::on(Target::Cuda, &x, &y).unwrap(),
            square_sum::on(Target::Cpu, &x, &y).unwrap()
        );
        // Transcendentals: within 4 ulp (CUDA's expf/sinf/cosf are within 2 ulp, ours within 1).
        let g_gpu = gaussian_pdf::on(Target::Cuda, &x, 0.5f32, 3.0f32).unwrap();
        let g_cpu = gaussian_pdf::on(Target::Cpu, &x, 0.5f32, 3.0f32).unwrap();
        assert!(g_gpu.iter().zip(&g_cpu).all(|(a, b)| ulps(*a, *b) <= 4));
        let d_gpu = polar_distance::on(Target::Cuda, &x, &y, &y, &x).unwrap();
        let d_cpu = polar_distance::on(Target::Cpu, &x, &y, &y, &x).unwrap();
        assert!(d_gpu
            .iter()
            .zip(&d_cpu)
            .all(|(a, b)| (a - b).abs() <= 1e-4 * (1.0 + b.abs())));
        // Integers, loops, match, tuples, generics, complex, casts: exact.
        let a = Array1::from_shape_fn(1000, |i| i as i32 * 7919 - 3_000_000);
        let b = Array1::from_shape_fn(1000, |i| {
            (i as i32 % 13) - 6 + if i % 13 == 6 { 1 } else { 0 }
        });
        assert_eq!(
            int_ops::on(Target::Cuda, &a, &b).unwrap(),
            int_ops::on(Target::Cpu, &a, &b).unwrap()
        );
        let n = Array1::from_shape_fn(1000, |i| i as u64 + 1);
        assert_eq!(
            collatz_steps::on(Target::Cuda, &n).unwrap(),
            collatz_steps::on(Target::Cpu, &n).unwrap()
        );
        let xs = Array2::from_shape_fn((10, 100), |(i, j)| (i * 100 + j) as f64 * 0.01 - 5.0);
        let (s_gpu, b_gpu) = series::on(Target::Cuda, &xs, 30u32).unwrap();
        let (s_cpu, b_cpu) = series::on(Target::Cpu, &xs, 30u32).unwrap();
        assert_eq!(b_gpu, b_cpu);
        assert!(s_gpu
            .iter()
            .zip(&s_cpu)
            .all(|(p, q)| (p - q).abs() <= 1e-12 * (1.0 + q.abs())));
        let v = Array1::from_shape_fn(500, |i| i as f32 * 0.1 - 25.0);
        assert_eq!(
            clamp_scale::on(Target::Cuda, &v, -3.0f32, 4.0f32).unwrap(),
            clamp_scale::on(Target::Cpu, &v, -3.0f32, 4.0f32).unwrap()
        );
        assert_eq!(
            saturating_cast::on(Target::Cuda, &v).unwrap(),
            saturating_cast::on(Target::Cpu, &v).unwrap()
        );
        let z = Array1::from_shape_fn(100, |i| Complex::new(i as f64 - 50.0, 1.0 + i as f64));
        let w = cmul_conj::on(Target::Cuda, &z, Complex::new(0.5, -2.0)).unwrap();
        let w_cpu = cmul_conj::on(Target::Cpu, &z, Complex::new(0.5, -2.0)).unwrap();
        assert!(w.iter().zip(&w_cpu).all(|(p, q)| (p - q).norm() <= 1e-12));
        // Broadcasting and strided operands go through the strided kernel.
        let m = Array2::from_shape_fn((300, 7), |(i, j)| (i + j) as f32);
        let row = Array1::from_shape_fn(7, |j| j as f32 * 0.5);
        assert_eq!(
            square_sum::on(
                Target::Cuda,
                &m.t(),
                &row.view().insert_axis(ndarray::Axis(1))
            )
            .unwrap(),
            square_sum::on(
                Target::Cpu,
                &m.t(),
                &row.view().insert_axis(ndarray::Axis(1))
            )
            .unwrap()
        );
    });
}

#[test]
fn gufuncs_agree_between_cpu_and_cuda() {
    on_gpu("gufuncs_agree_between_cpu_and_cuda", || {
        let a = ndarray::Array3::from_shape_fn((1000, 2, 4), |(q, i, k)| {
            ((q + 2 * i + 3 * k) % 7) as f32 - 3.0
        });
        let b = ndarray::Array3::from_shape_fn((1000, 4, 5), |(q, k, j)| {
            ((q + k + 5 * j) % 5) as f32 - 2.0
        });
        // Small integers: the sums are exact in f32 on both sides.
        assert_eq!(
            gu_matmul::on(Target::Cuda, &a, &b).unwrap(),
            gu_matmul::on(Target::Cpu, &a, &b).unwrap()
        );
        // Loop broadcasting and a transposed operand.
        let b2 = Array2::from_shape_fn((5, 4), |(j, k)| (j * 4 + k) as f32);
        assert_eq!(
            gu_matmul::on(Target::Cuda, &a, &b2.t()).unwrap(),
            gu_matmul::on(Target::Cpu, &a, &b2.t()).unwrap()
        );
        let x = Array2::from_shape_fn((50, 9), |(i, j)| (i as f64) * 0.1 - j as f64);
        let (d_gpu, n_gpu) = gu_dot_and_norm::on(Target::Cuda, &x, &x.row(3)).unwrap();
        let (d_cpu, n_cpu) = gu_dot_and_norm::on(Target::Cpu, &x, &x.row(3)).unwrap();
        assert!(d_gpu
            .iter()
            .zip(&d_cpu)
            .all(|(p, q)| (p - q).abs() <= 1e-12 * (1.0 + q.abs())));
        assert!(n_gpu
            .iter()
            .zip(&n_cpu)
            .all(|(p, q)| (p - q).abs() <= 1e-12 * (1.0 + q.abs())));
        let v = Array2::from_shape_fn((20, 100), |(i, j)| ((i * 37 + j * 11) % 100) as f32 * 0.01);
        let mut c_gpu = Array2::<u32>::zeros((20, 8));
        let mut c_cpu = Array2::<u32>::zeros((20, 8));
        gu_histogram::out_on(Target::Cuda, &v, 1.0f32, &mut c_gpu).unwrap();
        gu_histogram::out_on(Target::Cpu, &v, 1.0f32, &mut c_cpu).unwrap();
        assert_eq!(c_gpu, c_cpu);
        let poly = Array2::from_shape_fn((24, 2), |(k, c)| {
            let angle = k as f32 * std::f32::consts::TAU / 24.0;
            let r = if k % 2 == 0 { 45.0 } else { 20.0 };
            50.0 + r * if c == 0 { angle.cos() } else { angle.sin() }
        });
        let xs = Array1::from_shape_fn(100, |i| i as f32 + 0.5).insert_axis(ndarray::Axis(0));
        let ys = Array1::from_shape_fn(100, |i| i as f32 + 0.5).insert_axis(ndarray::Axis(1));
        assert_eq!(
            gu_inside::on(Target::Cuda, &xs, &ys, &poly).unwrap(),
            gu_inside::on(Target::Cpu, &xs, &ys, &poly).unwrap()
        );
    });
}

#[test]
fn panics_in_a_kernel_are_errors() {
    on_gpu("panics_in_a_kernel_are_errors", || {
        let e = int_ops::on(Target::Cuda, &array![1, 2, 3], &array![1, 0, 1]).unwrap_err();
        assert!(
            matches!(&e, Error::KernelPanic { message, .. } if message.contains("divide by zero")),
            "{e}"
        );
        let e = saturating_cast::on(Target::Cuda, &array![1.0f32, f32::NAN]).unwrap_err();
        assert!(matches!(e, Error::KernelPanic { .. }), "{e}");
        // The flag is cleared: the next call succeeds.
        assert!(int_ops::on(Target::Cuda, &array![4], &array![2]).is_ok());
    });
}

#[test]
fn transfers_are_counted_and_kernels_cached() {
    on_gpu("transfers_are_counted_and_kernels_cached", || {
        let x = Array1::from_elem(1000, 1.0f32);
        let _ = square_sum::on(Target::Cuda, &x, &x).unwrap();
        let before = ufunc::cuda::cuda_counters();
        let _ = square_sum::on(Target::Cuda, &x, &x).unwrap();
        let after = ufunc::cuda::cuda_counters();
        assert_eq!(after.host_to_device - before.host_to_device, 2);
        assert_eq!(after.device_to_host - before.device_to_host, 1);
        assert_eq!(
            after.compiles, before.compiles,
            "the second call compiles nothing"
        );
    });
}

/// Run by `a_second_process_compiles_nothing` in a child process: compiles (or loads from the
/// disk cache) one kernel and prints how many NVRTC compilations that took.
#[test]
fn cache_child() {
    let Some(dir) = std::env::var_os("UFUNC_TEST_CACHE_CHILD") else {
        return;
    };
    assert_eq!(
        Some(std::path::PathBuf::from(&dir)),
        ufunc::cuda::kernel_cache_dir()
    );
    let cubin = ufunc::cuda::cached_cubin(&gaussian_pdf::cuda_source(), "sm_90", &["--fmad=false"])
        .unwrap();
    assert!(cubin.starts_with(b"\x7fELF"));
    println!("NVRTC_COMPILES={}", ufunc::cuda::cuda_counters().compiles);
}

#[test]
fn a_second_process_compiles_nothing() {
    if !ufunc::cuda::nvrtc_available() {
        assert!(!required("UFUNC_REQUIRE_NVRTC"), "NVRTC is required here");
        eprintln!("SKIPPED a_second_process_compiles_nothing: libnvrtc.so.13 not found");
        return;
    }
    let dir = std::env::temp_dir().join(format!("ufunc-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = || {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "cache_child", "--nocapture", "--test-threads=1"])
            .env("UFUNC_CACHE_DIR", &dir)
            .env("UFUNC_TEST_CACHE_CHILD", &dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text.lines()
            .find_map(|l| l.split("NVRTC_COMPILES=").nth(1))
            .map(|n| n.trim().parse::<usize>().unwrap())
            .unwrap()
    };
    assert_eq!(run(), 1, "a cold cache compiles once");
    assert_eq!(run(), 0, "a second process loads the cubin from disk");
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(files.len(), 1, "one cubin, no leftover temporary files");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn device_arrays_need_a_device() {
    let x = array![1.0f32, 2.0];
    match ufunc::cuda::to_device(&x) {
        Ok(d) => assert_eq!(d.shape(), &[2]),
        Err(e) => assert!(matches!(e, Error::NoCudaDevice { .. }), "{e}"),
    }
    match square_sum::on_device(&x, 1.0f32) {
        Ok(d) => assert_eq!(d.copy_to_host().unwrap(), array![4.0f32, 9.0]),
        Err(e) => assert!(matches!(e, Error::NoCudaDevice { .. }), "{e}"),
    }
}

#[test]
fn device_arrays_stay_on_the_device() {
    on_gpu("device_arrays_stay_on_the_device", || {
        use ufunc::cuda::{cuda_counters, device_array, to_device};
        let x = Array2::from_shape_fn((300, 200), |(i, j)| (i as f32) * 0.01 - j as f32 * 0.02);
        let y = x.t().to_owned();
        let dx = to_device(&x).unwrap();
        let dy = to_device(&y.t()).unwrap();
        assert_eq!(dx.copy_to_host().unwrap(), x);
        let before = cuda_counters();
        let dz = square_sum::on_device(&dx, &dy).unwrap();
        let after = cuda_counters();
        assert_eq!(
            after.host_to_device, before.host_to_device,
            "device operands do not move"
        );
        assert_eq!(
            after.device_to_host, before.device_to_host,
            "the result stays on the device"
        );
        // Chained, with a scalar and a broadcast row copied in.
        let row = Array1::from_shape_fn(200, |j| j as f32);
        let dw = square_sum::on_device(&dz, &row).unwrap();
        let want = square_sum(&square_sum(&x, &y.t()).unwrap(), &row).unwrap();
        assert_eq!(dw.copy_to_host().unwrap(), want);
        // A copy on the device moves nothing through the host.
        let mut copy = device_array::<f32, _>((300, 200)).unwrap();
        let before = cuda_counters();
        copy.copy_from(&dw).unwrap();
        assert_eq!(cuda_counters().host_to_device, before.host_to_device);
        assert_eq!(copy.copy_to_host().unwrap(), want);
        assert!(matches!(
            device_array::<f32, _>((2, 2)).unwrap().copy_from(&dw),
            Err(Error::OutputShape { .. })
        ));
        // Into an existing device array.
        let mut out = device_array::<f32, _>((300, 200)).unwrap();
        square_sum::out_device(&dx, 0.5f32, &mut out).unwrap();
        assert_eq!(out.copy_to_host().unwrap(), square_sum(&x, 0.5f32).unwrap());
        let mut wrong = device_array::<f32, _>((2, 2)).unwrap();
        assert!(matches!(
            square_sum::out_device(&dx, 0.5f32, &mut wrong),
            Err(Error::OutputShape { .. })
        ));
        // Several outputs come back as several device arrays.
        let xs = Array1::from_shape_fn(64, |i| i as f64 * 0.1);
        let (s, b) = series::on_device(&xs, 20u32).unwrap();
        let (s_cpu, b_cpu) = series(&xs, 20u32).unwrap();
        assert!(s
            .copy_to_host()
            .unwrap()
            .iter()
            .zip(&s_cpu)
            .all(|(p, q)| (p - q).abs() <= 1e-12 * (1.0 + q.abs())));
        assert_eq!(b.copy_to_host().unwrap(), b_cpu);
    });
}

#[test]
fn device_views_are_operands_without_copies() {
    on_gpu("device_views_are_operands_without_copies", || {
        use ndarray::s;
        use ufunc::cuda::{cuda_counters, to_device};
        let x = Array2::from_shape_fn((40, 30), |(i, j)| (i as f32) - 0.5 * j as f32);
        let row = Array1::from_shape_fn(30, |j| j as f32 * 0.25);
        let dx = to_device(&x).unwrap();
        let drow = to_device(&row).unwrap();
        let before = cuda_counters();
        // Transposed, sliced with steps (negative too), an index, a broadcast row: each is a
        // view of the same device memory, read in place by the strided kernel.
        let t = square_sum::on_device(dx.t(), 1.0f32).unwrap();
        let sliced = dx.view().slice(s![3..31;4, ..;-3]).unwrap();
        let z = square_sum::on_device(&sliced, drow.view().slice(s![..;3]).unwrap()).unwrap();
        let col = square_sum::on_device(dx.view().slice(s![.., 7]).unwrap(), 2.0f32).unwrap();
        let wide = drow.view().broadcast((40, 30)).unwrap();
        let b = square_sum::on_device(&dx, &wide).unwrap();
        let after = cuda_counters();
        assert_eq!(
            after.host_to_device - before.host_to_device,
            2,
            "the two scalars are copied in, no device operand moves"
        );
        assert_eq!(after.device_to_host, before.device_to_host);
        assert_eq!(
            t.copy_to_host().unwrap(),
            square_sum(&x.t(), 1.0f32).unwrap()
        );
        let x_sliced = x.slice(s![3..31;4, ..;-3]);
        assert_eq!(sliced.copy_to_host().unwrap(), x_sliced);
        assert_eq!(
            z.copy_to_host().unwrap(),
            square_sum(&x_sliced, &row.slice(s![..;3])).unwrap()
        );
        assert_eq!(
            col.copy_to_host().unwrap(),
            square_sum(&x.column(7), 2.0f32).unwrap()
        );
        assert_eq!(b.copy_to_host().unwrap(), square_sum(&x, &row).unwrap());
        // Views that do not fit are errors naming the shape.
        let e = dx.view().slice(s![..41, ..]).unwrap_err();
        assert!(e.to_string().contains("(40,30)"), "{e}");
        assert!(matches!(
            drow.view().broadcast((40, 29)),
            Err(Error::Broadcast { .. })
        ));
        assert!(matches!(
            dx.view().permuted_axes([0, 0]),
            Err(Error::View { .. })
        ));
        let p = dx.view().permuted_axes([1, 0]).unwrap();
        assert_eq!(p.copy_to_host().unwrap(), x.t());
    });
}

#[test]
fn streams_queue_work_and_report_panics_at_synchronize() {
    on_gpu(
        "streams_queue_work_and_report_panics_at_synchronize",
        || {
            use ufunc::cuda::{device_array, to_device, Stream};
            let x = Array1::from_shape_fn(10_000, |i| i as f32 * 1e-2);
            let dx = to_device(&x).unwrap();
            let stream = Stream::new().unwrap();
            // Chained calls queue without waiting; the results are read after the sync.
            let dz = square_sum::on_stream(&stream, &dx, 1.0f32).unwrap();
            let dw = square_sum::on_stream(&stream, &dz, &dx).unwrap();
            let mut out = device_array::<f32, _>(10_000).unwrap();
            square_sum::out_stream(&stream, &dw, -1.0f32, &mut out).unwrap();
            stream.synchronize().unwrap();
            let z = square_sum(&x, 1.0f32).unwrap();
            let w = square_sum(&z, &x).unwrap();
            assert_eq!(dw.copy_to_host().unwrap(), w);
            assert_eq!(
                out.copy_to_host().unwrap(),
                square_sum(&w, -1.0f32).unwrap()
            );
            // A panic in a queued kernel is the sync's error, and only once.
            let a = array![1, 2, 3];
            let zero = array![1, 0, 1];
            let queued = int_ops::on_stream(&stream, &a, &zero);
            assert!(queued.is_ok(), "queued, not yet run or checked");
            let e = stream.synchronize().unwrap_err();
            assert!(
                matches!(&e, Error::KernelPanic { function, .. } if *function == "int_ops"),
                "{e}"
            );
            stream.synchronize().unwrap();
            // auto_synchronize: the work's value after the sync, or the sync's error.
            let host = stream
                .auto_synchronize(|s| square_sum::on_stream(s, &dx, &dx)?.copy_to_host())
                .unwrap();
            assert_eq!(host, square_sum(&x, &x).unwrap());
            let e = stream
                .auto_synchronize(|s| int_ops::on_stream(s, &a, &zero).map(|_| ()))
                .unwrap_err();
            assert!(matches!(e, Error::KernelPanic { .. }), "{e}");
            // Two streams, one result used by the other.
            let other = Stream::new().unwrap();
            let d1 = square_sum::on_stream(&stream, &dx, 0.5f32).unwrap();
            let d2 = square_sum::on_stream(&other, &d1, 0.5f32).unwrap();
            other.synchronize().unwrap();
            stream.synchronize().unwrap();
            assert_eq!(
                d2.copy_to_host().unwrap(),
                square_sum(&square_sum(&x, 0.5f32).unwrap(), 0.5f32).unwrap()
            );
        },
    );
}

#[test]
fn gufuncs_take_and_leave_device_arrays() {
    on_gpu("gufuncs_take_and_leave_device_arrays", || {
        use ufunc::cuda::{cuda_counters, device_array, to_device, Stream};
        let a = ndarray::Array3::from_shape_fn((64, 3, 4), |(q, i, k)| ((q + i * k) % 5) as f32);
        let b = Array2::from_shape_fn((5, 4), |(j, k)| (j * 4 + k) as f32 - 6.0);
        let (da, db) = (to_device(&a).unwrap(), to_device(&b).unwrap());
        let before = cuda_counters();
        // A transposed device view as the (n,p) operand, broadcast over the loop dimension.
        let dc = gu_matmul::on_device(&da, db.t()).unwrap();
        let after = cuda_counters();
        assert_eq!(after.host_to_device, before.host_to_device);
        assert_eq!(after.device_to_host, before.device_to_host);
        assert_eq!(dc.shape(), &[64, 3, 5]);
        let want = gu_matmul::on(Target::Cpu, &a, &b.t()).unwrap();
        assert_eq!(dc.copy_to_host().unwrap(), want);
        // Chained on the device: (a @ b.T) @ ones(5, 2).
        let ones = Array2::<f32>::ones((5, 2));
        let dd = gu_matmul::on_device(&dc, &ones).unwrap();
        assert_eq!(
            dd.copy_to_host().unwrap(),
            gu_matmul::on(Target::Cpu, &want, &ones).unwrap()
        );
        // Several outputs, and `out_device` with an output-only dimension from the array.
        let x = Array2::from_shape_fn((16, 9), |(i, j)| i as f64 - 0.25 * j as f64);
        let dx = to_device(&x).unwrap();
        let (dot, norm) =
            gu_dot_and_norm::on_device(&dx, dx.view().slice(ndarray::s![2, ..]).unwrap()).unwrap();
        let (dot_cpu, norm_cpu) = gu_dot_and_norm::on(Target::Cpu, &x, &x.row(2)).unwrap();
        assert_eq!(dot.copy_to_host().unwrap(), dot_cpu);
        assert_eq!(norm.copy_to_host().unwrap(), norm_cpu);
        let v = Array2::from_shape_fn((20, 100), |(i, j)| ((i * 37 + j * 11) % 100) as f32 * 0.01);
        let mut counts = device_array::<u32, _>(ndarray::IxDyn(&[20, 8])).unwrap();
        let stream = Stream::new().unwrap();
        gu_histogram::out_stream(&stream, &v, 1.0f32, &mut counts).unwrap();
        stream.synchronize().unwrap();
        let mut counts_cpu = Array2::<u32>::zeros((20, 8));
        gu_histogram::out_on(Target::Cpu, &v, 1.0f32, &mut counts_cpu).unwrap();
        assert_eq!(counts.copy_to_host().unwrap(), counts_cpu.into_dyn());
        // Shapes that do not fit the layout are errors naming the operand.
        let e = gu_matmul::on_device(&da, &da).unwrap_err();
        assert!(matches!(e, Error::CoreDimMismatch { .. }), "{e}");
        let mut wrong = device_array::<u32, _>(ndarray::IxDyn(&[19, 8])).unwrap();
        assert!(gu_histogram::out_device(&v, 1.0f32, &mut wrong).is_err());
    });
}

#[test]
fn independent_core_loops_get_a_thread_per_output_element() {
    // Which gufuncs are mapped (checked on the generated source, GPU or not).
    for (mapped, src) in [
        (true, gu_matmul::cuda_source()),
        (true, gu_lower_cumsum::cuda_source()),
        (true, gu_overrun::cuda_source()),
        (false, gu_histogram::cuda_source()),
        (false, gu_dot_and_norm::cuda_source()),
        (false, gu_inside::cuda_source()),
    ] {
        assert_eq!(src.contains("__ufunc_mapped[0]"), mapped, "{src}");
    }
    assert!(gu_matmul::cuda_source().contains("__ufunc_mapped[1]"));
    on_gpu(
        "independent_core_loops_get_a_thread_per_output_element",
        || {
            // A batch of one matrix: many threads, the same result.
            let a = Array2::from_shape_fn((37, 29), |(i, k)| ((i * 3 + k * 5) % 11) as f32 - 5.0);
            let b = Array2::from_shape_fn((29, 41), |(k, j)| ((k + 2 * j) % 7) as f32 - 3.0);
            assert_eq!(
                gu_matmul::on(Target::Cuda, &a, &b).unwrap(),
                gu_matmul::on(Target::Cpu, &a, &b).unwrap()
            );
            let m = ndarray::Array3::from_shape_fn((3, 9, 9), |(q, i, j)| {
                (q * 81 + i * 9 + j) as f64 * 0.5
            });
            assert_eq!(
                gu_lower_cumsum::on(Target::Cuda, &m).unwrap(),
                gu_lower_cumsum::on(Target::Cpu, &m).unwrap()
            );
            // Empty core dimensions launch nothing.
            let empty = ndarray::Array3::<f64>::zeros((4, 0, 0));
            assert_eq!(
                gu_lower_cumsum::on(Target::Cuda, &empty).unwrap().shape(),
                &[4, 0, 0]
            );
            let x = Array1::from_elem(8, 1.0f32);
            assert!(matches!(
                gu_overrun::on(Target::Cpu, &x),
                Err(Error::KernelPanic { .. })
            ));
            let e = gu_overrun::on(Target::Cuda, &x).unwrap_err();
            assert!(
                matches!(&e, Error::KernelPanic { message, .. } if message.contains("index out of bounds")),
                "{e}"
            );
        },
    );
}

/// Run by `the_simulator_reports_its_compiler_failing` in a child process.
#[test]
fn sim_child() {
    if std::env::var_os("UFUNC_TEST_SIM_CHILD").is_none() {
        return;
    }
    let e = square_sum::on(Target::Cuda, &array![1.0f32], 1.0f32).unwrap_err();
    println!("SIM_ERROR={e}");
}

#[test]
fn the_simulator_reports_its_compiler_failing() {
    let dir = std::env::temp_dir().join(format!("ufunc-sim-test-{}", std::process::id()));
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "sim_child", "--nocapture", "--test-threads=1"])
        .env("UFUNC_TEST_SIM_CHILD", "1")
        .env("UFUNC_CUDA_SIM", "1")
        .env("CXX", "/nonexistent/c++")
        .env("UFUNC_CACHE_DIR", &dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        text.contains("SIM_ERROR=the CUDA simulator's compiler `/nonexistent/c++` failed")
            && text.contains("cannot run `/nonexistent/c++`")
            && text.contains("--- source ---"),
        "{text}"
    );
}
