//! Numba's own test kernels (`numba/tests/npyufunc/`, `numba/cuda/tests/cudapy/`) and the
//! @vectorize/@guvectorize examples of Numba's documentation, written as a Numba user writes
//! them in Rust, each with a check against what Numba's test asserts (a NumPy expression over
//! the same inputs, computed here by a plain loop; Numba's concrete inputs where it has them).
//!
//! One definition serves every target: `tests/numba_ports.rs` runs each `check_*` on `cpu`
//! and `parallel`, `tests/cuda/numba_ports.rs` on `cuda` (and lists the kernels' sources for the
//! NVRTC compile check). Integers and exactly representable float results are compared
//! exactly, other floats within the tolerance Numba's test states (`assert_allclose`'s
//! default `rtol = 1e-7`, `np.allclose`'s `rtol = 1e-5, atol = 1e-8`), widened where our
//! reference is computed in another precision, as said at the check.
//!
//! How the Rust form differs from the Python, in general: element types are explicit (one
//! `types = [...]` list where Numba's test lists several signatures or loops over dtypes);
//! gufunc outputs are `ArrayViewMut` / `&mut T` parameters (Numba's `out[0] = ...` for a `()`
//! output is `*out = ...`), and a `()` input is a plain `T` rather than Numba's old-style
//! 1-element array `y[0]`; there is no object mode (`forceobj=True` kernels are the same body
//! in nopython form); keyword arguments Numba's ufuncs take (`axis=`, `out=`) are views and the
//! `out`/`out_on` companions.

/// Calls `$run!` with every check of this module, so that each target's test file runs the
/// same list (`tests/numba_ports.rs` on cpu and parallel, `tests/cuda/numba_ports.rs` on cuda).
macro_rules! numba_checks {
    ($run:ident) => {
        $run!(
            check_test_ufunc_attributes,
            check_test_vectorize_decor_vector_add,
            check_docs_vectorize_f,
            check_test_ufuncbuilding_add,
            check_test_parallel_thread_response,
            check_test_ufunc_broadcasting,
            check_test_vectorize_decor_sinc,
            check_test_vectorize_bool_return,
            check_test_vectorize_only_kws,
            check_test_ufuncbuilding_guadd,
            check_test_nep13_new_ufunc,
            check_test_dask_double,
            check_test_gufunc_matmulcore,
            check_test_gufunc_axpy,
            check_test_gufunc_axis,
            check_test_gufunc_multiple_outputs,
            check_test_gufunc_core_sums,
            check_test_gufunc_scalar_inputs,
            check_test_update_inplace,
            check_docs_guvectorize_g,
            check_docs_guvectorize_scalar_return,
            check_docs_move_mean,
            check_docs_cu_discriminant,
            check_test_vectorize_device_call,
            check_test_vectorize_complex,
            check_test_gpu_vectorize_broadcast,
            check_test_gufunc_tuple_arg,
            check_test_gufunc_copy2d_and_dist,
            check_test_gufunc_scalar_saxpy,
            check_test_dufunc_reduce,
            check_test_dufunc_non_associative,
            check_test_dufunc_reduce_numpy_tests,
        );
    };
}

use ndarray::{array, s, Array, Array1, Array2, Array3, ArrayD, Axis, IxDyn, ShapeBuilder};
use ufunc::prelude::*;
use ufunc::Axes;

// ---------------------------------------------------------------------------------------------
// Shared test helpers.

/// A deterministic pseudo-random stream (a 64-bit LCG) for Numba's `np.random` inputs.
struct Rng(u64);

impl Rng {
    /// Uniform in [0, 1), as `np.random.random`.
    fn uniform(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Roughly normal (a sum of uniforms), as `np.random.randn` for test data.
    fn normal(&mut self) -> f64 {
        (0..4).map(|_| self.uniform()).sum::<f64>() - 2.0
    }
}

/// `np.testing.assert_allclose(got, want, rtol, atol)` on one value.
#[track_caller]
fn assert_close(got: f64, want: f64, rtol: f64, atol: f64, what: &str) {
    assert!(
        (got - want).abs() <= atol + rtol * want.abs(),
        "{what}: got {got:e}, want {want:e} (rtol {rtol:e}, atol {atol:e})"
    );
}

// =============================================================================================
// numba/tests/npyufunc/test_ufunc.py, test_vectorize_decor.py, test_ufuncbuilding.py,
// test_parallel_ufunc_issues.py, numba/cuda/tests/cudapy/test_vectorize.py,
// test_vectorize_scalar_arg.py and the docs' `f`: all the same `a + b`.

/// `vector_add` of numba/tests/npyufunc/test_vectorize_decor.py (`func3`, signatures int32,
/// uint32, float32, float64) and of numba/cuda/tests/cudapy/test_vectorize.py and
/// test_vectorize_scalar_arg.py; the same body is `add` in test_ufunc.py (float32) and in
/// ufuncbuilding_usecases.py (int32, int64, complex64), `f` in the docs' "The @vectorize
/// decorator" (int32, int64, float32, float64) and `fnv` in test_parallel_ufunc_issues.py.
/// Rust: one generic body over Numba's list of signatures (`types`), not five copies.
#[vectorize(targets = ["cpu", "parallel", "cuda"], types = [i32, u32, i64, f32, f64, Complex<f32>])]
pub(crate) fn vector_add<T>(a: T, b: T) -> T {
    a + b
}

/// test_ufunc.py `test_ufunc_attributes`, `test_implicit_broadcasting` (float32, 1-d, 2-d, 3-d
/// broadcast): call, `reduce` repeated over axis 0 (`np.sum`), `accumulate`, `outer`.
pub(crate) fn check_test_ufunc_attributes(target: Target) {
    let a = Array::from_shape_fn((8, 10), |(i, j)| (i * 10 + j) as f32);
    let b = a.clone();
    // 1-d: a[0], b[0].
    let (a1, b1) = (a.row(0), b.row(0));
    let got = vector_add::on(target, a1, b1).unwrap();
    assert_eq!(got, &a1 + &b1, "{target:?}");
    let sum = vector_add::reduce_on(target, a1, 0).unwrap();
    assert_eq!(sum[[]], 45.0, "{target:?}");
    let acc = vector_add::accumulate_on(target, a1, 0).unwrap();
    let mut run = 0.0;
    for j in 0..10 {
        run += a1[j];
        assert_eq!(acc[[j]], run, "{target:?} accumulate at {j}");
    }
    let outer = vector_add::outer_on(target, a1, b1).unwrap();
    assert_eq!(outer.shape(), &[10, 10]);
    for i in 0..10 {
        for j in 0..10 {
            assert_eq!(outer[[i, j]], a1[i] + b1[j], "{target:?} outer");
        }
    }
    // 2-d: reduce twice is np.sum (3160, exact in f32); accumulate along axis 0.
    assert_eq!(
        vector_add::on(target, &a, &b).unwrap(),
        &a + &b,
        "{target:?}"
    );
    let once = vector_add::reduce_on(target, &a, 0).unwrap();
    assert_eq!(vector_add::reduce_on(target, &once, 0).unwrap()[[]], 3160.0);
    let acc = vector_add::accumulate_on(target, &a, 0).unwrap();
    for j in 0..10 {
        let mut run = 0.0;
        for i in 0..8 {
            run += a[[i, j]];
            assert_eq!(acc[[i, j]], run, "{target:?} accumulate ({i}, {j})");
        }
    }
    let outer = vector_add::outer_on(target, &a, &b).unwrap();
    assert_eq!(outer.shape(), &[8, 10, 8, 10]);
    assert_eq!(outer[[3, 4, 5, 6]], a[[3, 4]] + b[[5, 6]], "{target:?}");
    assert_eq!(outer[[7, 9, 0, 1]], 80.0, "{target:?}");
    // 3-d: a[:, np.newaxis, :] + b[np.newaxis, :, :] -> (8, 8, 10).
    let a3 = a.view().insert_axis(Axis(1));
    let b3 = b.view().insert_axis(Axis(0));
    let got = vector_add::on(target, a3, b3).unwrap();
    assert_eq!(got.shape(), &[8, 8, 10]);
    assert_eq!(got, &a3 + &b3, "{target:?}");
    // test_implicit_broadcasting: b[np.newaxis, :, np.newaxis, np.newaxis, :].
    let b5 = b
        .view()
        .insert_axis(Axis(0))
        .insert_axis(Axis(2))
        .insert_axis(Axis(3));
    let got = vector_add::on(target, &a, b5).unwrap();
    assert_eq!(got.shape(), &[1, 8, 1, 8, 10]);
    for ((_, i, _, j, k), &v) in got.indexed_iter() {
        assert_eq!(v, a[[j, k]] + b[[i, k]], "{target:?} ({i}, {j}, {k})");
    }
}

/// test_vectorize_decor.py `test_4`: `vector_add` over `np.arange(100)` as int32, uint32,
/// float32 and float64; numba/cuda/tests/cudapy/test_vectorize.py `test_nd` (1 to 7
/// dimensions of 4, `data + data.T` with the transpose in C and F order), `test_output_arg`,
/// `test_reduce` (int32, 8, 100 and 1025 elements); test_vectorize_scalar_arg.py (a scalar
/// with an array, and two scalars).
pub(crate) fn check_test_vectorize_decor_vector_add(target: Target) {
    let a = Array1::from_shape_fn(100, |i| i as f64);
    assert_eq!(
        vector_add::on(target, &a, &a).unwrap(),
        &a * 2.0,
        "{target:?}"
    );
    let af = a.mapv(|v| v as f32);
    assert_eq!(vector_add::on(target, &af, &af).unwrap(), &af * 2.0);
    let ai = a.mapv(|v| v as i32);
    assert_eq!(vector_add::on(target, &ai, &ai).unwrap(), &ai * 2);
    let au = a.mapv(|v| v as u32);
    assert_eq!(vector_add::on(target, &au, &au).unwrap(), &au * 2);
    // test_nd: shapes (4,) * nd, data + data.T (and an F-order copy of the transpose).
    let mut rng = Rng(7);
    for nd in 1..=7usize {
        let shape = vec![4; nd];
        let data = ArrayD::from_shape_fn(IxDyn(&shape), |_| rng.uniform());
        let t = data.t();
        let mut t_f = ArrayD::zeros(IxDyn(&shape).f());
        t_f.assign(&t);
        let want = &data + &t;
        assert_eq!(vector_add::on(target, &data, t).unwrap(), want, "{nd}-d");
        assert_eq!(
            vector_add::on(target, &data, &t_f).unwrap(),
            want,
            "{nd}-d F"
        );
        let data32 = data.mapv(|v| v as f32);
        let got32 = vector_add::on(target, &data32, data32.t()).unwrap();
        assert_eq!(got32, &data32 + &data32.t(), "{target:?} {nd}-d f32");
        let datai = data.mapv(|v| (v * 1000.0) as i32);
        let goti = vector_add::on(target, &datai, datai.t()).unwrap();
        assert_eq!(goti, &datai + &datai.t(), "{target:?} {nd}-d i32");
    }
    // test_output_arg.
    let x = Array1::from_shape_fn(10, |i| i as f32);
    let mut out = Array1::zeros(10);
    vector_add::out_on(target, &x, &x, &mut out).unwrap();
    assert_eq!(out, &x + &x, "{target:?}");
    // test_reduce: int32 at sizes below a warp, below a block and over several blocks.
    for n in [8i32, 100, 1025] {
        let x = Array1::from_shape_fn(n as usize, |i| i as i32);
        let got = vector_add::reduce_on(target, &x, 0).unwrap();
        assert_eq!(got[[]], n * (n - 1) / 2, "{target:?} reduce of {n}");
    }
    // test_vectorize_scalar_arg: vector_add(1.0, dA), vector_add(1.0, 1.0).
    let got = vector_add::on(target, 1.0, &Array1::from_shape_fn(10, |i| i as f64)).unwrap();
    assert_eq!(got, Array1::from_shape_fn(10, |i| (i + 1) as f64));
    assert_eq!(vector_add::on(target, 1.0f64, 1.0f64).unwrap()[[]], 2.0);
    // cudapy test_vectorize `test_scalar`: 1.2 + 2.3 as Python adds them.
    assert_eq!(
        vector_add::on(target, 1.2f64, 2.3f64).unwrap()[[]],
        1.2 + 2.3
    );
}

/// The docs' "The @vectorize decorator" example `f` (numba/tests/doc_examples/test_examples.py
/// `test_vectorize_multiple_signatures`): the calls and the `reduce`/`accumulate` values the
/// docs print, copied here.
pub(crate) fn check_docs_vectorize_f(target: Target) {
    let a = Array1::from_shape_fn(6, |i| i as i64);
    assert_eq!(
        vector_add::on(target, &a, &a).unwrap(),
        array![0i64, 2, 4, 6, 8, 10]
    );
    let l = Array1::<f64>::linspace(0.0, 1.0, 6);
    let got = vector_add::on(target, &l, &l).unwrap();
    for (g, w) in got.iter().zip([0., 0.4, 0.8, 1.2, 1.6, 2.]) {
        assert_close(*g, w, 1e-7, 0.0, "docs f over linspace");
    }
    let a = Array2::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as i64);
    let r1 = vector_add::reduce_on(target, &a, 0).unwrap();
    assert_eq!(r1, array![12i64, 15, 18, 21].into_dyn(), "{target:?}");
    let r2 = vector_add::reduce_on(target, &a, 1).unwrap();
    assert_eq!(r2, array![6i64, 22, 38].into_dyn(), "{target:?}");
    let r3 = vector_add::accumulate_on(target, &a, 0).unwrap();
    assert_eq!(r3, array![[0i64, 1, 2, 3], [4, 6, 8, 10], [12, 15, 18, 21]]);
    let r4 = vector_add::accumulate_on(target, &a, 1).unwrap();
    assert_eq!(r4, array![[0i64, 1, 3, 6], [4, 9, 15, 22], [8, 17, 27, 38]]);
}

