//! Property tests of gufunc loop broadcasting against a naive reference: random loop shapes
//! (zero-size included) broadcast against each other, core sizes, and operand layouts
//! (reversed and stepped axes, Fortran order), on both CPU targets.

use ndarray::{s, ArrayD, ArrayViewD, Axis, Dimension, IxDyn, ShapeBuilder, Slice};
use proptest::prelude::*;
use ufunc::prelude::*;

/// Matrix-vector product: `(m,n),(n)->(m)`.
#[guvectorize("(m,n),(n)->(m)", targets = ["cpu", "parallel"])]
fn matvec(a: ArrayView2<f64>, x: ArrayView1<f64>, mut y: ArrayViewMut1<f64>) {
    for (yi, row) in y.iter_mut().zip(a.rows()) {
        *yi = row.iter().zip(x.iter()).map(|(p, q)| p * q).sum();
    }
}

/// A buffer for an operand of `shape`: Fortran or C order, its last axis `step` times longer
/// so that the operand can be a stepped view of it; filled from `seed`.
fn buffer(shape: &[usize], fortran: bool, step: usize, seed: f64) -> ArrayD<f64> {
    let mut physical = shape.to_vec();
    if let Some(last) = physical.last_mut() {
        *last *= step;
    }
    let mut base = ArrayD::<f64>::zeros(IxDyn(&physical).set_f(fortran));
    let mut i = 0.0;
    base.map_inplace(|v| {
        i += 1.0;
        *v = ((i * seed) % 11.0) - 5.0;
    });
    base
}

/// The operand: every `step`-th element of the last axis, the first axis reversed if asked.
fn strided(base: &ArrayD<f64>, step: usize, reverse: bool) -> ArrayViewD<'_, f64> {
    let nd = base.ndim();
    let mut v = base.slice_each_axis(|ax| {
        let st = if ax.axis.index() + 1 == nd {
            step as isize
        } else {
            1
        };
        Slice::new(0, None, st)
    });
    if reverse && nd > 0 {
        v.invert_axis(Axis(0));
    }
    v
}

fn reference(a: &ArrayViewD<f64>, x: &ArrayViewD<f64>) -> ArrayD<f64> {
    let (la, lx) = (&a.shape()[..a.ndim() - 2], &x.shape()[..x.ndim() - 1]);
    let loop_shape = ufunc::broadcast_shapes(&[la, lx]).unwrap();
    let m = a.shape()[a.ndim() - 2];
    let mut full_a = loop_shape.clone();
    full_a.extend_from_slice(&a.shape()[a.ndim() - 2..]);
    let mut full_x = loop_shape.clone();
    full_x.push(x.shape()[x.ndim() - 1]);
    let ab = a.broadcast(IxDyn(&full_a)).unwrap();
    let xb = x.broadcast(IxDyn(&full_x)).unwrap();
    let mut out_shape = loop_shape.clone();
    out_shape.push(m);
    ArrayD::from_shape_fn(IxDyn(&out_shape), |idx| {
        let idx = idx.slice();
        let (l, i) = idx.split_at(loop_shape.len());
        let mut ia = l.to_vec();
        ia.push(i[0]);
        let row = ab.slice_each_axis(|ax| {
            if ax.axis.index() < ia.len() {
                Slice::from(ia[ax.axis.index()]..ia[ax.axis.index()] + 1)
            } else {
                Slice::new(0, None, 1)
            }
        });
        let xs = xb.slice_each_axis(|ax| {
            if ax.axis.index() < l.len() {
                Slice::from(l[ax.axis.index()]..l[ax.axis.index()] + 1)
            } else {
                Slice::new(0, None, 1)
            }
        });
        row.iter().zip(xs.iter()).map(|(p, q)| p * q).sum()
    })
}

fn loop_shapes() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    proptest::collection::vec(
        prop_oneof![Just(0usize), Just(1), Just(2), Just(3), Just(5)],
        0..=3,
    )
    .prop_flat_map(|full| {
        let n = full.len();
        (
            Just(full),
            proptest::collection::vec(any::<bool>(), n),
            proptest::collection::vec(any::<bool>(), n),
            0..=n,
        )
    })
    .prop_map(|(full, ones_a, ones_x, drop_x)| {
        let a: Vec<usize> = full
            .iter()
            .zip(&ones_a)
            .map(|(&d, &o)| if o { 1 } else { d })
            .collect();
        let x: Vec<usize> = full
            .iter()
            .zip(&ones_x)
            .map(|(&d, &o)| if o { 1 } else { d })
            .collect();
        (a, x[drop_x..].to_vec())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn matvec_matches_reference(
        (la, lx) in loop_shapes(),
        m in 0usize..4,
        n in 0usize..5,
        fortran in any::<bool>(),
        reverse in any::<bool>(),
        step in 1usize..3,
    ) {
        let mut sa = la.clone();
        sa.extend([m, n]);
        let mut sx = lx.clone();
        sx.push(n);
        let a = buffer(&sa, fortran, step, 1.37);
        let x = buffer(&sx, !fortran, 1, 0.71);
        let (av, xv) = (strided(&a, step, reverse), strided(&x, 1, false));
        prop_assert_eq!(av.shape(), sa.as_slice());
        let want = reference(&av, &xv);
        for target in [Target::Cpu, Target::Parallel] {
            let got = matvec::on(target, &av, &xv).unwrap();
            prop_assert_eq!(&got, &want);
        }
        // Into a reversed output view.
        let mut out = ArrayD::<f64>::from_elem(IxDyn(want.shape()), f64::NAN);
        let mut ov = out.view_mut();
        if ov.ndim() > 0 {
            ov.invert_axis(Axis(ov.ndim() - 1));
        }
        matvec::out(&av, &xv, ov).unwrap();
        let mut back = out.view();
        if back.ndim() > 0 {
            back.invert_axis(Axis(back.ndim() - 1));
        }
        prop_assert_eq!(&back.to_owned(), &want);
    }
}

#[test]
fn zero_size_core_and_stepped_views() {
    let a = ArrayD::<f64>::zeros(IxDyn(&[2, 3, 0]));
    let x = ArrayD::<f64>::zeros(IxDyn(&[0]));
    assert_eq!(
        matvec(&a, &x).unwrap(),
        ArrayD::<f64>::zeros(IxDyn(&[2, 3]))
    );
    let big = ArrayD::from_shape_fn(IxDyn(&[4, 6]), |i| (i[0] * 6 + i[1]) as f64);
    let v = big.slice(s![.., ..;2]).into_dyn();
    let x = ArrayD::from_elem(IxDyn(&[3]), 1.0);
    let y = matvec(&v, &x).unwrap();
    assert_eq!(y.as_slice().unwrap(), &[6.0, 24.0, 42.0, 60.0]);
}
