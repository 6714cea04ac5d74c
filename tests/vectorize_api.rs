//! `#[vectorize]` call forms, element types, several outputs, generic functions, helpers,
//! constants, call-time targets, kernel paths and errors.

use ndarray::{array, Array0, Array1, Array2, ArrayD, Ix2, IxDyn};
use ufunc::prelude::*;

const SCALE: f64 = 2.5;

#[vectorize(targets = ["cpu", "parallel"])]
fn scaled_sum(a: f64, b: f64) -> f64 {
    (a + b) * SCALE
}

#[vectorize]
fn add_i64(a: i64, b: i64) -> i64 {
    a + b
}

#[vectorize]
fn mixed(x: f32, n: i32, flag: bool) -> f32 {
    if flag {
        x * n as f32
    } else {
        -x
    }
}

#[vectorize]
fn sum_and_diff(a: f32, b: f32) -> (f32, f32) {
    (a + b, a - b)
}

#[vectorize]
fn three_kinds(a: f64) -> (f64, i64, bool) {
    (a * 2.0, a as i64, a > 0.0)
}

#[vectorize(types = [f32, f64])]
fn hypot<T>(a: T, b: T) -> T {
    (a * a + b * b).sqrt()
}

#[vectorize]
fn cmul(a: Complex<f64>, b: Complex<f64>) -> Complex<f64> {
    a * b.conj()
}

#[vectorize]
fn cnorm(a: Complex<f32>) -> f32 {
    a.norm_sqr()
}

#[vectorize]
fn is_positive(x: f32) -> bool {
    x > 0.0
}

#[vectorize]
fn bytes(a: u8, b: u8) -> u8 {
    a.wrapping_mul(b) ^ 0x5a
}

#[vectorize]
fn idiv(a: i32, b: i32) -> i32 {
    a / b
}

#[vectorize]
fn iadd_i8(a: i8, b: i8) -> i8 {
    a + b
}

#[vectorize]
fn with_loop(x: f64, n: u32) -> f64 {
    let mut acc = 0.0;
    for _ in 0..n {
        acc += x;
    }
    acc
}

#[kernel_fn]
fn square_pair(a: f32, b: f32) -> (f32, f32) {
    (a * a, b * b)
}

#[kernel_fn]
fn looping_helper(a: f32) -> f32 {
    let mut s = 0.0;
    for _ in 0..3 {
        s += a;
    }
    s
}

#[vectorize]
fn uses_helper(a: f32, b: f32) -> f32 {
    let (x, y) = square_pair(a, b);
    x + y
}

#[vectorize]
fn uses_looping_helper(a: f32) -> f32 {
    looping_helper(a) + 1.0
}

#[test]
fn arrays_views_and_scalars_mix() {
    let a = array![[1.0, 2.0], [3.0, 4.0]];
    let b = array![10.0, 20.0];
    let c: Array2<f64> = scaled_sum(&a, &b).unwrap();
    assert_eq!(c, array![[27.5, 55.0], [32.5, 60.0]]);
    assert_eq!(scaled_sum(a.view(), 1.0).unwrap(), (&a + 1.0) * SCALE);
    assert_eq!(scaled_sum(&a.view(), &b.view()).unwrap(), c);
    let s: Array0<f64> = scaled_sum(1.0, 2.0).unwrap();
    assert_eq!(s[()], 7.5);
    assert_eq!(scaled_sum::scalar(1.0, 2.0), 7.5);
}

#[test]
fn output_dimension_is_static_where_ndarray_knows_it() {
    let a = Array2::<f64>::zeros((2, 3));
    let d = ArrayD::<f64>::zeros(IxDyn(&[4, 2, 3]));
    let c: ndarray::Array<f64, Ix2> = scaled_sum(&a, 1.0).unwrap();
    assert_eq!(c.shape(), &[2, 3]);
    let c: ArrayD<f64> = scaled_sum(&a, &d).unwrap();
    assert_eq!(c.shape(), &[4, 2, 3]);
}

#[test]
fn out_writes_into_arrays_and_views() {
    let a = array![1i64, 2, 3];
    let mut out = Array1::<i64>::zeros(3);
    add_i64::out(&a, 10, &mut out).unwrap();
    assert_eq!(out, array![11, 12, 13]);
    let mut big = Array2::<i64>::zeros((3, 6));
    add_i64::out(&a, 1, big.column_mut(4)).unwrap();
    assert_eq!(big.column(4), array![2, 3, 4]);
    assert_eq!(big.sum(), 9);
}