/// test_ufuncbuilding.py `test_basic_ufunc` (int32, int64) and `test_ufunc_struct` (complex64,
/// `np.arange(12) + 1j`): contiguous, `a[::2]`, and that reshaped to (2, 3); the result keeps
/// the input's dtype.
pub(crate) fn check_test_ufuncbuilding_add(target: Target) {
    let a = Array1::from_shape_fn(12, |i| i as i32);
    let strided = a.slice(s![..;2]);
    assert_eq!(vector_add::on(target, &a, &a).unwrap(), &a + &a);
    assert_eq!(
        vector_add::on(target, strided, strided).unwrap(),
        array![0, 4, 8, 12, 16, 20]
    );
    let r = strided.to_owned().into_shape_with_order((2, 3)).unwrap();
    assert_eq!(
        vector_add::on(target, &r, &r).unwrap(),
        array![[0, 4, 8], [12, 16, 20]]
    );
    let a64 = a.mapv(|v| v as i64 + (1 << 40));
    assert_eq!(vector_add::on(target, &a64, &a64).unwrap(), &a64 + &a64);
    let c = Array1::from_shape_fn(12, |i| Complex::new(i as f32, 1.0));
    let got = vector_add::on(target, &c, &c).unwrap();
    for i in 0..12 {
        assert_eq!(
            got[i],
            Complex::new(2.0 * i as f32, 2.0),
            "{target:?} at {i}"
        );
    }
    let cs = c.slice(s![..;2]);
    let got = vector_add::on(target, cs, cs).unwrap();
    for i in 0..6 {
        assert_eq!(
            got[i],
            Complex::new(4.0 * i as f32, 2.0),
            "{target:?} at {i}"
        );
    }
    let c2 = cs.to_owned().into_shape_with_order((2, 3)).unwrap();
    let got = vector_add::on(target, &c2, &c2).unwrap();
    assert_eq!(got[[1, 2]], Complex::new(20.0, 2.0), "{target:?}");
}

/// test_parallel_ufunc_issues.py `test_thread_response` (`fnv`, the same `a + b` on float64):
/// the worker threads answer call after call with different gaps between them (halving from
/// 8 ms to about 10 us here, from 1 s in Numba's test).
pub(crate) fn check_test_parallel_thread_response(target: Target) {
    let a = Array1::from_shape_fn(100_000, |i| i as f64);
    let mut sleep = std::time::Duration::from_millis(8);
    while sleep > std::time::Duration::from_micros(10) {
        std::thread::sleep(sleep);
        assert_eq!(vector_add::on(target, &a, &a).unwrap(), &a + &a);
        sleep /= 2;
    }
}

/// `add_multiple_args` of numba/tests/npyufunc/test_ufunc.py (`float32(float32, float32,
/// float32, float32)`).
#[vectorize(targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn add_multiple_args(a: f32, b: f32, c: f32, d: f32) -> f32 {
    a + b + c + d
}

/// test_ufunc.py `test_broadcasting`: `a`, its copy `b`, an F-order copy `c` and the strided
/// `d = arange(320).reshape(16, 20)[::2, ::2]`, in 1-d (their first rows), 2-d and 3-d
/// (`a[:, np.newaxis, :]`, `b[np.newaxis, :, :]`, ...); exact (`assertPreciseEqual`).
pub(crate) fn check_test_ufunc_broadcasting(target: Target) {
    let a = Array::from_shape_fn((8, 10), |(i, j)| (i * 10 + j) as f32);
    let b = a.clone();
    let mut c = Array2::zeros((8, 10).f());
    c.assign(&a);
    let d_full = Array::from_shape_fn((16, 20), |(i, j)| (i * 20 + j) as f32);
    let d = d_full.slice(s![..;2, ..;2]);
    let want2 = &a + &b + &c + d;
    let got = add_multiple_args::on(target, a.row(0), b.row(0), c.row(0), d.row(0)).unwrap();
    assert_eq!(got, want2.row(0), "{target:?} 1-d");
    let got = add_multiple_args::on(target, &a, &b, &c, d).unwrap();
    assert_eq!(got, want2, "{target:?} 2-d");
    let got = add_multiple_args::on(
        target,
        a.view().insert_axis(Axis(1)),
        b.view().insert_axis(Axis(0)),
        c.view().insert_axis(Axis(1)),
        d.insert_axis(Axis(0)),
    )
    .unwrap();
    assert_eq!(got.shape(), &[8, 8, 10]);
    for ((i, j, k), &v) in got.indexed_iter() {
        let want = a[[i, k]] + b[[j, k]] + c[[i, k]] + d[[j, k]];
        assert_eq!(v, want, "{target:?} 3-d ({i}, {j}, {k})");
    }
}

// =============================================================================================
// numba/tests/npyufunc/test_vectorize_decor.py

const PI: f64 = std::f64::consts::PI;

/// `sinc` (`func1`) of numba/tests/npyufunc/test_vectorize_decor.py, signatures
/// `['float64(float64)', 'float32(float32)']`. Rust: `math.pi` is the constant `PI` cast to
/// the instantiated type, `math.sin(v)` is `v.sin()`.
#[vectorize(targets = ["cpu", "parallel", "cuda"], types = [f32, f64])]
pub(crate) fn sinc<T>(x: T) -> T {
    if x == 0.0 {
        1.0
    } else {
        (x * PI as T).sin() / (PI as T * x)
    }
}

/// `scaled_sinc` (`func2`), signature `float64(float64, uint32)`.
#[vectorize(targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn scaled_sinc(x: f64, scale: u32) -> f64 {
    if x == 0.0 {
        scale as f64
    } else {
        scale as f64 * ((x * PI).sin() / (PI * x))
    }
}

/// test_vectorize_decor.py `test_1`/`test_2` (`sinc` over `np.arange(100)`, compared with
/// `np.vectorize` of the Python function, `assert_allclose`'s rtol 1e-7) and `test_3`
/// (`scaled_sinc` with `np.uint32(3)`, atol 1e-8). The float32 loop (which Numba's test
/// compiles but does not call) against the same formula in f32 with f64's `sin`: within
/// 1e-6 absolute (the values near integers are about 1e-8).
pub(crate) fn check_test_vectorize_decor_sinc(target: Target) {
    let a = Array1::from_shape_fn(100, |i| i as f64);
    let got = sinc::on(target, &a).unwrap();
    assert_eq!(got[0], 1.0);
    for i in 1..100 {
        let x = a[i];
        let want = (x * PI).sin() / (PI * x);
        assert_close(got[i], want, 1e-7, 0.0, &format!("{target:?} sinc({x})"));
    }
    let half = Array1::from_shape_fn(100, |i| i as f32 * 0.25 - 12.0);
    let got = sinc::on(target, &half).unwrap();
    for i in 0..100 {
        let x = half[i];
        let pi = PI as f32;
        let want = if x == 0.0 {
            1.0
        } else {
            ((x * pi) as f64).sin() / (pi * x) as f64
        };
        assert_close(
            got[i] as f64,
            want,
            1e-5,
            1e-6,
            &format!("{target:?} sinc({x}f32)"),
        );
    }
    let got = scaled_sinc::on(target, &a, 3u32).unwrap();
    assert_eq!(got[0], 3.0);
    for i in 1..100 {
        let x = a[i];
        let want = 3.0 * ((x * PI).sin() / (PI * x));
        assert_close(
            got[i],
            want,
            1e-7,
            1e-8,
            &format!("{target:?} scaled_sinc({x})"),
        );
    }
}

// =============================================================================================
// numba/tests/npyufunc/test_ufuncbuilding.py, ufuncbuilding_usecases.py

/// `equals` of numba/tests/npyufunc/ufuncbuilding_usecases.py, `vectorize(['bool_(int32,
/// int32)'])`.
#[vectorize(targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn equals(a: i32, b: i32) -> bool {
    a == b
}

