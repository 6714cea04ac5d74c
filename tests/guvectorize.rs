//! `#[guvectorize]`: layouts (scalars, repeated names, fixed and optional dimensions,
//! output-only dimensions, several outputs), loop broadcasting, zero-size loop and core
//! dimensions, errors naming operands and dimensions, and `np.matmul` semantics.

use ndarray::{array, Array, Array1, Array2, Array3, ArrayD, Dimension, IxDyn};
use ufunc::prelude::*;

#[guvectorize("(m?,n),(n,p?)->(m?,p?)", targets = ["cpu", "parallel"])]
fn matmul(a: ArrayView2<f64>, b: ArrayView2<f64>, mut c: ArrayViewMut2<f64>) {
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

/// The same element-wise function as a ufunc and as a gufunc of scalars: one companion
/// generator serves both, so they must behave the same.
#[vectorize(targets = ["cpu", "parallel"])]
fn fma_ufunc(a: f64, b: f64, c: f64) -> (f64, bool) {
    (a * b + c, a > b)
}

#[guvectorize("(),(),()->(),()", targets = ["cpu", "parallel"])]
fn fma_gufunc(a: f64, b: f64, c: f64) -> (f64, bool) {
    (a * b + c, a > b)
}

#[guvectorize("(n),(n)->()")]
fn dot(a: ArrayView1<f32>, b: ArrayView1<f32>) -> f32 {
    a.dot(&b)
}

#[guvectorize("(3),(3)->(3)", target = "parallel")]
fn cross(u: ArrayView1<f64>, v: ArrayView1<f64>, mut w: ArrayViewMut1<f64>) {
    w[0] = u[1] * v[2] - u[2] * v[1];
    w[1] = u[2] * v[0] - u[0] * v[2];
    w[2] = u[0] * v[1] - u[1] * v[0];
}

#[guvectorize("(n),()->(k)")]
fn histogram(x: ArrayView1<f64>, top: f64, mut counts: ArrayViewMut1<u32>) {
    let k = counts.len();
    for &v in x.iter() {
        let bin = ((v / top) * k as f64) as usize;
        if bin < k {
            counts[bin] += 1;
        }
    }
}

#[guvectorize("(n)->(),()")]
fn min_max(x: ArrayView1<i64>) -> (i64, i64) {
    (
        x.iter().copied().min().unwrap_or(i64::MAX),
        x.iter().copied().max().unwrap_or(i64::MIN),
    )
}

#[guvectorize("(n)->(),(n)")]
fn normalize(x: ArrayView1<f64>, norm: &mut f64, mut unit: ArrayViewMut1<f64>) {
    *norm = x.dot(&x).sqrt();
    unit.assign(&x.mapv(|v| v / *norm));
}

#[guvectorize("(n)->()")]
fn sum_or_panic(x: ArrayViewD<i32>) -> i32 {
    assert!(x.len() < 5, "too long");
    x.sum()
}

fn naive_matmul(a: &ArrayD<f64>, b: &ArrayD<f64>) -> ArrayD<f64> {
    // np.matmul semantics, written with ndarray: promote 1-D, broadcast, multiply, demote.
    let a2 = if a.ndim() == 1 {
        a.clone().insert_axis(ndarray::Axis(0))
    } else {
        a.clone()
    };
    let b2 = if b.ndim() == 1 {
        b.clone().insert_axis(ndarray::Axis(1))
    } else {
        b.clone()
    };
    let (la, lb) = (&a2.shape()[..a2.ndim() - 2], &b2.shape()[..b2.ndim() - 2]);
    let lp = ufunc::broadcast_shapes(&[la, lb]).unwrap();
    let (m, n, p) = (
        a2.shape()[a2.ndim() - 2],
        a2.shape()[a2.ndim() - 1],
        b2.shape()[b2.ndim() - 1],
    );
    let mut full = lp.clone();
    full.extend([m, n]);
    let ab = a2.broadcast(IxDyn(&full)).unwrap().to_owned();
    full.truncate(lp.len());
    full.extend([n, p]);
    let bb = b2.broadcast(IxDyn(&full)).unwrap().to_owned();
    let mut out_shape = lp.clone();
    out_shape.extend([m, p]);
    let out = ArrayD::from_shape_fn(IxDyn(&out_shape), |idx| {
        let idx = idx.slice().to_vec();
        let (l, ij) = idx.split_at(lp.len());
        (0..n)
            .map(|k| {
                let mut ia = l.to_vec();
                ia.extend([ij[0], k]);
                let mut ib = l.to_vec();
                ib.extend([k, ij[1]]);
                ab[IxDyn(&ia)] * bb[IxDyn(&ib)]
            })
            .sum()
    });
    let mut out = out;
    if b.ndim() == 1 {
        let last = out.ndim() - 1;
        out = out.remove_axis(ndarray::Axis(last));
    }
    if a.ndim() == 1 {
        let m_axis = out.ndim() - if b.ndim() == 1 { 1 } else { 2 };
        out = out.remove_axis(ndarray::Axis(m_axis));
    }
    out
}

fn filled(shape: &[usize], seed: f64) -> ArrayD<f64> {
    let mut i = 0.0;
    ArrayD::from_shape_simple_fn(IxDyn(shape), || {
        i += 1.0;
        ((i * seed) % 7.0) - 3.0
    })
}

#[test]
fn matmul_batches_and_broadcasts_loop_dims() {
    let a = filled(&[1000, 2, 4], 1.3);
    let b = filled(&[1000, 4, 5], 0.7);
    let c = matmul(&a, &b).unwrap();
    assert_eq!(c.shape(), &[1000, 2, 5]);
    assert_eq!(c, naive_matmul(&a, &b));
    let a3 = filled(&[7, 1, 3, 4], 1.1);
    let b2 = filled(&[5, 4, 2], 2.3);
    let c = matmul::on(Target::Parallel, &a3, &b2).unwrap();
    assert_eq!(c.shape(), &[7, 5, 3, 2]);
    assert_eq!(c, naive_matmul(&a3, &b2));
}

#[test]
fn matmul_follows_np_matmul_for_1d_operands_and_empty_batches() {
    let cases: &[(&[usize], &[usize], &[usize])] = &[
        (&[3, 4], &[4], &[3]),
        (&[4], &[4, 5], &[5]),
        (&[4], &[4], &[]),
        (&[2, 3, 4], &[4], &[2, 3]),
        (&[4], &[6, 4, 5], &[6, 5]),
        (&[0, 3, 4], &[4, 5], &[0, 3, 5]),
        (&[3, 0], &[0, 2], &[3, 2]),
        (&[2, 1, 3, 4], &[5, 4, 2], &[2, 5, 3, 2]),
    ];
    for (sa, sb, want) in cases {
        let a = filled(sa, 1.7);
        let b = filled(sb, 0.3);
        let c = matmul(&a, &b).unwrap();
        assert_eq!(c.shape(), *want, "{sa:?} @ {sb:?}");
        assert_eq!(c, naive_matmul(&a, &b), "{sa:?} @ {sb:?}");
    }
}

#[test]
fn matmul_errors_name_operand_dimension_and_sizes() {
    let e = matmul(&Array2::<f64>::zeros((3, 4)), &Array2::<f64>::zeros((5, 2))).unwrap_err();
    assert_eq!(
        e.to_string(),
        "core dimension `n` has size 4 in `a` but 5 in `b`"
    );
    let e = matmul(
        &Array3::<f64>::zeros((3, 2, 4)),
        &Array3::<f64>::zeros((5, 4, 2)),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "loop dimensions could not be broadcast together: `a` (3,) `b` (5,)"
    );
    let e = matmul(&array![[1.0]], 2.0).unwrap_err();
    assert!(matches!(e, Error::CoreRank { operand: "b", .. }), "{e}");
}

#[test]
fn out_any_strides_and_wrong_shapes() {
    let a = filled(&[6, 2, 3], 1.9);
    let b = filled(&[3, 4], 0.9);
    let want = naive_matmul(&a, &b);
    // A transposed output buffer: (6,2,4) view with Fortran-like strides.
    let mut buf = Array::<f64, _>::zeros((4, 2, 6));
    let view = buf.view_mut().reversed_axes();
    matmul::out(&a, &b, view).unwrap();
    assert_eq!(buf.view().reversed_axes().into_dyn(), want);
    // Negative strides in inputs.
    let a_rev = a.slice(ndarray::s![..;-1, .., ..;-1]).to_owned();
    let b_rev = b.slice(ndarray::s![..;-1, ..]).to_owned();
    let c = matmul(
        &a_rev.slice(ndarray::s![..;-1, .., ..;-1]),
        &b_rev.slice(ndarray::s![..;-1, ..]),
    )
    .unwrap();
    assert_eq!(c, want);
    let mut wrong = Array3::<f64>::zeros((6, 2, 5));
    let e = matmul::out(&a, &b, &mut wrong).unwrap_err();
    assert_eq!(
        e.to_string(),
        "core dimension `p` has size 4 in `b` but 5 in `c`"
    );
    let mut wrong_loop = Array3::<f64>::zeros((5, 2, 4));
    let e = matmul::out(&a, &b, &mut wrong_loop).unwrap_err();
    assert!(matches!(e, Error::OutputShape { output: 0, .. }), "{e}");
}

#[test]
fn scalar_outputs_fixed_dims_and_scalar_inputs() {
    let a = Array2::from_shape_fn((3, 5), |(i, j)| (i * 5 + j) as f32);
    let d = dot(&a, &Array1::<f32>::ones(5)).unwrap();
    assert_eq!(d, array![10.0, 35.0, 60.0].into_dyn());
    let u = array![[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]];
    let w = cross(&u, &array![0.0, 1.0, 0.0]).unwrap();
    assert_eq!(w, array![[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]].into_dyn());
    let e = cross(&Array2::<f64>::zeros((2, 4)), &array![0.0, 1.0, 0.0]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::FixedCoreDim {
                operand: "u",
                expected: 3,
                found: 4
            }
        ),
        "{e}"
    );
}