#[test]
fn out_shape_must_match_exactly() {
    let a = array![[1.0, 2.0], [3.0, 4.0]];
    let mut wrong = Array2::<f64>::zeros((2, 3));
    let err = scaled_sum::out(&a, 1.0, &mut wrong).unwrap_err();
    assert_eq!(
        err,
        Error::OutputShape {
            output: 0,
            expected: vec![2, 2],
            found: vec![2, 3]
        }
    );
    assert_eq!(
        err.to_string(),
        "output 0 has shape (2,3) but the broadcast shape of the inputs is (2,2)"
    );
    // Broadcasting the output itself is not allowed (NumPy refuses too).
    let mut row = Array1::<f64>::zeros(2);
    assert!(scaled_sum::out(&a, 1.0, &mut row).is_err());
}

#[test]
fn mismatched_shapes_name_every_shape() {
    let err = scaled_sum(&Array2::<f64>::zeros((3, 4)), &Array1::<f64>::zeros(5)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "operands could not be broadcast together with shapes (3,4) (5,)"
    );
}

#[test]
fn mixed_parameter_types() {
    let x = array![1.5f32, 2.0, 3.0];
    let n = array![2i32, 3, 4];
    let flag = array![true, false, true];
    assert_eq!(mixed(&x, &n, &flag).unwrap(), array![3.0, -2.0, 12.0]);
    assert_eq!(mixed(&x, 2, true).unwrap(), array![3.0, 4.0, 6.0]);
}

#[test]
fn several_outputs_return_a_tuple_of_arrays() {
    let a = array![[1.0f32], [2.0]];
    let b = array![10.0f32, 20.0, 30.0];
    let (s, d) = sum_and_diff(&a, &b).unwrap();
    assert_eq!(s.shape(), &[2, 3]);
    assert_eq!(s[[1, 2]], 32.0);
    assert_eq!(d[[0, 1]], -19.0);
    let mut o1 = Array2::<f32>::zeros((2, 3));
    let mut o2 = Array2::<f32>::zeros((2, 3));
    sum_and_diff::out(&a, &b, &mut o1, &mut o2).unwrap();
    assert_eq!((o1, o2), (s, d));
    let (x, i, p) = three_kinds(&array![-1.5, 2.5]).unwrap();
    assert_eq!(x, array![-3.0, 5.0]);
    assert_eq!(i, array![-1i64, 2]);
    assert_eq!(p, array![false, true]);
    let mut wrong = Array1::<f32>::zeros(3);
    let mut right = Array2::<f32>::zeros((2, 3));
    let err = sum_and_diff::out(&a, &b, &mut right, &mut wrong).unwrap_err();
    assert!(matches!(err, Error::OutputShape { output: 1, .. }), "{err}");
}

#[test]
fn generic_function_instantiated_per_type() {
    let a32 = array![3.0f32, 5.0];
    let a64 = array![3.0f64, 5.0];
    assert_eq!(hypot(&a32, 4.0f32).unwrap(), array![5.0f32, 6.4031243]);
    assert_eq!(hypot(&a64, 4.0f64).unwrap(), array![5.0f64, 41f64.sqrt()]);
    assert_eq!(hypot::scalar(3.0f32, 4.0), 5.0);
    assert_eq!(hypot::scalar(6.0f64, 8.0), 10.0);
    let mut out = Array1::<f64>::zeros(2);
    hypot::out(&a64, &a64, &mut out).unwrap();
    assert_eq!(out[0], 18f64.sqrt());
    assert!(hypot::KERNEL_PATH.is_simd());
}

#[test]
fn complex_and_bool_and_small_integers() {
    let a = array![Complex::new(1.0, 2.0), Complex::new(0.0, -1.0)];
    let b = Complex::new(3.0, 4.0);
    let c = cmul(&a, b).unwrap();
    assert_eq!(c[0], Complex::new(1.0, 2.0) * Complex::new(3.0, -4.0));
    assert_eq!(cnorm(&array![Complex::new(3.0f32, 4.0)]).unwrap()[0], 25.0);
    assert_eq!(
        is_positive(&array![-1.0f32, 0.0, 2.0]).unwrap(),
        array![false, false, true]
    );
    assert_eq!(
        bytes(&array![3u8, 200], 7u8).unwrap(),
        array![21 ^ 0x5a, 200u8.wrapping_mul(7) ^ 0x5a]
    );
}

#[test]
fn nan_and_infinity_propagate() {
    let a = array![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.0];
    let c = scaled_sum(&a, f64::INFINITY).unwrap();
    assert!(c[0].is_nan());
    assert_eq!(c[1], f64::INFINITY);
    assert!(c[2].is_nan());
    assert_eq!(c[3], f64::INFINITY);
}