/// test_ufuncbuilding.py `test_vectorize_bool_return`: `ufunc(a, a)` is all true; and (ours,
/// so that the check can fail) `a` against its reverse is true only where they meet.
pub(crate) fn check_test_vectorize_bool_return(target: Target) {
    let a = Array1::from_shape_fn(10, |i| i as i32);
    assert_eq!(
        equals::on(target, &a, &a).unwrap(),
        Array1::from_elem(10, true)
    );
    let rev = a.slice(s![..;-1]);
    let got = equals::on(target, &a, rev).unwrap();
    assert_eq!(got, Array1::from_elem(10, false), "{target:?}");
    let odd = Array1::from_shape_fn(9, |i| i as i32);
    let got = equals::on(target, &odd, odd.slice(s![..;-1])).unwrap();
    assert_eq!(got.iter().filter(|&&v| v).count(), 1, "{target:?}");
    assert!(got[4], "{target:?}");
}

/// `mul` of ufuncbuilding_usecases.py with `identity=PyUFunc_One` (test_vectorize_only_kws):
/// Rust: the identity is `identity = 1.0` and the float64 type is explicit.
#[vectorize(targets = ["cpu", "parallel", "cuda"], identity = 1.0)]
pub(crate) fn mul(a: f64, b: f64) -> f64 {
    a * b
}

/// test_ufuncbuilding.py `test_vectorize_only_kws`: `ufunc(a, b) == a * b` over two linspaces
/// (exact); the identity is what an empty `reduce` gives.
pub(crate) fn check_test_vectorize_only_kws(target: Target) {
    let a = Array1::linspace(0.0, 1.0, 10);
    let b = Array1::linspace(1.0, 2.0, 10);
    assert_eq!(mul::on(target, &a, &b).unwrap(), &a * &b, "{target:?}");
    let empty = Array1::<f64>::zeros(0);
    assert_eq!(mul::reduce_on(target, &empty, 0).unwrap()[[]], 1.0);
    assert_eq!(
        mul::reduce_on(target, &array![2.0, 3.0, 4.0], 0).unwrap()[[]],
        24.0
    );
}

/// `guadd` of ufuncbuilding_usecases.py, `"(x, y),(x, y)->(x, y)"` for int32 (test_basic_gufunc,
/// test_guvectorize) and complex64 (test_gufunc_struct). Rust: `x, y = c.shape` is
/// `c.dim()`; the output is an `ArrayViewMut2`.
#[guvectorize("(x, y),(x, y)->(x, y)", targets = ["cpu", "parallel", "cuda"], types = [i32, Complex<f32>])]
pub(crate) fn guadd<T>(a: ArrayView2<T>, b: ArrayView2<T>, mut c: ArrayViewMut2<T>) {
    let (x, y) = c.dim();
    for i in 0..x {
        for j in 0..y {
            c[[i, j]] = a[[i, j]] + b[[i, j]];
        }
    }
}

/// `guadd` again with the layout `"(x,y),(x,y),(x,y)"` (test_guvectorize_no_output): no
/// `->`, so every operand is passed in and the core writes its third. Rust: the written
/// operand is an `ArrayViewMut2` parameter and the call takes it as `&mut`.
#[guvectorize("(x,y),(x,y),(x,y)", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn guadd_no_output(a: ArrayView2<i32>, b: ArrayView2<i32>, mut c: ArrayViewMut2<i32>) {
    let (x, y) = c.dim();
    for i in 0..x {
        for j in 0..y {
            c[[i, j]] = a[[i, j]] + b[[i, j]];
        }
    }
}

/// `guadd_scalar_obj` of ufuncbuilding_usecases.py, `"(x,y),()->(x,y)"` (test_guvectorize_
/// scalar_objectmode). Rust: no object mode (the `Dummy()` that forces it is dropped); the
/// scalar `b` is a plain `i32`.
#[guvectorize("(x,y),()->(x,y)", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn guadd_scalar(a: ArrayView2<i32>, b: i32, mut c: ArrayViewMut2<i32>) {
    let (x, y) = c.dim();
    for i in 0..x {
        for j in 0..y {
            c[[i, j]] = a[[i, j]] + b;
        }
    }
}

/// test_ufuncbuilding.py test_basic_gufunc / test_gufunc_struct / test_guvectorize /
/// test_guvectorize_no_output / test_guvectorize_scalar_objectmode: `a = arange(10).reshape(2,
/// 5)` (int32; complex64 `+ 1j`), `a + a` and `a + 3`, exact; plus loop dimensions (ours).
pub(crate) fn check_test_ufuncbuilding_guadd(target: Target) {
    let a = Array::from_shape_fn((2, 5), |(i, j)| (i * 5 + j) as i32);
    let got = guadd::on(target, &a, &a).unwrap();
    assert_eq!(got, (&a + &a).into_dyn(), "{target:?}");
    let c = a.mapv(|v| Complex::new(v as f32, 1.0));
    let got = guadd::on(target, &c, &c).unwrap();
    assert_eq!(got, (&c + &c).into_dyn(), "{target:?} complex64");
    // Loop dimensions, one operand broadcast over them.
    let many = Array3::from_shape_fn((3, 2, 5), |(k, i, j)| (k * 100 + i * 5 + j) as i32);
    let got = guadd::on(target, &many, &a).unwrap();
    assert_eq!(got, (&many + &a).into_dyn(), "{target:?} loop dims");

    let mut out = Array2::zeros((2, 5));
    guadd_no_output::on(target, &a, &a, &mut out).unwrap();
    assert_eq!(out, &a + &a, "{target:?} no output");
    let mut out3 = Array3::zeros((3, 2, 5));
    guadd_no_output::on(target, &many, &a, &mut out3).unwrap();
    assert_eq!(out3, &many + &a, "{target:?} no output, loop dims");

    let got = guadd_scalar::on(target, &a, 3).unwrap();
    assert_eq!(got, (&a + 3).into_dyn(), "{target:?} scalar");
    let got = guadd_scalar::on(target, &many, &array![1, -1, 7]).unwrap();
    for ((k, i, j), &v) in got
        .clone()
        .into_dimensionality::<ndarray::Ix3>()
        .unwrap()
        .indexed_iter()
    {
        assert_eq!(
            v,
            many[[k, i, j]] + [1, -1, 7][k],
            "{target:?} scalar per item"
        );
    }
}

/// `new_ufunc` of test_ufuncbuilding.py `TestNEP13WithoutSignature` (`@vectorize` without
/// signatures, called with int64 and float64). Rust: the types Numba compiles lazily are
/// listed (`types = [i64, f64]`).
#[vectorize(targets = ["cpu", "parallel", "cuda"], types = [i64, f64])]
pub(crate) fn new_ufunc<T>(hundreds: T, tens: T, ones: T) -> T {
    100 as T * hundreds + 10 as T * tens + ones
}

/// TestNEP13WithoutSignature `test_all`: Numba's exact values, `tolist()` compared with
/// `assertEqual`, float results included.
pub(crate) fn check_test_nep13_new_ufunc(target: Target) {
    let got = new_ufunc::on(
        target,
        &array![1i64, 2, 3],
        &array![4i64, 5, 6],
        &array![7i64, 8, 9],
    )
    .unwrap();
    assert_eq!(got, array![147, 258, 369], "{target:?}");
    let got = new_ufunc::on(
        target,
        &array![1.1, 2.2, 3.3],
        &array![4.4, 5.5, 6.6],
        &array![7.7, 8.8, 9.9],
    )
    .unwrap();
    assert_eq!(got, array![161.7, 283.8, 405.9], "{target:?}");
}

/// `double_guvectorize` of test_ufuncbuilding.py `TestDask` (and `double` of test_gufunc.py's
/// pickling tests), `guvectorize(["f8,f8[:]"], "()->()")`. Rust: `out[:] = x * 2` is
/// `*out = x * 2.0`.
#[guvectorize("()->()", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn double_gu(x: f64, out: &mut f64) {
    *out = x * 2.0;
}

/// TestDask `test_dask_array`: `np.arange(4) * 2`; the pickling tests' `double(0.5)`.
pub(crate) fn check_test_dask_double(target: Target) {
    let got = double_gu::on(target, &Array1::from_shape_fn(4, |i| i as f64)).unwrap();
    assert_eq!(got, array![0.0, 2.0, 4.0, 6.0].into_dyn(), "{target:?}");
    assert_eq!(double_gu::on(target, 0.5).unwrap()[[]], 1.0);
}

// =============================================================================================
// numba/tests/npyufunc/test_gufunc.py and numba/cuda/tests/cudapy/test_gufunc.py

/// `matmulcore` of numba/tests/npyufunc/test_gufunc.py and numba/cuda/tests/cudapy/
/// test_gufunc.py (`_get_matmulcore_gufunc`), `'(m,n),(n,p)->(m,p)'` for float32 and float64,
/// and int64 as compiled by test_dynamic_matmul. Rust: `m, n = A.shape; n, p = B.shape` binds
/// `m` from `a` and `n, p` from `b`; `C[i, j] = 0` is `0 as T`.
#[guvectorize("(m,n),(n,p)->(m,p)", targets = ["cpu", "parallel", "cuda"], types = [f32, f64, i64])]
pub(crate) fn matmulcore<T>(a: ArrayView2<T>, b: ArrayView2<T>, mut c: ArrayViewMut2<T>) {
    let m = a.nrows();
    let (n, p) = b.dim();
    for i in 0..m {
        for j in 0..p {
            c[[i, j]] = 0 as T;
            for k in 0..n {
                c[[i, j]] += a[[i, k]] * b[[k, j]];
            }
        }
    }
}

/// `np.matmul` over the leading dimensions, in f64, for the checks (with `b` broadcast when
/// it is 2-d).
fn matmul_f64(a: &ArrayD<f64>, b: &ArrayD<f64>) -> ArrayD<f64> {
    let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
    let p = b.shape()[b.ndim() - 1];
    let lead = &a.shape()[..a.ndim() - 2];
    let items: usize = lead.iter().product();
    let a3 = a.to_shape((items, m, n)).unwrap();
    let b_items = b.len() / (n * p);
    let b3 = b.to_shape((b_items, n, p)).unwrap();
    let mut c = Array3::zeros((items, m, p));
    for t in 0..items {
        let bt = if b_items == 1 { 0 } else { t };
        c.index_axis_mut(Axis(0), t)
            .assign(&a3.index_axis(Axis(0), t).dot(&b3.index_axis(Axis(0), bt)));
    }
    let mut shape = lead.to_vec();
    shape.extend([m, p]);
    c.into_shape_with_order(IxDyn(&shape)).unwrap()
}