#[test]
fn output_only_dims_come_from_out() {
    let x = array![[0.1, 0.2, 0.6, 0.9], [0.5, 0.5, 0.5, 0.99]];
    let e = histogram(&x, 1.0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "core dimension `k` of `counts` appears only in outputs: call `out` with an output array so that its size is known"
    );
    let mut counts = Array2::<u32>::zeros((2, 2));
    histogram::out(&x, 1.0, &mut counts).unwrap();
    assert_eq!(counts, array![[2, 2], [0, 4]]);
    // Per-row scalars broadcast as a loop operand.
    let mut counts = Array2::<u32>::zeros((2, 4));
    histogram::out(&x, &array![1.0, 2.0], &mut counts).unwrap();
    assert_eq!(counts, array![[2, 0, 1, 1], [0, 4, 0, 0]]);
}

#[test]
fn several_outputs_returned_and_by_reference() {
    let x = array![[3i64, -1, 7], [0, 0, 0]];
    let (lo, hi) = min_max(&x).unwrap();
    assert_eq!(lo, array![-1, 0].into_dyn());
    assert_eq!(hi, array![7, 0].into_dyn());
    let v = array![[3.0, 4.0], [0.0, 2.0]];
    let (norm, unit) = normalize(&v).unwrap();
    assert_eq!(norm, array![5.0, 2.0].into_dyn());
    assert_eq!(unit, array![[0.6, 0.8], [0.0, 1.0]].into_dyn());
}

