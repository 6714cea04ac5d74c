//! Kernels ported from Numba's tests and documentation (see `tests/numba_ports.rs` for the CPU
//! targets), and the issue 13 reproducers, on `cuda`: each runs on cpu and cuda and is compared
//! with values computed here by a plain loop; each source is compiled by NVRTC in
//! `every_kernel_compiles_with_nvrtc`.

use super::on_gpu;
use ndarray::{array, Array1};
use ufunc::cuda::{to_device, Stream};
use ufunc::prelude::*;

/// test_gufunc.py names its outputs `out` (issue 13, item 1).
#[guvectorize("(n)->()", targets = ["cpu", "cuda"])]
pub(crate) fn port_sum_row(inp: ArrayView1<i32>, out: &mut i32) {
    let mut tmp = 0;
    for i in 0..inp.len() {
        tmp += inp[i];
    }
    *out = tmp;
}

/// `let` shadowing a parameter, and twice in one scope (item 3).
#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn port_shadow(x: f64, k: i32) -> f64 {
    let x = x.abs();
    let k = k + 1;
    let k = k * 2;
    let mut acc = 0.0;
    for i in 0..k {
        let x = x + i as f64;
        acc += x;
    }
    acc + x
}

/// Shadowing a view's length inside a gufunc core (item 3).
#[guvectorize("(n)->()", targets = ["cpu", "cuda"])]
pub(crate) fn port_shadow_len(a: ArrayView1<f32>) -> f32 {
    let n = a.len();
    let n = n - 1;
    let mut s = 0.0;
    for i in 0..n {
        s += a[i + 1] - a[i];
    }
    s
}

/// `(a..b).step_by(k)` (Numba's `range(a, b, k)`) and `(a..b).rev()` (`range(b - 1, a - 1,
/// -1)`), half-open and closed, with `continue`, empty and negative ranges.
#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn port_stepped_loops(n: i32, k: u32) -> f64 {
    let mut s = 0.0;
    for i in (-3..n).step_by(2) {
        if i == 5 {
            continue;
        }
        s += i as f64;
    }
    for i in (-2..=n).step_by(3) {
        s += 0.5 * i as f64;
    }
    for i in (0..k).rev() {
        if i % 3 == 0 {
            continue;
        }
        s = s * 2.0 + i as f64;
    }
    for i in (1..=k).rev() {
        s -= i as f64 * 0.25;
    }
    for _ in (k..k).rev() {
        s += 1000.0;
    }
    s
}

/// The loops of `port_stepped_loops` as plain Rust over collected ranges.
fn stepped_expected(n: i32, k: u32) -> f64 {
    let mut s = 0.0;
    let mut i = -3;
    while i < n {
        if i != 5 {
            s += i as f64;
        }
        i += 2;
    }
    let mut i = -2;
    while i <= n {
        s += 0.5 * i as f64;
        i += 3;
    }
    let down: Vec<u32> = (0..k).collect();
    for &i in down.iter().rev().filter(|&&i| i % 3 != 0) {
        s = s * 2.0 + i as f64;
    }
    for i in (1..=k).collect::<Vec<_>>().into_iter().rev() {
        s -= i as f64 * 0.25;
    }
    s
}

#[test]
fn stepped_and_reversed_loops_agree() {
    let n = array![-5, -3, -2, 0, 1, 5, 6, 20];
    let k = array![0u32, 1, 5, 17];
    let (n, k) = (
        n.insert_axis(ndarray::Axis(1)),
        k.insert_axis(ndarray::Axis(0)),
    );
    let check = |target: Target| {
        let got = port_stepped_loops::on(target, &n, &k).unwrap();
        for ((i, j), &v) in got.indexed_iter() {
            assert_eq!(
                v,
                stepped_expected(n[[i, 0]], k[[0, j]]),
                "{target:?} n {} k {}",
                n[[i, 0]],
                k[[0, j]]
            );
        }
    };
    check(Target::Cpu);
    on_gpu("stepped_and_reversed_loops_agree", || check(Target::Cuda));
}

