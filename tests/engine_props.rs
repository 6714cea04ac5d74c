//! Property tests of the loop engine against a naive reference: random shapes (zero-size and
//! lengths around the SIMD width included), broadcasting, and operand layouts (slices with
//! steps, negative strides, permuted axes, stride-0 broadcast views), for inputs and outputs.

use ndarray::{Array, ArrayD, ArrayViewD, Dimension, IxDyn, ShapeBuilder, Slice};
use proptest::prelude::*;
use ufunc::prelude::*;

#[vectorize(targets = ["cpu", "parallel"])]
fn fms(a: f64, b: f64, c: f64) -> f64 {
    a * b - c
}

#[vectorize(targets = ["cpu", "parallel"])]
fn mix_i32(a: i32, b: i32) -> (i32, bool) {
    (a.wrapping_mul(3).wrapping_sub(b), a > b)
}

/// How one operand is laid out in memory.
#[derive(Debug, Clone)]
struct Layout {
    /// Keep only this many trailing axes of the broadcast shape.
    keep: usize,
    /// Axes set to length 1 (broadcast).
    ones: Vec<bool>,
    /// Step of the slice taken along each axis (negative reverses).
    steps: Vec<isize>,
    /// Reverse the memory order of axes (Fortran-like).
    fortran: bool,
    /// Use `broadcast()` views (stride 0) instead of length-1 axes.
    broadcast_view: bool,
}

fn lengths() -> impl Strategy<Value = usize> {
    prop_oneof![
        0usize..=4,
        Just(7),
        Just(8),
        Just(9),
        Just(15),
        Just(16),
        Just(17),
        Just(33)
    ]
}

fn layout(ndim: usize) -> impl Strategy<Value = Layout> {
    (
        0..=ndim,
        proptest::collection::vec(proptest::bool::weighted(0.3), ndim),
        proptest::collection::vec(prop_oneof![Just(1isize), Just(2), Just(-1), Just(-3)], ndim),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(keep, ones, steps, fortran, broadcast_view)| Layout {
            keep,
            ones,
            steps,
            fortran,
            broadcast_view,
        })
}

fn case() -> impl Strategy<Value = (Vec<usize>, Vec<Layout>)> {
    proptest::collection::vec(lengths(), 0..=4)
        .prop_filter("keep cases small", |s| s.iter().product::<usize>() <= 4096)
        .prop_flat_map(|shape| {
            let n = shape.len();
            (Just(shape), proptest::collection::vec(layout(n), 4))
        })
}

/// An operand's memory: a buffer whose step-sliced view has the logical shape.
struct Strided {
    base: ArrayD<f64>,
    steps: Vec<isize>,
}

impl Strided {
    fn view(&self) -> ArrayViewD<'_, f64> {
        self.base
            .slice_each_axis(|ax| Slice::new(0, None, self.steps[ax.axis.index()]))
    }
}

/// Builds an operand whose logical shape follows `layout` against `shape`, with values derived
/// from `seed` and the logical index, in the memory layout the strategy asked for.
fn operand(shape: &[usize], l: &Layout, seed: i64) -> Strided {
    let ndim = shape.len();
    let logical: Vec<usize> = (ndim - l.keep..ndim)
        .map(|a| if l.ones[a] { 1 } else { shape[a] })
        .collect();
    let steps: Vec<isize> = l.steps[ndim - l.keep..].to_vec();
    let physical: Vec<usize> = logical
        .iter()
        .zip(&steps)
        .map(|(&n, &s)| n * s.unsigned_abs())
        .collect();
    let mut base = ArrayD::from_elem(IxDyn(&physical).set_f(l.fortran), f64::NAN);
    let mut v = base.slice_each_axis_mut(|ax| Slice::new(0, None, steps[ax.axis.index()]));
    for (idx, x) in v.indexed_iter_mut() {
        let lin = idx.slice().iter().fold(seed, |acc, &i| {
            acc.wrapping_mul(31).wrapping_add(i as i64 + 1)
        });
        *x = (lin % 1000) as f64 * 0.25 - 100.0;
    }
    Strided { base, steps }
}