#[test]
fn zero_size_loop_and_core_dims() {
    let (lo, hi) = min_max(&Array2::<i64>::zeros((3, 0))).unwrap();
    assert_eq!(lo, Array1::from_elem(3, i64::MAX).into_dyn());
    assert_eq!(hi, Array1::from_elem(3, i64::MIN).into_dyn());
    let (lo, _) = min_max(&Array2::<i64>::zeros((0, 4))).unwrap();
    assert_eq!(lo.shape(), &[0]);
    let d = dot(&Array2::<f32>::zeros((2, 0)), &Array1::<f32>::zeros(0)).unwrap();
    assert_eq!(d, array![0.0, 0.0].into_dyn());
}

#[test]
fn a_panicking_core_is_an_error() {
    let x = Array2::<i32>::ones((100, 6));
    let e = sum_or_panic(&x).unwrap_err();
    assert!(
        matches!(&e, Error::KernelPanic { function: "sum_or_panic", message } if message == "too long"),
        "{e}"
    );
    assert_eq!(
        sum_or_panic(&Array2::<i32>::ones((2, 3))).unwrap(),
        array![3, 3].into_dyn()
    );
}

#[test]
fn cpu_and_parallel_agree_on_many_small_items() {
    let a = filled(&[5000, 4, 4], 1.37);
    let b = filled(&[5000, 4, 4], 0.77);
    let cpu = matmul::on(Target::Cpu, &a, &b).unwrap();
    let par = matmul::on(Target::Parallel, &a, &b).unwrap();
    assert_eq!(cpu, par);
}