#[test]
fn a_panicking_body_is_an_error_not_a_panic() {
    let err = idiv(&array![1, 2, 3], &array![1, 0, 1]).unwrap_err();
    match &err {
        Error::KernelPanic { function, message } => {
            assert_eq!(*function, "idiv");
            assert!(message.contains("divide by zero"), "{message}");
        }
        other => panic!("unexpected {other}"),
    }
    assert!(err.to_string().starts_with("the body of `idiv` panicked"));
    // Also from the parallel runner, with enough elements to split.
    let n = 200_000;
    let mut b = Array1::<i32>::ones(n);
    b[n - 7] = 0;
    assert!(idiv(&Array1::<i32>::ones(n), &b).is_err());
}

#[test]
fn integer_overflow_behaves_like_the_scalar_function() {
    // Release builds wrap, debug builds panic; the ufunc does what `scalar` does, as an Err.
    let scalar = std::panic::catch_unwind(|| iadd_i8::scalar(120, 10));
    let ufunc = iadd_i8(&array![120i8], 10i8);
    match scalar {
        Ok(v) => assert_eq!(ufunc.unwrap()[0], v),
        Err(_) => assert!(matches!(ufunc, Err(Error::KernelPanic { .. }))),
    }
}

#[test]
fn call_time_target_choice() {
    let a = Array1::from_shape_fn(100_000, |i| i as f64);
    let cpu = scaled_sum::on(Target::Cpu, &a, 1.0).unwrap();
    let par = scaled_sum::on(Target::Parallel, &a, 1.0).unwrap();
    assert_eq!(cpu, par);
    assert_eq!(scaled_sum::TARGETS, &[Target::Cpu, Target::Parallel]);
    assert_eq!(scaled_sum::DEFAULT_TARGET, Target::Cpu);
    let err = add_i64::on(Target::Parallel, &array![1i64], 1i64).unwrap_err();
    assert_eq!(
        err.to_string(),
        "`add_i64` was not compiled for target `parallel`; compiled for: `cpu`"
    );
    let mut out = Array1::<f64>::zeros(100_000);
    scaled_sum::out_on(Target::Parallel, &a, 1.0, &mut out).unwrap();
    assert_eq!(out, cpu);
}

#[test]
fn kernel_paths_are_reported() {
    assert!(scaled_sum::KERNEL_PATH.is_simd());
    assert!(uses_helper::KERNEL_PATH.is_simd());
    assert_eq!(
        with_loop::KERNEL_PATH,
        KernelPath::Scalar {
            reason: "the body contains a `for` loop"
        }
    );
    assert_eq!(
        uses_looping_helper::KERNEL_PATH,
        KernelPath::Scalar {
            reason: "helper `looping_helper`: the body contains a `for` loop"
        }
    );
    // Scalar-path bodies still compute the right thing.
    assert_eq!(
        with_loop(&array![1.5, 2.0], &array![2u32, 3]).unwrap(),
        array![3.0, 6.0]
    );
    assert_eq!(uses_looping_helper(&array![2.0f32]).unwrap(), array![7.0]);
}

#[test]
fn helpers_returning_tuples() {
    let a = array![1.0f32, 2.0];
    assert_eq!(uses_helper(&a, 3.0f32).unwrap(), array![10.0, 13.0]);
    assert_eq!(square_pair(2.0, 3.0), (4.0, 9.0));
}

#[test]
fn ufuncs_and_helpers_defined_inside_a_function_body() {
    const OFFSET: f32 = 0.5;

    #[kernel_fn]
    fn twice(x: f32) -> f32 {
        x * 2.0
    }

    #[vectorize(types = [f32, f64])]
    fn plus_one<T>(x: T) -> T {
        x + 1.0
    }

    #[vectorize(targets = ["parallel", "cpu"])]
    fn local(x: f32) -> f32 {
        twice(x) + OFFSET
    }

    assert_eq!(local(&array![1.0f32, 2.0]).unwrap(), array![2.5, 4.5]);
    assert_eq!(local::DEFAULT_TARGET, Target::Parallel);
    assert_eq!(plus_one(&array![1.0f64]).unwrap()[0], 2.0);
}

#[vectorize]
fn widths(a: i16, b: u16, c: u32, d: u64, e: i8) -> (i16, u16, u32, u64) {
    (
        a.wrapping_sub(e as i16),
        b.wrapping_add(1),
        c.rotate_left(3),
        d ^ (c as u64),
    )
}