pub(crate) fn sources() -> Vec<(&'static str, String)> {
    vec![
        ("port_stepped_loops", port_stepped_loops::cuda_source()),
        ("port_sum_row", port_sum_row::cuda_source()),
        ("port_shadow", port_shadow::cuda_source()),
        ("port_shadow_len", port_shadow_len::cuda_source()),
        ("port_add_intp", port_add_intp::cuda_source()),
        ("port_fast_norm", port_fast_norm::cuda_source()),
        ("port_complex_mix", port_complex_mix::cuda_source()),
        ("port_normalise_f32", port_normalise_f32::cuda_source()),
        ("port_helper_panics", port_helper_panics::cuda_source()),
        (
            "port_helper_panics_core",
            port_helper_panics_core::cuda_source(),
        ),
        (
            "port_scaled_cumsum_f32",
            __ufunc_port_scaled_cumsum_f32::cuda_source(),
        ),
        (
            "port_scaled_cumsum_f64",
            __ufunc_port_scaled_cumsum_f64::cuda_source(),
        ),
        (
            "port_scaled_cumsum_i32",
            __ufunc_port_scaled_cumsum_i32::cuda_source(),
        ),
    ]
}

fn shadow_expected(x: f64, k: i32) -> f64 {
    let k2 = (k + 1) * 2;
    (0..k2).map(|i| x.abs() + i as f64).sum::<f64>() + x.abs()
}

#[test]
fn shadowing_and_out_names_agree_with_plain_loops() {
    let x = array![-1.5, 0.0, 2.25, 7.0];
    let k = array![0, 1, 2, 3];
    let a = array![[1.0f32, 3.0, 6.0], [2.0, -1.0, 0.5]];
    let rows = array![[1, 2, 3], [4, 5, -6]];
    check_shadow_and_names(Target::Cpu, &x, &k, &a, &rows);
    on_gpu("shadowing_and_out_names_agree_with_plain_loops", || {
        check_shadow_and_names(Target::Cuda, &x, &k, &a, &rows)
    });
}

fn check_shadow_and_names(
    target: Target,
    x: &Array1<f64>,
    k: &Array1<i32>,
    a: &ndarray::Array2<f32>,
    rows: &ndarray::Array2<i32>,
) {
    let got = port_shadow::on(target, x, k).unwrap();
    for i in 0..x.len() {
        assert_eq!(got[i], shadow_expected(x[i], k[i]), "{target:?} at {i}");
    }
    let got = port_shadow_len::on(target, a).unwrap();
    for (r, row) in a.rows().into_iter().enumerate() {
        assert_eq!(got[[r]], row[row.len() - 1] - row[0], "{target:?} row {r}");
    }
    let got = port_sum_row::on(target, rows).unwrap();
    assert_eq!(got[[0]], 6, "{target:?}");
    assert_eq!(got[[1]], 3, "{target:?}");
}

/// `isize`/`usize` elements (item 7).
#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn port_add_intp(a: isize, b: usize) -> isize {
    a * 3 + b as isize
}

#[test]
fn intp_elements_on_cuda() {
    let a: Array1<isize> = array![1, -2, 3, 1 << 40];
    let b: Array1<usize> = array![10, 20, 30, 5];
    let check = |target: Target| {
        let got = port_add_intp::on(target, &a, &b).unwrap();
        for i in 0..a.len() {
            assert_eq!(got[i], a[i] * 3 + b[i] as isize, "{target:?} at {i}");
        }
    };
    check(Target::Cpu);
    on_gpu("intp_elements_on_cuda", || check(Target::Cuda));
}

/// `fastmath = true` on a gufunc (item 9), as Numba's `@guvectorize(..., fastmath=True)`: the
/// cuda kernel compiles with `--use_fast_math`; on the CPU targets the core is plain Rust.
#[guvectorize("(n)->()", targets = ["cpu", "cuda"], fastmath = true)]
pub(crate) fn port_fast_norm(a: ArrayView1<f32>, out: &mut f32) {
    let mut s = 0.0f32;
    for i in 0..a.len() {
        s += a[i] * a[i];
    }
    *out = s.sqrt();
}

#[guvectorize("(n)->()", targets = ["cpu", "cuda"])]
pub(crate) fn port_exact_norm(a: ArrayView1<f32>, out: &mut f32) {
    let mut s = 0.0f32;
    for i in 0..a.len() {
        s += a[i] * a[i];
    }
    *out = s.sqrt();
}