/// test_gufunc.py `check_matmul_gufunc` (1001 float32 (2,4)@(4,5), `rtol=1e-5, atol=1e-8`),
/// test_dynamic_matmul (10 int64, exact); cudapy test_gufunc.py `test_gufunc_small` (2),
/// `test_gufunc_hidim` ((4,25,2,4)@(4,25,4,5)) and `test_gufunc_new_axis` (float64 (10,3,3)
/// against one (3,3) and against it tiled; `assert_allclose` rtol 1e-7).
pub(crate) fn check_test_gufunc_matmulcore(target: Target) {
    for (ct, lead) in [
        (1001usize, vec![1001usize]),
        (2, vec![2]),
        (100, vec![4, 25]),
    ] {
        let mut sa = lead.clone();
        sa.extend([2, 4]);
        let mut sb = lead.clone();
        sb.extend([4, 5]);
        let a = Array1::from_shape_fn(ct * 8, |i| i as f32)
            .into_shape_with_order(IxDyn(&sa))
            .unwrap();
        let b = Array1::from_shape_fn(ct * 20, |i| i as f32)
            .into_shape_with_order(IxDyn(&sb))
            .unwrap();
        let got = matmulcore::on(target, &a, &b).unwrap();
        let want = matmul_f64(&a.mapv(f64::from), &b.mapv(f64::from));
        assert_eq!(got.shape(), want.shape());
        for (g, w) in got.iter().zip(want.iter()) {
            assert_close(
                *g as f64,
                *w,
                1e-5,
                1e-8,
                &format!("{target:?} matmul {lead:?}"),
            );
        }
    }
    let a = Array1::from_shape_fn(80, |i| i as i64)
        .into_shape_with_order((10, 2, 4))
        .unwrap();
    let b = Array1::from_shape_fn(200, |i| i as i64)
        .into_shape_with_order((10, 4, 5))
        .unwrap();
    let mut c = Array1::from_shape_fn(100, |i| i as i64)
        .into_shape_with_order((10, 2, 5))
        .unwrap();
    matmulcore::out_on(target, &a, &b, &mut c).unwrap();
    for t in 0..10 {
        let want = a.index_axis(Axis(0), t).dot(&b.index_axis(Axis(0), t));
        assert_eq!(
            c.index_axis(Axis(0), t),
            want,
            "{target:?} int64 matrix {t}"
        );
    }
    let mut rng = Rng(11);
    let x = ArrayD::from_shape_fn(IxDyn(&[10, 3, 3]), |_| rng.normal());
    let y = ArrayD::from_shape_fn(IxDyn(&[3, 3]), |_| rng.normal());
    let want = matmul_f64(&x, &y);
    let res1 = matmulcore::on(target, &x, &y).unwrap();
    let tiled = y.broadcast(IxDyn(&[10, 3, 3])).unwrap().to_owned();
    let res2 = matmulcore::on(target, &x, &tiled).unwrap();
    for ((r1, r2), w) in res1.iter().zip(res2.iter()).zip(want.iter()) {
        assert_close(*r1, *w, 1e-7, 0.0, &format!("{target:?} new axis"));
        assert_close(*r2, *w, 1e-7, 0.0, &format!("{target:?} tiled"));
    }
}

/// `axpy` of numba/tests/npyufunc/test_gufunc.py, `'(), (), () -> ()'` with
/// `'(intp, intp, intp, intp[:])'`. Rust: `out[0] = a * x + y` is `*out = ...`; intp is
/// `isize`.
#[guvectorize("(), (), () -> ()", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn axpy(a: isize, x: isize, y: isize, out: &mut isize) {
    *out = a * x + y;
}

/// test_gufunc.py `test_ufunc_like` and `test_dynamic_ufunc_like`: `x * x + x` over
/// `np.arange(10, dtype=np.intp)`: a "scalar" argument given an array is read at each
/// element, not its first repeated; also into an `out` array.
pub(crate) fn check_test_gufunc_axpy(target: Target) {
    let x = Array1::from_shape_fn(10, |i| i as isize);
    let want = &x * &x + &x;
    assert_eq!(
        axpy::on(target, &x, &x, &x).unwrap(),
        want.clone().into_dyn()
    );
    let mut out = Array1::zeros(10);
    axpy::out_on(target, &x, &x, &x, &mut out).unwrap();
    assert_eq!(out, want, "{target:?}");
}

/// `my_cumsum` of test_gufunc.py `test_axis` (issue 6773), `"(n)->(n)"` over float64.
/// Rust: Numba's `axis=0` keyword is the transposed view (the core axis last) and the result
/// transposed back; the `out=` keyword is `out_on` into a transposed view.
#[guvectorize("(n)->(n)", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn my_cumsum(x: ArrayView1<f64>, mut res: ArrayViewMut1<f64>) {
    let mut acc = 0.0;
    for i in 0..x.len() {
        acc += x[i];
        res[i] = acc;
    }
}

/// test_gufunc.py `test_axis`: `my_cumsum(np.ones((20, 30)), axis=0) == np.cumsum(x,
/// axis=0)`, as a return and into `out`; `test_gufunc_attributes`: `[1, 2, 3, 4]` gives
/// `[1, 3, 6, 10]`.
pub(crate) fn check_test_gufunc_axis(target: Target) {
    let x = Array2::<f64>::ones((20, 30));
    let want = Array2::from_shape_fn((20, 30), |(i, _)| (i + 1) as f64);
    let y = my_cumsum::on(target, x.t()).unwrap();
    assert_eq!(y.t(), want.view().into_dyn(), "{target:?}");
    let mut out_kw = Array2::zeros((20, 30));
    my_cumsum::out_on(target, x.t(), out_kw.view_mut().reversed_axes()).unwrap();
    assert_eq!(out_kw, want, "{target:?} out");
    let got = my_cumsum::on(target, &array![1.0, 2.0, 3.0, 4.0]).unwrap();
    assert_eq!(got, array![1.0, 3.0, 6.0, 10.0].into_dyn(), "{target:?}");
}

/// `copy_and_double` of test_gufunc.py `TestMultipleOutputs` (and of cudapy test_gufunc.py),
/// `'(x)->(x),(x)'` on float32. Rust: `range(B.size)` is `b.len()`; the outputs come back as
/// a tuple.
#[guvectorize("(x)->(x),(x)", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn copy_and_double(
    a: ArrayView1<f32>,
    mut b: ArrayViewMut1<f32>,
    mut c: ArrayViewMut1<f32>,
) {
    for i in 0..b.len() {
        b[i] = a[i];
        c[i] = a[i] * 2.0;
    }
}

/// `copy_and_multiply` of TestMultipleOutputs `test_multiple_output_dtypes`: int32 in, an
/// int32 and a float64 out. Rust: `A[i] * 1.5` into a float64 array is `a[i] as f64 * 1.5`.
#[guvectorize("(x)->(x),(x)", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn copy_and_multiply(
    a: ArrayView1<i32>,
    mut b: ArrayViewMut1<i32>,
    mut c: ArrayViewMut1<f64>,
) {
    for i in 0..b.len() {
        b[i] = a[i];
        c[i] = a[i] as f64 * 1.5;
    }
}

/// TestMultipleOutputs: `A = np.arange(10) + 1`; outputs passed in (`copy(A, B, C)`) and
/// allocated (`B, C = copy_and_double(A)`, cudapy `test_multiple_output_allocation`).
pub(crate) fn check_test_gufunc_multiple_outputs(target: Target) {
    let a = Array1::from_shape_fn(10, |i| (i + 1) as f32);
    let (b, c) = copy_and_double::on(target, &a).unwrap();
    assert_eq!(b, a.clone().into_dyn(), "{target:?}");
    assert_eq!(c, (&a * 2.0).into_dyn(), "{target:?}");
    let (mut b, mut c) = (Array1::zeros(10), Array1::zeros(10));
    copy_and_double::out_on(target, &a, &mut b, &mut c).unwrap();
    assert_eq!((b, c), (a.clone(), &a * 2.0), "{target:?} passed in");
    let ai = Array1::from_shape_fn(10, |i| (i + 1) as i32);
    let (mut b, mut c) = (Array1::zeros(10), Array1::<f64>::zeros(10));
    copy_and_multiply::out_on(target, &ai, &mut b, &mut c).unwrap();
    assert_eq!(b, ai, "{target:?}");
    assert_eq!(c, ai.mapv(|v| v as f64 * 1.5), "{target:?}");
}

/// `gufunc` of test_gufunc.py `TestGUVectorizeJit.test_output_scalar`, `'(n),(m) -> ()'`.
/// Rust: `x.sum() + y.sum()` as written (a view's `sum`); int64 as the test's arrays.
#[guvectorize("(n),(m) -> ()", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn output_scalar(x: ArrayView1<i64>, y: ArrayView1<i64>, res: &mut i64) {
    *res = x.sum() + y.sum();
}

/// `gufunc` of test_gufunc.py `test_mismatch_loop_shape_2`, `'(n),(n) -> (), (n)'`: a `()`
/// and an `(n)` output. Rust: `out[i] += ...` reads the output, which starts zeroed as the
/// test's `np.zeros`.
#[guvectorize("(n),(n) -> (), (n)", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn sum_and_shift(
    x: ArrayView1<i64>,
    y: ArrayView1<i64>,
    res: &mut i64,
    mut out: ArrayViewMut1<i64>,
) {
    *res = x.sum();
    for i in 0..x.len() {
        out[i] += x[i] + y.sum();
    }
}

/// test_output_scalar (`x = arange(40).reshape(4, 10)`, `y = arange(20)`: `x[r].sum() +
/// y.sum()`); test_mismatch_loop_shape_2 with the shapes that fit (`x` (4, 2), `y` (2,)) and
/// the ones Numba rejects ("Loop and array shapes are incompatible": outputs for 3 items).
pub(crate) fn check_test_gufunc_core_sums(target: Target) {
    let x = Array::from_shape_fn((4, 10), |(i, j)| (i * 10 + j) as i64);
    let y = Array1::from_shape_fn(20, |i| i as i64);
    let got = output_scalar::on(target, &x, &y).unwrap();
    let want: Vec<i64> = (0..4).map(|r| x.row(r).sum() + 190).collect();
    assert_eq!(got.iter().copied().collect::<Vec<_>>(), want, "{target:?}");

    let x = Array::from_shape_fn((4, 2), |(i, j)| (i * 2 + j) as i64);
    let y = array![0i64, 1];
    let (res, out) = sum_and_shift::on(target, &x, &y).unwrap();
    assert_eq!(res, array![1i64, 5, 9, 13].into_dyn(), "{target:?}");
    assert_eq!(out, (&x + 1).into_dyn(), "{target:?}");
    let (mut res, mut out) = (Array1::<i64>::zeros(3), Array2::<i64>::zeros((3, 2)));
    assert!(
        sum_and_shift::out_on(target, &x, &y, &mut res, &mut out).is_err(),
        "{target:?}: outputs of 3 items for 4 must be refused"
    );
}

/// `pyfunc` of test_gufunc.py `test_scalar_input_core_type`, `['int32[:], int32, int32[:]']`,
/// `'(n),()->(n)'`. Rust: `range(inp.size)` is `inp.len()`.
#[guvectorize("(n),()->(n)", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn scalar_input_core_type(inp: ArrayView1<i32>, n: i32, mut out: ArrayViewMut1<i32>) {
    for i in 0..inp.len() {
        out[i] = n * (inp[i] + 1);
    }
}