#[test]
fn vectorize_and_guvectorize_companions_agree() {
    let a = Array2::from_shape_fn((3, 4), |(i, j)| i as f64 - 0.5 * j as f64);
    let b = array![1.0, -2.0, 0.5, 3.0];
    assert_eq!(fma_ufunc::TARGETS, fma_gufunc::TARGETS);
    assert_eq!(fma_ufunc::DEFAULT_TARGET, fma_gufunc::DEFAULT_TARGET);
    let (x, y) = fma_ufunc(&a, &b, 2.0).unwrap();
    let want = (x.into_dyn(), y.into_dyn());
    assert_eq!(fma_gufunc(&a, &b, 2.0).unwrap(), want);
    for target in [Target::Cpu, Target::Parallel] {
        let (x, y) = fma_ufunc::on(target, &a, &b, 2.0).unwrap();
        assert_eq!((x.into_dyn(), y.into_dyn()), want);
        assert_eq!(fma_gufunc::on(target, &a, &b, 2.0).unwrap(), want);
    }
    let (mut x1, mut y1) = (Array2::zeros((3, 4)), Array2::from_elem((3, 4), false));
    let (mut x2, mut y2) = (x1.clone(), y1.clone());
    fma_ufunc::out(&a, &b, 2.0, &mut x1, &mut y1).unwrap();
    fma_gufunc::out(&a, &b, 2.0, &mut x2, &mut y2).unwrap();
    assert_eq!((&x1, &y1), (&x2, &y2));
    assert_eq!((x1.into_dyn(), y1.into_dyn()), want);
    fma_ufunc::out_on(Target::Parallel, &a, 1.0, &b, x2.view_mut(), &mut y2).unwrap();
    let (x3, y3) = fma_gufunc::on(Target::Cpu, &a, 1.0, &b).unwrap();
    assert_eq!((x2.into_dyn(), y2.into_dyn()), (x3, y3));
    // The same errors: a target not compiled, an output of the wrong shape.
    let e1 = fma_ufunc::on(Target::Cuda, &a, &b, 2.0).unwrap_err();
    let e2 = fma_gufunc::on(Target::Cuda, &a, &b, 2.0).unwrap_err();
    assert!(matches!(e1, Error::TargetNotCompiled { .. }), "{e1}");
    assert_eq!(e1.to_string().replace("ufunc", "gufunc"), e2.to_string());
    let (mut x, mut y) = (Array2::zeros((4, 3)), Array2::from_elem((4, 3), false));
    let e1 = fma_ufunc::out(&a, &b, 2.0, &mut x, &mut y).unwrap_err();
    let e2 = fma_gufunc::out(&a, &b, 2.0, &mut x, &mut y).unwrap_err();
    assert!(matches!(e1, Error::OutputShape { output: 0, .. }), "{e1}");
    assert!(matches!(e2, Error::OutputShape { output: 0, .. }), "{e2}");
}