#[test]
fn fastmath_gufuncs_set_the_fast_math_flags() {
    let fast = <port_fast_norm as ufunc::__private::DeviceKernel>::CUDA.unwrap();
    let exact = <port_exact_norm as ufunc::__private::DeviceKernel>::CUDA.unwrap();
    assert!(fast.fast_math && !exact.fast_math);
    let a = ndarray::Array2::from_shape_fn((4, 7), |(i, j)| (i as f32 + 1.0) * 0.5 - j as f32);
    let check = |target: Target| {
        let got = port_fast_norm::on(target, &a).unwrap();
        for (r, row) in a.rows().into_iter().enumerate() {
            let want = row.iter().map(|v| v * v).sum::<f32>().sqrt();
            assert!(
                (got[[r]] - want).abs() <= 1e-5 * want,
                "{target:?} row {r}: {} vs {want}",
                got[[r]]
            );
        }
    };
    check(Target::Cpu);
    on_gpu("fastmath_gufuncs_set_the_fast_math_flags", || {
        check(Target::Cuda)
    });
}

/// Complex and real operands mixed (item 2): num-complex and the CPU targets accept
/// `Complex<T> op T` and `T op Complex<T>`; the last line is the phase-correlation
/// normalisation.
#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn port_complex_mix(
    a: Complex<f64>,
    b: f64,
) -> (Complex<f64>, Complex<f64>, Complex<f64>) {
    let p = a + 1.0;
    let q = a * 3.0 - b;
    let r = (b - a) / b + 2.0 / a + b * a;
    let mut s = p;
    s *= b;
    s /= 2.0;
    (q + s, r, r / r.norm())
}

#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn port_normalise_f32(a: Complex<f32>, b: Complex<f32>) -> Complex<f32> {
    let r = a * b.conj();
    let n = r.norm();
    if n > 0.0 {
        r / n
    } else {
        r
    }
}

#[test]
fn complex_real_mixes_agree() {
    let a = array![
        Complex::new(1.0, 2.0),
        Complex::new(-0.5, 0.25),
        Complex::new(3.0, -4.0)
    ];
    let b = array![2.0, -1.5, 0.75];
    let af = array![Complex::new(1.0f32, 2.0), Complex::new(0.0, 0.0)];
    let bf = array![Complex::new(0.5f32, -1.0), Complex::new(2.0, 1.0)];
    let check = |target: Target| {
        let (q, r, u) = port_complex_mix::on(target, &a, &b).unwrap();
        for i in 0..a.len() {
            let (x, y) = (a[i], b[i]);
            // Independently: real and imaginary parts by hand.
            let p = Complex::new(x.re + 1.0, x.im);
            let s = Complex::new(p.re * y / 2.0, p.im * y / 2.0);
            let q_want = Complex::new(x.re * 3.0 - y + s.re, x.im * 3.0 + s.im);
            let d = x.re * x.re + x.im * x.im;
            let r_want = Complex::new(
                (y - x.re) / y + 2.0 * x.re / d + y * x.re,
                -x.im / y - 2.0 * x.im / d + y * x.im,
            );
            let close =
                |g: Complex<f64>, w: Complex<f64>| (g - w).norm() <= 1e-12 * (1.0 + w.norm());
            assert!(
                close(q[i], q_want),
                "{target:?} q[{i}] {} vs {q_want}",
                q[i]
            );
            assert!(
                close(r[i], r_want),
                "{target:?} r[{i}] {} vs {r_want}",
                r[i]
            );
            assert!((u[i].norm() - 1.0).abs() < 1e-12, "{target:?} u[{i}]");
        }
        let n = port_normalise_f32::on(target, &af, &bf).unwrap();
        assert!((n[0].norm() - 1.0).abs() < 1e-6, "{target:?}");
        assert_eq!(n[1], Complex::new(0.0, 0.0), "{target:?}");
    };
    check(Target::Cpu);
    on_gpu("complex_real_mixes_agree", || check(Target::Cuda));
}

/// `types = [...]` on a gufunc (item 8): one generic core, as Numba's list of signatures
/// `@guvectorize([(float32[:], float32, float32[:]), (float64[:], ...)], "(n),()->(n)")`.
/// `0 as T` is the zero of whichever type `T` stands for.
#[guvectorize("(n),()->(n)", targets = ["cpu", "parallel", "cuda"], types = [f32, f64, i32])]
pub(crate) fn port_scaled_cumsum<T>(a: ArrayView1<T>, k: T, mut out: ArrayViewMut1<T>) {
    let mut s = 0 as T;
    for i in 0..a.len() {
        s += a[i] * k;
        out[i] = s;
    }
}

