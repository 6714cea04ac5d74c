//! Hostile shapes and careless calls on the CPU targets: each case once broke (a panic, an
//! abort, or a silently wrong answer) and must now be an `Err` naming the problem, or NumPy's
//! answer. The `cuda` side of these lives in `tests/cuda/`.

use ndarray::{s, Array1, ArrayD, ArrayView1, IxDyn};
use ufunc::prelude::*;

#[vectorize(targets = ["cpu", "parallel"])]
fn add(a: f32, b: f32) -> f32 {
    a + b
}

#[vectorize(targets = ["cpu", "parallel"])]
fn twice_plus_one(a: f64) -> f64 {
    2.0 * a + 1.0
}

#[guvectorize("(m,n),(n,p)->(m,p)", targets = ["cpu", "parallel"])]
fn matmul(a: ArrayView2<f32>, b: ArrayView2<f32>, mut c: ArrayViewMut2<f32>) {
    for i in 0..a.nrows() {
        for j in 0..b.ncols() {
            c[[i, j]] = (0..a.ncols()).map(|k| a[[i, k]] * b[[k, j]]).sum();
        }
    }
}

#[guvectorize("(n)->(n)", targets = ["cpu", "parallel"])]
fn cumsum(a: ArrayView1<f64>, mut c: ArrayViewMut1<f64>) {
    let mut acc = 0.0;
    for i in 0..a.len() {
        acc += a[i];
        c[i] = acc;
    }
}

/// 34 core dimensions: the flipped-axis bookkeeping once had room for 32.
#[guvectorize(
    "(a0,a1,a2,a3,a4,a5,a6,a7,a8,a9,b0,b1,b2,b3,b4,b5,b6,b7,b8,b9,c0,c1,c2,c3,c4,c5,c6,c7,c8,c9,d0,d1,d2,d3)->()",
    targets = ["cpu"]
)]
fn last_of_deep(a: ArrayViewD<f32>) -> f32 {
    let mut index = vec![0usize; a.ndim()];
    index[33] = 1;
    a[IxDyn(&index)]
}

#[test]
fn empty_results_that_ndarray_would_refuse_are_errors() {
    // Zero elements, but the non-zero lengths multiply past isize::MAX.
    let a = ArrayD::<f32>::zeros(IxDyn(&[0, 1 << 32, 1]));
    let b = ArrayD::<f32>::zeros(IxDyn(&[0, 1, 1 << 32]));
    for target in [Target::Cpu, Target::Parallel] {
        let e = add::on(target, &a, &b).unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{e}");
        assert!(e.to_string().contains("(0,4294967296,4294967296)"), "{e}");
    }
    let a = ArrayD::<f32>::zeros(IxDyn(&[0, 1 << 32, 1]));
    let b = ArrayD::<f32>::zeros(IxDyn(&[0, 1, 1 << 32]));
    let e = matmul(&a, &b).unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
}

#[test]
fn a_result_too_large_to_allocate_is_an_error() {
    // 2^59 f32 = 2^61 bytes: no machine has that much address space.
    let one = Array1::from_elem(1, 1.0f32);
    let huge = one.broadcast(1usize << 59).unwrap();
    let e = add(&huge, 1.0f32).unwrap_err();
    assert!(
        matches!(e, Error::OutOfMemory { bytes, .. } if bytes == 1 << 61),
        "{e}"
    );
    assert!(
        e.to_string()
            .starts_with("cannot allocate 2305843009213693952 bytes"),
        "{e}"
    );
}

#[test]
fn deep_cores_read_the_right_elements() {
    let mut shape = vec![1usize; 34];
    shape[33] = 2;
    let a = ArrayD::from_shape_vec(IxDyn(&shape), vec![10.0f32, 20.0]).unwrap();
    // The last axis reversed: element 1 of the view is element 0 of the data.
    let mut view = a.view();
    view.invert_axis(ndarray::Axis(33));
    assert_eq!(last_of_deep(&view).unwrap().into_iter().next(), Some(10.0));
    assert_eq!(last_of_deep(&a).unwrap().into_iter().next(), Some(20.0));
}

/// NumPy's answer: the inputs as they were before the call wrote anything.
#[test]
fn overlapping_input_and_output_give_numpys_answer() {
    for target in [Target::Cpu, Target::Parallel] {
        let n = 100_003;
        let mut a = Array1::from_shape_fn(n, |i| i as f64);
        let expected: Array1<f64> = a.slice(s![..n - 1]).mapv(|x| 2.0 * x + 1.0);
        // out = a[1..], input = a[..n-1]: each write lands on the next element to be read.
        let input: ArrayView1<f64> = unsafe { ArrayView1::from_shape_ptr(n - 1, a.as_ptr()) };
        twice_plus_one::out_on(target, input, a.slice_mut(s![1..])).unwrap();
        assert_eq!(a.slice(s![1..]), expected, "{target}");

        // Reversed onto itself.
        let mut b = Array1::from_shape_fn(n, |i| i as f64);
        let expected: Array1<f64> = b.slice(s![..;-1]).mapv(|x| 2.0 * x + 1.0);
        let rev: ArrayView1<f64> =
            unsafe { ArrayView1::from_shape_ptr(n, b.as_ptr()) }.slice_move(s![..;-1]);
        twice_plus_one::out_on(target, rev, &mut b).unwrap();
        assert_eq!(b, expected, "{target}");

        // Exactly in place needs no copy and is right.
        let mut c = Array1::from_shape_fn(n, |i| i as f64);
        let expected = c.mapv(|x| 2.0 * x + 1.0);
        let same: ArrayView1<f64> = unsafe { ArrayView1::from_shape_ptr(n, c.as_ptr()) };
        twice_plus_one::out_on(target, same, &mut c).unwrap();
        assert_eq!(c, expected, "{target}");
    }
    // A gufunc whose core reads other elements than it writes.
    let mut a = ndarray::array![1.0f64, 2.0, 3.0, 4.0];
    let input: ArrayView1<f64> = unsafe { ArrayView1::from_shape_ptr(4, a.as_ptr()) };
    cumsum::out(input, &mut a).unwrap();
    assert_eq!(a, ndarray::array![1.0, 3.0, 6.0, 10.0]);
}