fn reference(shape: &[usize], ops: &[ArrayViewD<'_, f64>]) -> ArrayD<f64> {
    let b: Vec<ArrayViewD<'_, f64>> = ops.iter().map(|o| o.broadcast(shape).unwrap()).collect();
    ArrayD::from_shape_fn(IxDyn(shape), |i| fms::scalar(b[0][&i], b[1][&i], b[2][&i]))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn matches_naive_reference((shape, layouts) in case()) {
        let ops: Vec<Strided> = layouts[..3]
            .iter()
            .enumerate()
            .map(|(k, l)| operand(&shape, l, k as i64 + 1))
            .collect();
        let views: Vec<ArrayViewD<f64>> = ops.iter().map(Strided::view).collect();
        // The operands' own broadcast shape (smaller than `shape` when every operand dropped
        // or shrank an axis).
        let shapes: Vec<&[usize]> = views.iter().map(|v| v.shape()).collect();
        let shape = ufunc::broadcast_shapes(&shapes).unwrap();
        let bviews: Vec<ArrayViewD<f64>> = views
            .iter()
            .zip(&layouts)
            .map(|(v, l)| if l.broadcast_view && v.ndim() < shape.len() {
                v.broadcast(IxDyn(&shape)).unwrap()
            } else {
                v.view()
            })
            .collect();
        let want = reference(&shape, &views);
        for target in [Target::Cpu, Target::Parallel] {
            let got = fms::on(target, &bviews[0], &bviews[1], &bviews[2]).unwrap();
            prop_assert_eq!(got.shape(), want.shape());
            prop_assert_eq!(&got, &want);
            prop_assert!(got.is_standard_layout());
        }
        // Into an output with the fourth layout's memory order and steps (never broadcast).
        let l = &layouts[3];
        let steps: Vec<isize> = l.steps[l.steps.len() - shape.len()..].to_vec();
        let physical: Vec<usize> = shape.iter().zip(&steps).map(|(&n, &s)| n * s.unsigned_abs()).collect();
        let mut buf = ArrayD::<f64>::from_elem(IxDyn(&physical).set_f(l.fortran), f64::NAN);
        let mut out = buf.slice_each_axis_mut(|ax| Slice::new(0, None, steps[ax.axis.index()]));
        fms::out_on(Target::Parallel, &bviews[0], &bviews[1], &bviews[2], out.view_mut()).unwrap();
        prop_assert_eq!(&out.to_owned(), &want);
    }

    #[test]
    fn integer_tuple_outputs_match_reference(shape in proptest::collection::vec(lengths(), 0..=3), seed in any::<i32>()) {
        let a = ArrayD::from_shape_fn(IxDyn(&shape), |i| seed.wrapping_add(i.slice().iter().sum::<usize>() as i32 * 7919));
        let b = a.t().to_owned().reversed_axes();
        let b = b.mapv(|x| x.rotate_left(3));
        let (x, y) = mix_i32(&a.t(), &b.t()).unwrap();
        let want = ndarray::Zip::from(&a.t()).and(&b.t()).map_collect(|&p, &q| mix_i32::scalar(p, q));
        prop_assert_eq!(x, want.mapv(|w| w.0));
        prop_assert_eq!(y, want.mapv(|w| w.1));
    }
}

#[test]
fn zero_size_and_zero_dim() {
    let empty = ArrayD::<f64>::zeros(IxDyn(&[3, 0, 2]));
    let r = fms(&empty, 1.0, 2.0).unwrap();
    assert_eq!(r.shape(), &[3, 0, 2]);
    let zero_d = ArrayD::<f64>::from_elem(IxDyn(&[]), 3.0);
    let r = fms(&zero_d, &zero_d, 1.0).unwrap();
    assert_eq!(r.shape(), &[] as &[usize]);
    assert_eq!(r[IxDyn(&[])], 8.0);
    // (0,) with (1,) broadcasts to (0,); (0,) with (3,) does not.
    assert_eq!(
        fms(&Array::<f64, _>::zeros(0), &Array::from_elem(1, 1.0), 0.0)
            .unwrap()
            .len(),
        0
    );
    assert!(fms(&Array::<f64, _>::zeros(0), &Array::<f64, _>::zeros(3), 0.0).is_err());
}