/// Checks `port_scaled_cumsum` of `a` (2-d) and `k` on `target` against a plain loop, and its
/// generic `core` against the first row (a macro: the call is typed by the element type).
macro_rules! check_scaled_cumsum {
    ($target:expr, $a:expr, $k:expr) => {{
        let (target, a, k) = ($target, $a, $k);
        let got = port_scaled_cumsum::on(target, a, k).unwrap();
        assert_eq!(got.shape(), a.shape(), "{target:?}");
        for (r, row) in a.rows().into_iter().enumerate() {
            let mut s = k - k;
            for (i, &x) in row.iter().enumerate() {
                s += x * k;
                assert_eq!(got[[r, i]], s, "{target:?} {:?} at ({r}, {i})", k);
            }
        }
        let mut one = Array1::default(a.ncols());
        port_scaled_cumsum::core(a.row(0), k, one.view_mut());
        assert_eq!(
            one.into_dyn(),
            got.index_axis(ndarray::Axis(0), 0),
            "{target:?} core"
        );
    }};
}

#[test]
fn generic_gufunc_instantiates_each_type_on_every_target() {
    let f = array![[0.5f32, 1.25, -2.0], [3.0, 0.0, 4.5]];
    let d = f.mapv(f64::from) * 1.5;
    let i = array![[1i32, -2, 3], [40, 5, -6]];
    for target in [Target::Cpu, Target::Parallel] {
        check_scaled_cumsum!(target, &f, 2.0f32);
        check_scaled_cumsum!(target, &d, -0.5f64);
        check_scaled_cumsum!(target, &i, 3i32);
    }
    on_gpu(
        "generic_gufunc_instantiates_each_type_on_every_target",
        || {
            check_scaled_cumsum!(Target::Cuda, &f, 2.0f32);
            check_scaled_cumsum!(Target::Cuda, &d, -0.5f64);
            check_scaled_cumsum!(Target::Cuda, &i, 3i32);
        },
    );
}

/// Panic messages (item 4), as Numba's test_vectorize_exception / the docs' `raise ValueError`:
/// the same message on cpu and cuda, with integer, float and bool arguments formatted by the
/// host as Rust formats them (`{}`, `{:?}`, `{:.N}`, named and captured arguments).
#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn port_checked_sqrt(v: f64, code: i32) -> f64 {
    if code == 1 {
        panic!("Value must be positive");
    }
    if code == 2 {
        assert!(
            v >= 0.0,
            "negative input {} (code {code:?}, {:.2})",
            v,
            v * 2.0
        );
    }
    if code == 3 {
        assert!(v < 100.0);
    }
    if code == 4 {
        unreachable!("code {}, flag {flag}", code, flag = v > 1.0);
    }
    if code == 5 {
        todo!();
    }
    v.abs().sqrt()
}

#[guvectorize("(n)->()", targets = ["cpu", "cuda"])]
pub(crate) fn port_checked_rows(a: ArrayView1<u32>, out: &mut u32) {
    let mut s = 0;
    for i in 0..a.len() {
        assert!(a[i] != 7, "row holds 7 at {} after sum {s}", i);
        s += a[i];
    }
    *out = s;
}

/// A helper's panics keep their messages too, through a helper it calls, and from a gufunc core.
#[kernel_fn]
fn port_checked_half(v: f64) -> f64 {
    assert!(v.is_finite(), "not finite: {v:?}");
    port_checked_root(v) * 0.5
}

#[kernel_fn]
fn port_checked_root(v: f64) -> f64 {
    if v < 0.0 {
        panic!("root of {} below zero", v);
    }
    v.sqrt()
}

#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn port_helper_panics(v: f64) -> f64 {
    port_checked_half(v) + 1.0
}

#[guvectorize("(n)->()", targets = ["cpu", "cuda"])]
pub(crate) fn port_helper_panics_core(a: ArrayView1<f64>, out: &mut f64) {
    let mut s = 0.0;
    for i in 0..a.len() {
        s += port_checked_root(a[i]);
    }
    *out = s;
}

fn helper_panic_messages(target: Target) -> Vec<String> {
    let mut messages = Vec::new();
    for v in [f64::INFINITY, -4.0] {
        messages.push(panic_message(port_helper_panics::on(
            target,
            &array![1.0, v, 4.0],
        )));
    }
    let r = port_helper_panics_core::on(target, &array![[1.0, 4.0], [9.0, -1.5]]);
    messages.push(panic_message(r));
    messages
}