/// `foo` of cudapy test_gufunc_scalar.py `test_gufunc_scalar_cast`, `'(),(t)->(t)'` over int32.
/// Rust: Numba casts the int64 scalar `np.int64(2)` to the int32 signature; Rust takes the
/// `i32` (no implicit casts), and the device-array int64 error has no counterpart.
#[guvectorize("(),(t)->(t)", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn scalar_cast_foo(a: i32, b: ArrayView1<i32>, mut out: ArrayViewMut1<i32>) {
    for i in 0..b.len() {
        out[i] = a * b[i];
    }
}

/// test_scalar_input_core_type: one core loop (`arange(10)`, 2) and ten (`arange(20).reshape(
/// 10, 2)`), against the Python function run per row; test_gufunc_scalar_cast: `a * b`.
pub(crate) fn check_test_gufunc_scalar_inputs(target: Target) {
    let arr = Array1::from_shape_fn(10, |i| i as i32);
    let got = scalar_input_core_type::on(target, &arr, 2).unwrap();
    assert_eq!(got, arr.mapv(|v| 2 * (v + 1)).into_dyn(), "{target:?}");
    let arr = Array::from_shape_fn((10, 2), |(i, j)| (i * 2 + j) as i32);
    let got = scalar_input_core_type::on(target, &arr, 2).unwrap();
    assert_eq!(got, arr.mapv(|v| 2 * (v + 1)).into_dyn(), "{target:?}");
    let b = Array1::from_shape_fn(10, |i| i as i32);
    let got = scalar_cast_foo::on(target, 2, &b).unwrap();
    assert_eq!(got, (&b * 2).into_dyn(), "{target:?}");
}

// =============================================================================================
// numba/tests/npyufunc/test_update_inplace.py

/// `py_replace_2nd` of numba/tests/npyufunc/test_update_inplace.py, `'(t),()'` with
/// `writable_args=(0,)` for f8 (and f4, which Numba only updates with `writable_args`).
/// Rust: the written operand is an `ArrayViewMut1` (no `writable_args`: a mutable view is
/// written in place for every dtype); `range(0, n, 2)` is `(0..n).step_by(2)`.
#[guvectorize("(t),()", targets = ["cpu", "parallel", "cuda"], types = [f32, f64])]
pub(crate) fn py_replace_2nd<T>(mut x_t: ArrayViewMut1<T>, y_1: T) {
    for t in (0..x_t.len()).step_by(2) {
        x_t[t] = y_1;
    }
}

/// `py_update_3`, `'(t),(t),(t),()'` with `writable_args=(0, 1, 2)`: three operands written.
#[guvectorize("(t),(t),(t),()", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn py_update_3(
    mut x0_t: ArrayViewMut1<f64>,
    mut x1_t: ArrayViewMut1<f64>,
    mut x2_t: ArrayViewMut1<f64>,
    y_1: f64,
) {
    for t in 0..x0_t.len() {
        x0_t[t] = y_1;
        x1_t[t] = 2.0 * y_1;
        x2_t[t] = 3.0 * y_1;
    }
}

/// test_update_inplace.py `_run_test_for_gufunc`: `np.zeros(10)` operands and `z = 2`,
/// compared with the Python function run on copies (its results written out here), for f8
/// and f4; and (ours) a 2-d operand, whose rows are the loop.
pub(crate) fn check_test_update_inplace(target: Target) {
    let want: Array1<f64> = Array1::from_shape_fn(10, |i| if i % 2 == 0 { 2.0 } else { 0.0 });
    let mut x = Array1::<f64>::zeros(10);
    py_replace_2nd::on(target, &mut x, 2.0).unwrap();
    assert_eq!(x, want, "{target:?} f8");
    let mut x4 = Array1::<f32>::zeros(10);
    py_replace_2nd::on(target, &mut x4, 2.0f32).unwrap();
    assert_eq!(x4, want.mapv(|v| v as f32), "{target:?} f4");
    let mut rows = Array2::<f64>::from_elem((3, 5), -1.0);
    py_replace_2nd::on(target, &mut rows, &array![1.0, 2.0, 3.0]).unwrap();
    for r in 0..3 {
        for t in 0..5 {
            let w = if t % 2 == 0 { (r + 1) as f64 } else { -1.0 };
            assert_eq!(rows[[r, t]], w, "{target:?} ({r}, {t})");
        }
    }
    let (mut x0, mut x1, mut x2) = (
        Array1::<f64>::zeros(10),
        Array1::<f64>::zeros(10),
        Array1::<f64>::zeros(10),
    );
    py_update_3::on(target, &mut x0, &mut x1, &mut x2, 2.0).unwrap();
    assert_eq!(x0, Array1::from_elem(10, 2.0), "{target:?}");
    assert_eq!(x1, Array1::from_elem(10, 4.0), "{target:?}");
    assert_eq!(x2, Array1::from_elem(10, 6.0), "{target:?}");
}

// The docs' `init_values` (`'()->()'`, writing 6.5 into its *input* `invals`) is not ported:
// an input is read-only here; writing an operand needs the in-place form without `->`
// (`py_replace_2nd` above), which is what the docs recommend it become (`writable_args`).

// =============================================================================================
// Numba's documentation: docs/source/user/vectorize.rst (numba/tests/doc_examples/
// test_examples.py)

/// `g` of the docs' "The @guvectorize decorator" (test_examples.py `test_guvectorize`),
/// `[(int64[:], int64, int64[:])], '(n),()->(n)'`; the same core is test_gufunc.py's
/// `TestGUVectorizeJit` `add` and cudapy test_gufunc_scalar.py's
/// `test_gufunc_old_style_scalar_as_array` (int32 there, `y[0]` old style). Rust: `y` is a
/// plain `i64` rather than a 1-element array.
#[guvectorize("(n),()->(n)", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn g(x: ArrayView1<i64>, y: i64, mut res: ArrayViewMut1<i64>) {
    for i in 0..x.len() {
        res[i] = x[i] + y;
    }
}

/// The docs' printed results for `g(np.arange(5), 2)`, `g(a, 10)` and `g(a, np.array([10,
/// 20]))`; TestGUVectorizeJit `check_add_gufunc` (`arange(40).reshape(4, 2, 5) + 100`); the
/// cudapy old-style cases (`[1, 2, 3, 4] + 2`, and two rows with `[2, 10]`, into `out`).
pub(crate) fn check_docs_guvectorize_g(target: Target) {
    let got = g::on(target, &Array1::from_shape_fn(5, |i| i as i64), 2).unwrap();
    assert_eq!(got, array![2i64, 3, 4, 5, 6].into_dyn(), "{target:?}");
    let a = Array::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as i64);
    let got = g::on(target, &a, 10).unwrap();
    assert_eq!(got, array![[10i64, 11, 12], [13, 14, 15]].into_dyn());
    let got = g::on(target, &a, &array![10i64, 20]).unwrap();
    assert_eq!(got, array![[10i64, 11, 12], [23, 24, 25]].into_dyn());
    let x = Array1::from_shape_fn(40, |i| i as i64)
        .into_shape_with_order((4, 2, 5))
        .unwrap();
    let mut res = Array3::zeros((4, 2, 5));
    g::out_on(target, &x, 100, &mut res).unwrap();
    assert_eq!(res, &x + 100, "{target:?}");
    // `b = np.array([2])` has the loop shape (1,), so NumPy's result is (1, 4) (Numba's test
    // writes it into a given (4,) `out`).
    let got = g::on(target, &array![1i64, 2, 3, 4], &array![2i64]).unwrap();
    assert_eq!(got, array![[3i64, 4, 5, 6]].into_dyn(), "{target:?}");
    let a = array![[1i64, 2, 3, 4], [1, 2, 3, 4]];
    let mut res = Array2::zeros((2, 4));
    g::out_on(target, &a, &array![2i64, 10], &mut res).unwrap();
    assert_eq!(res, array![[3i64, 4, 5, 6], [11, 12, 13, 14]]);
}

/// `g` of the docs' "Scalar return values" (test_examples.py `test_guvectorize_scalar_return`),
/// `'(n),()->()'`. Rust: `res[0] = acc` is `*res = acc`.
#[guvectorize("(n),()->()", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn g_scalar_return(x: ArrayView1<i64>, y: i64, res: &mut i64) {
    let mut acc = 0;
    for i in 0..x.len() {
        acc += x[i] + y;
    }
    *res = acc;
}

/// The docs: `g(np.arange(5), 2) == 20`; and per row of a 2-d input (ours).
pub(crate) fn check_docs_guvectorize_scalar_return(target: Target) {
    let got = g_scalar_return::on(target, &Array1::from_shape_fn(5, |i| i as i64), 2).unwrap();
    assert_eq!(got[[]], 20, "{target:?}");
    let a = Array::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as i64);
    let got = g_scalar_return::on(target, &a, &array![0i64, 1, -1]).unwrap();
    assert_eq!(got, array![6i64, 26, 34].into_dyn(), "{target:?}");
}

/// `move_mean` of the docs' examples (test_examples.py `test_moving_average`),
/// `['void(float64[:], intp[:], float64[:])'], '(n),()->(n)'`. Rust: the window is a plain
/// `isize` instead of `window_arr[0]`, cast to an index.
#[guvectorize("(n),()->(n)", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn move_mean(a: ArrayView1<f64>, window_arr: isize, mut out: ArrayViewMut1<f64>) {
    let window_width = window_arr as usize;
    let mut asum = 0.0;
    let mut count = 0;
    for i in 0..window_width {
        asum += a[i];
        count += 1;
        out[i] = asum / count as f64;
    }
    for i in window_width..a.len() {
        asum += a[i] - a[i - window_width];
        out[i] = asum / count as f64;
    }
}

/// The docs call `move_mean(np.arange(20).reshape(2, 10), 3)`: each output is the mean of
/// the last (up to) 3 inputs, computed here directly.
pub(crate) fn check_docs_move_mean(target: Target) {
    let arr = Array::from_shape_fn((2, 10), |(i, j)| (i * 10 + j) as f64);
    let got = move_mean::on(target, &arr, 3isize).unwrap();
    for r in 0..2 {
        for i in 0..10usize {
            let lo = i.saturating_sub(2);
            let window = arr.slice(s![r, lo..=i]);
            let want = window.sum() / window.len() as f64;
            assert_close(
                got[[r, i]],
                want,
                1e-12,
                0.0,
                &format!("{target:?} ({r}, {i})"),
            );
        }
    }
}

// =============================================================================================
// docs/source/cuda/ufunc.rst, numba/cuda/tests/cudapy/test_vectorize_device.py,
// test_vectorize_complex.py, test_vectorize_decor.py, test_gufunc.py, test_gufunc_scalar.py

/// `cu_discriminant` of Numba's CUDA ufunc docs ("Example: Basic Example"), signatures
/// float32 and float64. Rust: `math.sqrt(b ** 2 - 4 * a * c)` is `(b.powi(2) - 4.0 * a *
/// c).sqrt()`.
#[vectorize(targets = ["cpu", "parallel", "cuda"], types = [f32, f64])]
pub(crate) fn cu_discriminant<T>(a: T, b: T, c: T) -> T {
    (b.powi(2) - 4.0 * a * c).sqrt()
}