#[test]
fn every_integer_width() {
    let (p, q, r, s) = widths(
        &array![i16::MIN, 5],
        &array![u16::MAX, 7],
        0x8000_0001u32,
        &array![1u64, 2],
        3i8,
    )
    .unwrap();
    assert_eq!(p, array![i16::MIN.wrapping_sub(3), 2]);
    assert_eq!(q, array![0, 8]);
    assert_eq!(r, array![0x0000_000c, 0x0000_000c]);
    assert_eq!(s, array![1 ^ 0x8000_0001, 2 ^ 0x8000_0001]);
}

/// Plain functions, not marked `#[kernel_fn]` (issue 13 item 11), work on the CPU targets
/// called by name or by path (`self::f`, `crate::m::f`), in SIMD bodies, scalar-path bodies,
/// `#[kernel_fn]` helpers and gufunc cores: the call runs the function as written (a
/// `#[kernel_fn]` helper would also get the vector versions of its math methods). On `cuda` the
/// call is a compile error at the call that says to mark the function `#[kernel_fn]`
/// (`tests/ui/vectorize_cuda_plain_function.rs`, `tests/ui/vectorize_cuda_plain_name.rs`).
fn plain_square(x: f64) -> f64 {
    x * x
}

#[vectorize(targets = ["cpu", "parallel"])]
fn through_plain_path(x: f64) -> f64 {
    self::plain_square(x) + 1.0
}

#[vectorize(targets = ["cpu", "parallel"])]
fn through_plain_name(x: f64) -> f64 {
    plain_square(x) + plain_square(x + 1.0)
}

/// A second ufunc calling the same plain function in the same module.
#[vectorize(targets = ["cpu", "parallel"])]
fn also_through_plain_name(x: f64) -> f64 {
    plain_square(x) - 1.0
}

/// A `#[kernel_fn]` helper calling a plain function by name.
#[kernel_fn]
fn helper_calling_plain(x: f64) -> f64 {
    plain_square(x) * 2.0
}

#[vectorize(targets = ["cpu", "parallel"])]
fn through_helper_then_plain(x: f64) -> f64 {
    helper_calling_plain(x) + (x).exp().min(1.0)
}

#[vectorize(targets = ["cpu", "parallel"])]
fn looped_plain(x: f64, n: u32) -> f64 {
    let mut s = 0.0;
    for _ in 0..n {
        s += plain_square(x);
    }
    s
}

#[guvectorize("(n)->()", targets = ["cpu", "parallel"])]
fn plain_in_core(a: ndarray::ArrayView1<f64>) -> f64 {
    let mut s = 0.0;
    for v in a.iter() {
        s += plain_square(*v);
    }
    s
}

#[test]
fn plain_functions_on_the_cpu_targets() {
    let x = array![1.5, -2.0, 3.0];
    for target in [Target::Cpu, Target::Parallel] {
        assert_eq!(
            through_plain_path::on(target, &x).unwrap(),
            array![3.25, 5.0, 10.0]
        );
        assert_eq!(
            looped_plain::on(target, &x, 2u32).unwrap(),
            array![4.5, 8.0, 18.0]
        );
        assert_eq!(
            plain_in_core::on(target, &array![[1.0, 2.0], [3.0, -1.0]]).unwrap(),
            array![5.0, 10.0].into_dyn()
        );
    }
    assert!(through_plain_path::KERNEL_PATH.is_simd());
}

#[test]
fn plain_functions_called_by_name() {
    let x = array![1.5, -2.0, 3.0];
    for target in [Target::Cpu, Target::Parallel] {
        assert_eq!(
            through_plain_name::on(target, &x).unwrap(),
            array![2.25 + 6.25, 4.0 + 1.0, 9.0 + 16.0]
        );
        assert_eq!(
            also_through_plain_name::on(target, &x).unwrap(),
            array![1.25, 3.0, 8.0]
        );
        assert_eq!(
            through_helper_then_plain::on(target, &x).unwrap(),
            array![5.5, 8.0 + (-2.0f64).exp(), 19.0]
        );
    }
    assert!(through_plain_name::KERNEL_PATH.is_simd());
    assert!(through_helper_then_plain::KERNEL_PATH.is_simd());

    // Inside a function body, with a local plain function and a closure.
    fn cube(x: f32) -> f32 {
        x * x * x
    }
    #[vectorize(targets = ["cpu", "parallel"])]
    fn local_calls(x: f32) -> f32 {
        let twice = |v: f32| v * 2.0;
        cube(x) + twice(x)
    }
    let y = array![1.0f32, 2.0, -1.0];
    for target in [Target::Cpu, Target::Parallel] {
        assert_eq!(
            local_calls::on(target, &y).unwrap(),
            array![3.0f32, 12.0, -3.0]
        );
    }
}