/// Numba's in-place gufunc (issue 13 item 5), `@guvectorize([...], "(n),()")` over
/// `def f(a, b): for i in range(a.shape[0]): a[i] += b`: a layout without `->` passes every
/// operand in, and the core writes into `a`. In Rust the written operand is an `ArrayViewMut`
/// parameter and the call takes it as `&mut`.
#[guvectorize("(n),()", targets = ["cpu", "parallel"])]
fn add_in_place(mut a: ArrayViewMut1<f64>, b: f64) {
    for i in 0..a.len() {
        a[i] += b;
    }
}

/// A `()` operand written in place through `&mut`, after a read one: it keeps its value.
#[guvectorize("(n),()", targets = ["cpu", "parallel"])]
fn accumulate_into(x: ArrayView1<i64>, total: &mut i64) {
    for v in x.iter() {
        *total += v;
    }
}

#[test]
fn in_place_layouts_write_into_their_operands() {
    for target in [Target::Cpu, Target::Parallel] {
        let mut a = Array2::from_shape_fn((3, 4), |(i, j)| (i * 10 + j) as f64);
        let expected = &a + &array![[0.5], [1.5], [2.5]];
        // b broadcasts over the loop dimension of `a`; the result is `a` itself.
        add_in_place::on(target, &mut a, &array![0.5, 1.5, 2.5]).unwrap();
        assert_eq!(a, expected, "{target:?}");
        add_in_place::on(target, a.view_mut(), -0.5).unwrap();
        assert_eq!(a, expected - 0.5, "{target:?}");
        // Strided views of the written operand.
        let mut t = Array2::<f64>::zeros((4, 3));
        add_in_place::on(target, t.view_mut().reversed_axes(), 2.0).unwrap();
        assert!(t.iter().all(|&v| v == 2.0), "{target:?}");

        let mut totals = array![100i64, 200];
        accumulate_into::on(target, &array![[1i64, 2, 3], [4, 5, 6]], &mut totals).unwrap();
        assert_eq!(totals, array![106, 215], "{target:?}");
    }
    let mut a = array![1.0, 2.0];
    add_in_place(&mut a, 1.0).unwrap();
    assert_eq!(a, array![2.0, 3.0]);
    assert_eq!(add_in_place::LAYOUT, "(n),()");
}

#[test]
fn in_place_operands_are_never_broadcast() {
    // `b` has loop shape (3,), `a` none: writing would broadcast `a`.
    let mut a = array![1.0, 2.0];
    let e = add_in_place(&mut a, &array![1.0, 2.0, 3.0]).unwrap_err();
    assert!(
        matches!(e, Error::InPlaceBroadcast { operand: "a", .. }),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "`a` is written in place, so it cannot be broadcast: its shape is (2,) but the loop \
         shape of the operands is (3,)"
    );
    assert_eq!(a, array![1.0, 2.0], "nothing was written");
    // A written operand of length-1 loop dimensions is not stretched either.
    let mut one = Array2::<f64>::zeros((1, 2));
    let e = add_in_place(&mut one, &array![1.0, 2.0]).unwrap_err();
    assert!(matches!(e, Error::InPlaceBroadcast { .. }), "{e:?}");
    // The written `()` operand with more loop dimensions than `x` sets the loop shape.
    let mut totals = array![[0i64, 10]];
    accumulate_into(&array![1i64, 2], &mut totals).unwrap();
    assert_eq!(totals, array![[3, 13]]);
}