/// The docs' inputs (`A`, `C` uniform, `B` uniform + 10; 10000 of them here 1000), against
/// the formula in f64 (the docs print `D`; no tolerance stated: `np.allclose`'s).
pub(crate) fn check_docs_cu_discriminant(target: Target) {
    let mut rng = Rng(3);
    let n = 1000;
    let a = Array1::from_shape_fn(n, |_| rng.uniform());
    let b = Array1::from_shape_fn(n, |_| rng.uniform() + 10.0);
    let c = Array1::from_shape_fn(n, |_| rng.uniform());
    let want = Array1::from_shape_fn(n, |i| (b[i] * b[i] - 4.0 * a[i] * c[i]).sqrt());
    let got = cu_discriminant::on(target, &a, &b, &c).unwrap();
    let (a32, b32, c32) = (
        a.mapv(|v| v as f32),
        b.mapv(|v| v as f32),
        c.mapv(|v| v as f32),
    );
    let got32 = cu_discriminant::on(target, &a32, &b32, &c32).unwrap();
    for i in 0..n {
        assert_close(got[i], want[i], 1e-12, 0.0, &format!("{target:?} f64 {i}"));
        assert_close(
            got32[i] as f64,
            want[i],
            1e-5,
            1e-8,
            &format!("{target:?} f32 {i}"),
        );
    }
}

/// `cu_device_fn` of cudapy test_vectorize_device.py (and the CUDA ufunc docs' "Calling
/// Device Functions"), `@cuda.jit('float32(float32, float32, float32)', device=True)`.
/// Rust: a device function is a `#[kernel_fn]` helper; `x ** y` is `x.powf(y)`.
#[kernel_fn]
pub(crate) fn cu_device_fn(x: f32, y: f32, z: f32) -> f32 {
    x.powf(y) / z
}

/// `cu_ufunc`, the ufunc calling the device function.
#[vectorize(targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn cu_ufunc(x: f32, y: f32, z: f32) -> f32 {
    cu_device_fn(x, y, z)
}

/// test_cuda_vectorize_device_call: 100 uniform `X`, `Y` and `Z + 0.1`; `np.allclose(out, (X
/// ** Y) / Z)` (rtol 1e-5, atol 1e-8; the reference in f64 of the same f32 inputs).
pub(crate) fn check_test_vectorize_device_call(target: Target) {
    let mut rng = Rng(5);
    let n = 100;
    let x = Array1::from_shape_fn(n, |_| rng.uniform() as f32);
    let y = Array1::from_shape_fn(n, |_| rng.uniform() as f32);
    let z = Array1::from_shape_fn(n, |_| (rng.uniform() + 0.1) as f32);
    let got = cu_ufunc::on(target, &x, &y, &z).unwrap();
    for i in 0..n {
        let want = (x[i] as f64).powf(y[i] as f64) / z[i] as f64;
        assert_close(
            got[i] as f64,
            want,
            1e-5,
            1e-8,
            &format!("{target:?} at {i}"),
        );
    }
}

/// `vcomp` of cudapy test_vectorize_complex.py, `['complex128(complex128)']`. Rust: the real
/// `1.` added to a complex is `+ 1.0` on `Complex<f64>`.
#[vectorize(targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn vcomp(a: Complex<f64>) -> Complex<f64> {
    a * a + 1.0
}

/// test_vectorize_complex: `np.allclose(A * A + 1., vcomp(A))` over `np.arange(5)` as
/// complex128, plus (ours) values with imaginary parts: `(x + iy)^2 + 1 = x^2 - y^2 + 1 +
/// 2xyi`.
pub(crate) fn check_test_vectorize_complex(target: Target) {
    let a = Array1::from_shape_fn(5, |i| Complex::new(i as f64, 0.0));
    let got = vcomp::on(target, &a).unwrap();
    for i in 0..5 {
        assert_eq!(got[i], Complex::new((i * i + 1) as f64, 0.0), "{target:?}");
    }
    let z = array![Complex::new(1.5, -2.0), Complex::new(-0.25, 3.0)];
    let got = vcomp::on(target, &z).unwrap();
    for i in 0..2 {
        let (x, y) = (z[i].re, z[i].im);
        let want = Complex::new(x * x - y * y + 1.0, 2.0 * x * y);
        assert!(
            (got[i] - want).norm() <= 1e-12,
            "{target:?} {} vs {want}",
            got[i]
        );
    }
}

/// `fngpu` of cudapy test_vectorize_decor.py `TestGPUVectorizeBroadcast`,
/// `['float64(float64,float64)']`: `a - b`.
#[vectorize(targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn fngpu(a: f64, b: f64) -> f64 {
    a - b
}

/// test_broadcast: `a = randn(100, 3, 1)`, `b = a.transpose(2, 1, 0)` (1, 3, 100): the
/// difference broadcasts to (100, 3, 100); `assert_almost_equal`, here exact.
pub(crate) fn check_test_gpu_vectorize_broadcast(target: Target) {
    let mut rng = Rng(13);
    let a = Array3::from_shape_fn((100, 3, 1), |_| rng.normal());
    let b = a.view().permuted_axes([2, 1, 0]);
    let got = fngpu::on(target, &a, b).unwrap();
    assert_eq!(got.shape(), &[100, 3, 100]);
    for ((i, j, k), &v) in got.indexed_iter() {
        assert_eq!(v, a[[i, j, 0]] - a[[k, j, 0]], "{target:?} ({i}, {j}, {k})");
    }
}

/// `gu_reduce` of cudapy test_gufunc.py `check_tuple_arg`, `'(n),(n)->()'` on float64 (the same
/// body as `gufunc_add` of npyufunc test_ufunc.py). Rust: Python's `s = 0` starts an integer
/// that becomes a float; here `0.0`. Numba's tuple arguments are arrays.
#[guvectorize("(n),(n)->()", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn gu_reduce(x: ArrayView1<f64>, y: ArrayView1<f64>, r: &mut f64) {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * y[i];
    }
    *r = s;
}

/// test_tuple_of_tuple_arg (and the namedtuple and array variants): `np.sum(a * b, axis=1)`,
/// `assert_equal` (exact).
pub(crate) fn check_test_gufunc_tuple_arg(target: Target) {
    let a = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let b = array![[1.5, 2.5, 3.5], [4.5, 5.5, 6.5]];
    let got = gu_reduce::on(target, &a, &b).unwrap();
    let want: Vec<f64> = (0..2).map(|r| (&a.row(r) * &b.row(r)).sum()).collect();
    assert_eq!(got.iter().copied().collect::<Vec<_>>(), want, "{target:?}");
    assert_eq!(want, [17.0, 84.5]);
}

/// `copy2d` of cudapy test_gufunc.py `test_copy2d`, `'(x, y)->(x, y)'` on float32.
#[guvectorize("(x, y)->(x, y)", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn copy2d(a: ArrayView2<f32>, mut b: ArrayViewMut2<f32>) {
    for x in 0..b.shape()[0] {
        for y in 0..b.shape()[1] {
            b[[x, y]] = a[[x, y]];
        }
    }
}

/// `numba_dist_cuda` of cudapy test_gufunc.py `test_inefficient_launch_configuration` and
/// `test_efficient_launch_configuration`, `'(n),(n)->(n)'` on float32. Rust: the local `len`
/// (a Python builtin's name) is kept.
#[guvectorize("(n),(n)->(n)", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn numba_dist_cuda(
    a: ArrayView1<f32>,
    b: ArrayView1<f32>,
    mut dist: ArrayViewMut1<f32>,
) {
    let len = a.shape()[0];
    for i in 0..len {
        dist[i] = a[i] * b[i];
    }
}

/// test_copy2d (`arange(30).reshape(5, 6) + 1` into `out`); the launch-configuration tests:
/// one loop item of 32768 and (16384, 2) (524288 rows in Numba's), each `a * b`, exact.
pub(crate) fn check_test_gufunc_copy2d_and_dist(target: Target) {
    let a = Array::from_shape_fn((5, 6), |(i, j)| (i * 6 + j + 1) as f32);
    let mut b = Array2::zeros((5, 6));
    copy2d::out_on(target, &a, &mut b).unwrap();
    assert_eq!(b, a, "{target:?}");
    let mut rng = Rng(17);
    let x = Array1::from_shape_fn(1024 * 32, |_| rng.uniform() as f32);
    let y = Array1::from_shape_fn(1024 * 32, |_| rng.uniform() as f32);
    let mut dist = Array1::zeros(1024 * 32);
    numba_dist_cuda::out_on(target, &x, &y, &mut dist).unwrap();
    assert_eq!(dist, &x * &y, "{target:?} one item");
    let x2 = x.into_shape_with_order((16384, 2)).unwrap();
    let y2 = y.into_shape_with_order((16384, 2)).unwrap();
    let got = numba_dist_cuda::on(target, &x2, &y2).unwrap();
    assert_eq!(got, (&x2 * &y2).into_dyn(), "{target:?} many items");
}

/// `saxpy` of cudapy test_gufunc_scalar.py `test_gufunc_scalar_input_saxpy`,
/// `['void(float32, float32[:], float32[:], float32[:])'], '(),(t),(t)->(t)'`.
#[guvectorize("(),(t),(t)->(t)", targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn saxpy(a: f32, x: ArrayView1<f32>, y: ArrayView1<f32>, mut out: ArrayViewMut1<f32>) {
    for i in 0..out.shape()[0] {
        out[i] = a * x[i] + y[i];
    }
}

/// The three cases of test_gufunc_scalar_input_saxpy, exact (`exp == out[j, i]`): a scalar
/// `A = 2` with (5, 2) and with (10,), and `A = arange(5)` (one per row) with (5, 2).
pub(crate) fn check_test_gufunc_scalar_saxpy(target: Target) {
    let x = Array::from_shape_fn((5, 2), |(j, i)| (j * 2 + i) as f32);
    let got = saxpy::on(target, 2.0f32, &x, &x).unwrap();
    for ((j, i), &v) in x.indexed_iter() {
        assert_eq!(got[[j, i]], 2.0 * v + v, "{target:?}");
    }
    let x1 = Array1::from_shape_fn(10, |i| i as f32);
    let got = saxpy::on(target, 2.0f32, &x1, &x1).unwrap();
    assert_eq!(got, (&x1 * 3.0).into_dyn(), "{target:?}");
    let a = Array1::from_shape_fn(5, |i| i as f32);
    let got = saxpy::on(target, &a, &x, &x).unwrap();
    for ((j, i), &v) in x.indexed_iter() {
        assert_eq!(got[[j, i]], a[j] * v + v, "{target:?} ({j}, {i})");
    }
}

// =============================================================================================
// numba/tests/npyufunc/test_dufunc.py