#[test]
fn helper_panic_messages_are_the_same_on_every_target() {
    let cpu = helper_panic_messages(Target::Cpu);
    assert_eq!(
        cpu,
        [
            "not finite: inf",
            "root of -4 below zero",
            "root of -1.5 below zero"
        ]
    );
    on_gpu("helper_panic_messages_are_the_same_on_every_target", || {
        assert_eq!(helper_panic_messages(Target::Cuda), cpu);
    });
}

fn panic_message<T: std::fmt::Debug>(r: Result<T, Error>) -> String {
    match r {
        Err(Error::KernelPanic { message, .. }) => message,
        other => panic!("expected a panic, got {other:?}"),
    }
}

fn check_panic_messages(target: Target) -> Vec<String> {
    let mut messages = Vec::new();
    for (v, code) in [(4.0, 1), (-2.5, 2), (1e3, 3), (4.5, 4), (1.0, 5)] {
        let r = port_checked_sqrt::on(target, &array![1.0, v, 9.0], &array![0, code, 0]);
        messages.push(panic_message(r));
    }
    let r = port_checked_rows::on(target, &array![[1u32, 2, 3], [4, 5, 7]]);
    messages.push(panic_message(r));
    messages
}

#[test]
fn panic_messages_are_the_same_on_every_target() {
    let cpu = check_panic_messages(Target::Cpu);
    assert_eq!(
        cpu,
        [
            "Value must be positive",
            "negative input -2.5 (code 2, -5.00)",
            "assertion failed: v < 100.0",
            "internal error: entered unreachable code: code 4, flag true",
            "not yet implemented",
            "row holds 7 at 2 after sum 9",
        ]
    );
    on_gpu("panic_messages_are_the_same_on_every_target", || {
        assert_eq!(check_panic_messages(Target::Cuda), cpu);
    });
}

/// Numba's in-place gufunc (item 5; see `tests/guvectorize.rs`) on cuda: host operands are
/// copied in whole, the written one back.
#[guvectorize("(n),()", targets = ["cpu", "cuda"])]
pub(crate) fn port_add_in_place(mut a: ArrayViewMut1<f32>, b: f32) {
    for i in 0..a.len() {
        a[i] += b;
    }
}

#[test]
fn in_place_gufunc_agrees() {
    let check = |target: Target| {
        let mut a = ndarray::Array2::from_shape_fn((3, 5), |(i, j)| (i * 5 + j) as f32);
        let expected = &a + &array![[0.5f32], [-1.0], [2.0]];
        port_add_in_place::on(target, &mut a, &array![0.5f32, -1.0, 2.0]).unwrap();
        assert_eq!(a, expected, "{target:?}");
        let e = port_add_in_place::on(target, &mut array![1.0f32], &array![1.0f32, 2.0]);
        assert!(
            matches!(e, Err(Error::InPlaceBroadcast { .. })),
            "{target:?}: {e:?}"
        );
    };
    check(Target::Cpu);
    on_gpu("in_place_gufunc_agrees", || {
        check(Target::Cuda);
        // On device arrays: the written operand stays on the device, the read one may be a
        // view (here a broadcast column of one value per row).
        let a = ndarray::Array2::from_shape_fn((3, 5), |(i, j)| (i * 5 + j) as f32);
        let b = array![0.5f32, -1.0, 2.0];
        let mut da = to_device(&a).unwrap();
        let db = to_device(&b).unwrap();
        port_add_in_place::on_device(&mut da, &db).unwrap();
        assert_eq!(
            da.copy_to_host().unwrap(),
            &a + &b.view().insert_axis(ndarray::Axis(1))
        );
        let stream = Stream::new().unwrap();
        let one = to_device(&array![10.0f32]).unwrap();
        port_add_in_place::on_stream(&stream, &mut da, one.view().broadcast(3).unwrap()).unwrap();
        stream.synchronize().unwrap();
        assert_eq!(
            da.copy_to_host().unwrap(),
            &a + &b.view().insert_axis(ndarray::Axis(1)) + 10.0
        );
        let e = port_add_in_place::on_device(
            &mut to_device(&array![1.0f32]).unwrap(),
            &to_device(&array![1.0f32, 2.0]).unwrap(),
        );
        assert!(matches!(e, Err(Error::InPlaceBroadcast { .. })), "{e:?}");
    });
}