/// `pyuadd` of numba/tests/npyufunc/test_dufunc.py as `vectorize('int64(int64, int64)',
/// identity=0)` (test_add_reduce).
#[vectorize(targets = ["cpu", "parallel", "cuda"], identity = 0)]
pub(crate) fn duadd(a0: i64, a1: i64) -> i64 {
    a0 + a1
}

/// `pymult` as `vectorize('int64(int64, int64)', identity=1)` (test_mul_reduce).
#[vectorize(targets = ["cpu", "parallel", "cuda"], identity = 1)]
pub(crate) fn dumul(a0: i64, a1: i64) -> i64 {
    a0 * a1
}

/// `pymin` as `vectorize('int64(int64, int64)', identity='reorderable')` (test_min_reduce).
/// Rust: Python's `a0 if a0 < a1 else a1` is an `if` expression; `identity='reorderable'` is
/// `associative = true` (several axes may be reduced), and there is no identity (an empty
/// reduction is an error, as NumPy's for a reorderable identity).
#[vectorize(targets = ["cpu", "parallel", "cuda"], associative = true)]
pub(crate) fn dumin(a0: i64, a1: i64) -> i64 {
    if a0 < a1 {
        a0
    } else {
        a1
    }
}

/// `pysub` (test_non_associative_reduce).
#[vectorize(targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn dusub(a0: i64, a1: i64) -> i64 {
    a0 - a1
}

/// `pydiv`, Python's floor division `a0 // a1` on int64. Rust: `/` truncates toward zero, so
/// the quotient is stepped down when the remainder's sign differs from the divisor's. A zero
/// divisor is an `Err` here (Numba's ufunc warns and gives 0).
#[vectorize(targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn dudiv(a0: i64, a1: i64) -> i64 {
    let q = a0 / a1;
    let r = a0 % a1;
    if r != 0 && ((r < 0) != (a1 < 0)) {
        q - 1
    } else {
        q
    }
}

/// The reference for `reduce` over `axes` of `a` by `f` folded in order (NumPy's).
fn fold_axes(a: &ArrayD<i64>, axes: &[usize], f: fn(i64, i64) -> i64) -> ArrayD<i64> {
    let shape: Vec<usize> = (0..a.ndim())
        .filter(|k| !axes.contains(k))
        .map(|k| a.shape()[k])
        .collect();
    let mut out: ArrayD<Option<i64>> = ArrayD::from_elem(IxDyn(&shape), None);
    for (idx, &v) in a.indexed_iter() {
        let o: Vec<usize> = (0..a.ndim())
            .filter(|k| !axes.contains(k))
            .map(|k| idx[k])
            .collect();
        let slot = &mut out[IxDyn(&o)];
        *slot = Some(slot.map_or(v, |acc| f(acc, v)));
    }
    out.mapv(Option::unwrap)
}

/// test_dufunc.py `TestDUFuncReduce._check_reduce` (every axis of `arange(5)`,
/// `arange(4).reshape(2, 2)`, `arange(40).reshape(5, 4, 2)`) and `_check_reduce_axis` (every
/// combination of axes of `arange(40).reshape(5, 4, 2)` and `arange(10)`, and all of them) for
/// `duadd`, `dumul`, `dumin`; `test_reduce_zero_axis`'s empty reductions give the identity.
/// test_non_associative_reduce: `dusub` and `dudiv` (no identity, not reorderable) through
/// both checks: folded in order along one axis (also `axis=()` and, of a 1-d array,
/// `axis=None`), and NumPy's "not reorderable, so at most one axis may be specified" for more.
pub(crate) fn check_test_dufunc_reduce(target: Target) {
    let inputs = [
        ArrayD::from_shape_fn(IxDyn(&[5]), |i| i[0] as i64),
        Array::from_shape_fn((2, 2), |(i, j)| (i * 2 + j) as i64).into_dyn(),
        Array::from_shape_fn((5, 4, 2), |(i, j, k)| (i * 8 + j * 2 + k) as i64).into_dyn(),
        ArrayD::from_shape_fn(IxDyn(&[10]), |i| i[0] as i64),
    ];
    for a in &inputs {
        let nd = a.ndim();
        for mask in 1u32..(1 << nd) {
            let axes: Vec<usize> = (0..nd).filter(|k| mask & (1 << k) != 0).collect();
            let ax: Vec<isize> = axes.iter().map(|&k| k as isize).collect();
            let what = format!("{target:?} shape {:?} axes {axes:?}", a.shape());
            let got = duadd::reduce_on(target, a, ax.clone()).unwrap();
            assert_eq!(got, fold_axes(a, &axes, |x, y| x + y), "add {what}");
            // Products wrap (arange(40) has 20 odd factors along some axes), as NumPy's do.
            let got = dumul::reduce_on(target, a, ax.clone()).unwrap();
            assert_eq!(got, fold_axes(a, &axes, i64::wrapping_mul), "mul {what}");
            let got = dumin::reduce_on(target, a, ax).unwrap();
            assert_eq!(got, fold_axes(a, &axes, |x, y| x.min(y)), "min {what}");
        }
        let all = duadd::reduce_on(target, a, Axes::All).unwrap();
        assert_eq!(all[[]], a.sum(), "{target:?}");
    }
    // Python's `//` is Rust's `/` on these non-negative operands (no zero divisor is met).
    let sub: fn(i64, i64) -> i64 = |x, y| x - y;
    let div: fn(i64, i64) -> i64 = |x, y| x / y;
    for a in &inputs {
        let nd = a.ndim();
        let mut axis_sets: Vec<Axes> = (0..1u32 << nd)
            .map(|mask| Axes::from((0..nd).filter(|k| mask & (1 << k) != 0).collect::<Vec<_>>()))
            .collect();
        axis_sets.push(Axes::All);
        for axes in axis_sets {
            let list: Vec<usize> = match &axes {
                Axes::All => (0..nd).collect(),
                Axes::List(l) => l.iter().map(|&k| k as usize).collect(),
                Axes::Axis(k) => vec![k.rem_euclid(nd.max(1) as isize) as usize],
            };
            for (name, got, f) in [
                ("sub", dusub::reduce_on(target, a, axes.clone()), sub),
                ("div", dudiv::reduce_on(target, a, axes.clone()), div),
            ] {
                let what = format!("{name} {target:?} shape {:?} axes {axes:?}", a.shape());
                if list.len() > 1 {
                    let e = got.unwrap_err();
                    assert!(matches!(e, Error::NotReorderable { .. }), "{what}: {e}");
                    let text = e.to_string();
                    assert!(text.contains("is not reorderable, so at most one axis"));
                } else {
                    assert_eq!(got.unwrap(), fold_axes(a, &list, f), "{what}");
                }
            }
        }
    }
    // The dufunc applied elementwise (test_scalar: duadd(1, 2) == 3).
    assert_eq!(duadd::on(target, 1i64, 2i64).unwrap()[[]], 3);
    // Empty reductions: the identity, (0, 30) over axis 0 gives 30 zeros.
    let empty = Array2::<i64>::zeros((0, 30));
    assert_eq!(
        duadd::reduce_on(target, &empty, 0).unwrap(),
        ArrayD::<i64>::zeros(IxDyn(&[30]))
    );
    assert_eq!(
        dumul::reduce_on(target, &empty, 0).unwrap(),
        ArrayD::from_elem(IxDyn(&[30]), 1i64)
    );
    assert!(dumin::reduce_on(target, &empty, 0).is_err(), "{target:?}");
}

/// test_non_associative_reduce's kernels where the order is defined: elementwise (with
/// Python's floor division checked against `floor(a / b)`), `outer` (NumPy's
/// `np.subtract.outer`), and `at` (test_numpy_ufunc_at_basic: `at(a, [2, 5, 2], 1)` applies
/// twice at 2; `at` runs on the default target).
pub(crate) fn check_test_dufunc_non_associative(target: Target) {
    let a = array![7i64, -7, 7, -7, 0, 6, -6, 1];
    let b = array![2i64, 2, -2, -2, 3, 3, -4, -5];
    let got = dudiv::on(target, &a, &b).unwrap();
    for i in 0..a.len() {
        let want = (a[i] as f64 / b[i] as f64).floor() as i64;
        assert_eq!(got[i], want, "{target:?} {} // {}", a[i], b[i]);
    }
    assert!(matches!(
        dudiv::on(target, &a, 0i64),
        Err(Error::KernelPanic { .. })
    ));
    assert_eq!(dusub::on(target, &a, &b).unwrap(), &a - &b, "{target:?}");
    let outer = dusub::outer_on(target, &array![10i64, 20], &array![1i64, 2, 3]).unwrap();
    assert_eq!(
        outer,
        array![[9i64, 8, 7], [19, 18, 17]].into_dyn(),
        "{target:?}"
    );
    if target == Target::Cpu {
        let mut x = Array1::from_shape_fn(10, |i| i as i64);
        duadd::at(&mut x, &[2, 5, 2], 1i64).unwrap();
        assert_eq!(x, array![0i64, 1, 4, 3, 4, 6, 6, 7, 8, 9]);
        let mut x = Array1::from_shape_fn(10, |i| i as i64);
        duadd::at(&mut x, &[2, 5, 2], &array![100i64, 100, 100]).unwrap();
        assert_eq!(x, array![0i64, 1, 202, 3, 4, 105, 6, 7, 8, 9]);
        let mut x = Array1::from_shape_fn(4, |i| i as i64);
        dusub::at(&mut x, &[0, 0, 3], &array![1i64, 2, 3]).unwrap();
        assert_eq!(x, array![-3i64, 1, 2, 0]);
    }
}

/// `np.minimum` as `vectorize(identity='reorderable')` (`TestDUFuncReduceNumPyTests`): NaN
/// propagates; reorderable is `associative = true`; no identity.
#[vectorize(targets = ["cpu", "parallel", "cuda"], associative = true)]
pub(crate) fn np_minimum(a: f64, b: f64) -> f64 {
    if a < b || a.is_nan() {
        a
    } else {
        b
    }
}

/// `np.maximum` as `vectorize(identity='reorderable')` (test_reduce_zero_axis).
#[vectorize(targets = ["cpu", "parallel", "cuda"], associative = true)]
pub(crate) fn np_maximum(a: f64, b: f64) -> f64 {
    if a > b || a.is_nan() {
        a
    } else {
        b
    }
}

/// `np.divide` / `np.true_divide` as `vectorize()`: no identity, not reorderable.
#[vectorize(targets = ["cpu", "parallel", "cuda"])]
pub(crate) fn np_divide(a: f64, b: f64) -> f64 {
    a / b
}

/// `np.add` as `vectorize(identity=0)`.
#[vectorize(targets = ["cpu", "parallel", "cuda"], identity = 0.0)]
pub(crate) fn np_add(a: f64, b: f64) -> f64 {
    a + b
}

/// test_dufunc.py `TestDUFuncReduceNumPyTests` (taken by Numba from NumPy's test_ufunc.py):
///
/// - `check_identityless_reduction`: `minimum.reduce` of a (2, 3, 4) array of ones with one
///   zero, over every axis set, for C, Fortran, permuted and non-contiguous layouts (NumPy's
///   unaligned case has no counterpart: Rust arrays are aligned);
/// - `test_identityless_reduction_nonreorderable`: `divide.reduce` of `[[8, 2, 2], [1, .5,
///   .25]]` in order along either axis; over both, NumPy's error (Numba's issue #9283 lets
///   Numba through; we follow NumPy);
/// - `test_numpy_empty_reduction_and_identity`: an empty reduction without identity is an
///   error even when the result is empty, and no reduction over a length-0 kept axis is not;
/// - `test_reduce_zero_axis`: the same rule over Numba's table of shapes, for `maximum` (no
///   identity) and `add` (identity 0);
/// - from `TestDUFuncReduce` beside it, `test_dufunc_negative_axis` and
///   `test_dufunc_invalid_axis`.
///
/// Not ported: `test_numpy_initial_reduction` and the `initial=1` case of the empty-reduction
/// test (`reduce` has no `initial`: the attribute's `identity` is the start value), and the
/// scalar reduction Numba marks as an expected failure.
pub(crate) fn check_test_dufunc_reduce_numpy_tests(target: Target) {
    let min = |a: &ArrayD<f64>, axes: Axes| np_minimum::reduce_on(target, a, axes).unwrap();
    let arr =
        |v: &[f64], shape: &[usize]| ArrayD::from_shape_vec(IxDyn(shape), v.to_vec()).unwrap();
    // The layouts: each a (2, 3, 4) array.
    let c_order = ArrayD::<f64>::zeros(IxDyn(&[2, 3, 4]));
    let f_order = ArrayD::<f64>::zeros(IxDyn(&[2, 3, 4]).f());
    let mut other = ArrayD::<f64>::zeros(IxDyn(&[2, 4, 3]));
    other.swap_axes(1, 2);
    let mut noncontig = ArrayD::<f64>::zeros(IxDyn(&[3, 5, 4]));
    noncontig.swap_axes(1, 2);
    for (layout, mut base) in [
        ("C", c_order),
        ("F", f_order),
        ("other", other),
        ("noncontig", noncontig),
    ] {
        let mut a = if layout == "noncontig" {
            base.slice_mut(s![1.., 1.., 1..]).into_dyn()
        } else {
            base.view_mut()
        };
        assert_eq!(a.shape(), &[2, 3, 4]);
        // (zero's index, then per axis set the expected result; 1 everywhere else).
        type Want = Vec<(Axes, Vec<f64>, Vec<usize>)>;
        let cases: [([usize; 3], Want); 3] = [
            (
                [1, 0, 0],
                vec![
                    (Axes::from([0, 1]), vec![0., 1., 1., 1.], vec![4]),
                    (Axes::from([0, 2]), vec![0., 1., 1.], vec![3]),
                    (Axes::from([1, 2]), vec![1., 0.], vec![2]),
                    (
                        Axes::from(0),
                        [[0., 1., 1., 1.], [1.; 4], [1.; 4]].concat(),
                        vec![3, 4],
                    ),
                    (
                        Axes::from(1),
                        [[1.; 4], [0., 1., 1., 1.]].concat(),
                        vec![2, 4],
                    ),
                    (Axes::from(2), vec![1., 1., 1., 0., 1., 1.], vec![2, 3]),
                ],
            ),
            (
                [0, 1, 0],
                vec![
                    (Axes::from([0, 1]), vec![0., 1., 1., 1.], vec![4]),
                    (Axes::from([0, 2]), vec![1., 0., 1.], vec![3]),
                    (Axes::from([1, 2]), vec![0., 1.], vec![2]),
                    (
                        Axes::from(0),
                        [[1.; 4], [0., 1., 1., 1.], [1.; 4]].concat(),
                        vec![3, 4],
                    ),
                    (
                        Axes::from(1),
                        [[0., 1., 1., 1.], [1.; 4]].concat(),
                        vec![2, 4],
                    ),
                    (Axes::from(2), vec![1., 0., 1., 1., 1., 1.], vec![2, 3]),
                ],
            ),
            (
                [0, 0, 1],
                vec![
                    (Axes::from([0, 1]), vec![1., 0., 1., 1.], vec![4]),
                    (Axes::from([0, 2]), vec![0., 1., 1.], vec![3]),
                    (Axes::from([1, 2]), vec![0., 1.], vec![2]),
                    (
                        Axes::from(0),
                        [[1., 0., 1., 1.], [1.; 4], [1.; 4]].concat(),
                        vec![3, 4],
                    ),
                    (
                        Axes::from(1),
                        [[1., 0., 1., 1.], [1.; 4]].concat(),
                        vec![2, 4],
                    ),
                    (Axes::from(2), vec![0., 1., 1., 1., 1., 1.], vec![2, 3]),
                ],
            ),
        ];
        for (zero, want) in cases {
            a.fill(1.0);
            a[zero] = 0.0;
            let owned = a.to_owned();
            let what = format!("{target:?} {layout} zero at {zero:?}");
            assert_eq!(min(&owned, Axes::All)[[]], 0.0, "{what}");
            assert_eq!(
                np_minimum::reduce_on(target, a.view(), Axes::All).unwrap()[[]],
                0.0,
                "{what}"
            );
            for (axes, values, shape) in want {
                let got = np_minimum::reduce_on(target, a.view(), axes.clone()).unwrap();
                assert_eq!(got, arr(&values, &shape), "{what} axes {axes:?}");
            }
            let none = np_minimum::reduce_on(target, a.view(), Axes::List(vec![])).unwrap();
            assert_eq!(none, owned, "{what} axis=()");
        }
    }

    // test_identityless_reduction_nonreorderable.
    let a = arr(&[8.0, 2.0, 2.0, 1.0, 0.5, 0.25], &[2, 3]);
    assert_eq!(
        np_divide::reduce_on(target, &a, 0).unwrap(),
        arr(&[8.0, 4.0, 8.0], &[3])
    );
    assert_eq!(
        np_divide::reduce_on(target, &a, 1).unwrap(),
        arr(&[2.0, 8.0], &[2])
    );
    assert_eq!(
        np_divide::reduce_on(target, &a, Axes::List(vec![])).unwrap(),
        a
    );
    let e = np_divide::reduce_on(target, &a, [0, 1]).unwrap_err();
    assert!(matches!(e, Error::NotReorderable { .. }), "{e}");

    // test_numpy_empty_reduction_and_identity.
    let empty = ArrayD::<f64>::zeros(IxDyn(&[0, 5]));
    assert_eq!(
        np_divide::reduce_on(target, &empty, 1).unwrap().shape(),
        &[0]
    );
    let e = np_divide::reduce_on(target, &empty, 0).unwrap_err();
    assert!(
        e.to_string()
            .contains("zero-size array to reduction operation"),
        "{e}"
    );
    let empty = ArrayD::<f64>::zeros(IxDyn(&[0, 0, 5]));
    let e = np_divide::reduce_on(target, &empty, 1).unwrap_err();
    assert!(matches!(e, Error::EmptyReduction { .. }), "{e}");

    // test_reduce_zero_axis: `t(expect, func, n, m)`, every case an error exactly where a
    // reduced axis is empty and the function has no identity.
    let table = |n: usize, m: usize| -> Vec<(Vec<usize>, Vec<usize>)> {
        vec![
            (vec![n, m], vec![1]),
            (vec![m, n], vec![0]),
            (vec![n / 2, n / 2, m], vec![2]),
            (vec![n / 2, m, n / 2], vec![1]),
            (vec![n, m / 2, m / 2], vec![1, 2]),
            (vec![m / 2, n, m / 2], vec![0, 2]),
            (vec![m / 3, m / 3, m / 3, n / 2, n / 2], vec![0, 1, 2]),
            (vec![10, m, n], vec![0, 1]),
            (vec![10, n, m], vec![0, 2]),
            (vec![m, 10, n], vec![0]),
            (vec![10, m, n], vec![1]),
            (vec![10, n, m], vec![2]),
        ]
    };
    for (n, m, maximum_ok) in [(30, 30, true), (0, 30, true), (30, 0, false), (0, 0, false)] {
        for (shape, axes) in table(n, m) {
            let z = ArrayD::<f64>::zeros(IxDyn(&shape));
            let axes = Axes::from(axes);
            let what = format!("{target:?} {shape:?} axes {axes:?}");
            let got = np_maximum::reduce_on(target, &z, axes.clone());
            match maximum_ok {
                true => assert!(got.is_ok(), "maximum {what}: {got:?}"),
                false => assert!(
                    matches!(got, Err(Error::EmptyReduction { .. })),
                    "maximum {what}"
                ),
            }
            let sum = np_add::reduce_on(target, &z, axes).unwrap();
            assert!(sum.iter().all(|&x| x == 0.0), "add {what}");
        }
    }
    let nothing = ArrayD::<f64>::zeros(IxDyn(&[0]));
    assert!(np_maximum::reduce_on(target, &nothing, 0).is_err());
    assert_eq!(np_add::reduce_on(target, &nothing, 0).unwrap()[[]], 0.0);
    let square = ArrayD::<f64>::zeros(IxDyn(&[0, 0]));
    assert_eq!(
        np_maximum::reduce_on(target, &square, Axes::List(vec![]))
            .unwrap()
            .shape(),
        &[0, 0]
    );
    assert_eq!(
        np_add::reduce_on(target, &square, Axes::List(vec![]))
            .unwrap()
            .shape(),
        &[0, 0]
    );

    // test_dufunc_negative_axis and test_dufunc_invalid_axis, on arange(40).reshape(5, 4, 2).
    let a = ArrayD::from_shape_fn(IxDyn(&[5, 4, 2]), |i| (i[0] * 8 + i[1] * 2 + i[2]) as i64);
    for (axes, normalized) in [
        (vec![0], vec![0]),
        (vec![-1], vec![2]),
        (vec![0, -1], vec![0, 2]),
        (vec![-1, -2], vec![2, 1]),
        (vec![1, -1], vec![1, 2]),
        (vec![-3], vec![0]),
    ] {
        let got = duadd::reduce_on(target, &a, axes.clone()).unwrap();
        assert_eq!(
            got,
            fold_axes(&a, &normalized, |x, y| x + y),
            "{target:?} axes {axes:?}"
        );
    }
    for axes in [
        vec![0, 0],
        vec![0, 1, 0],
        vec![0, -3],
        vec![-1, -1],
        vec![-1, 2],
    ] {
        let e = duadd::reduce_on(target, &a, axes.clone()).unwrap_err();
        assert!(
            matches!(e, Error::MethodRepeatedAxis { .. }),
            "{axes:?}: {e}"
        );
    }
    for axes in [vec![-4], vec![3], vec![0, -4]] {
        let e = duadd::reduce_on(target, &a, axes.clone()).unwrap_err();
        assert!(matches!(e, Error::MethodAxis { .. }), "{axes:?}: {e}");
    }
}
