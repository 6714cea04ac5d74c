//! The ufunc methods `reduce`, `accumulate`, `outer` and `at` of `#[vectorize]` functions
//! `f(T, T) -> T`, against naive references: random shapes, axis sets and layouts (steps,
//! negative strides, permuted axes, broadcast views), empty and length-1 axes, NaN propagation,
//! integer wrapping, float-sum accuracy, and `parallel` against `cpu`.

use ndarray::{array, s, Array, Array1, ArrayD, ArrayViewD, Axis, IxDyn, ShapeBuilder, Slice};
use proptest::prelude::*;
use ufunc::prelude::*;
use ufunc::Axes;

mod common;
use common::Lcg;

#[vectorize(targets = ["cpu", "parallel"], identity = 0.0)]
fn add_f32(a: f32, b: f32) -> f32 {
    a + b
}

#[vectorize(targets = ["cpu", "parallel"], identity = 0.0)]
fn add_f64(a: f64, b: f64) -> f64 {
    a + b
}

#[vectorize(targets = ["cpu", "parallel"], identity = 0)]
fn add_i32(a: i32, b: i32) -> i32 {
    a.wrapping_add(b)
}

#[vectorize(targets = ["cpu", "parallel"], identity = 0)]
fn add_i64(a: i64, b: i64) -> i64 {
    a.wrapping_add(b)
}

#[vectorize(targets = ["cpu", "parallel"], identity = 1)]
fn mul_i64(a: i64, b: i64) -> i64 {
    a.wrapping_mul(b)
}

/// NumPy's `maximum`: NaN propagates. No identity, but reorderable, as NumPy's.
#[vectorize(targets = ["cpu", "parallel"], associative = true)]
fn maximum(a: f64, b: f64) -> f64 {
    if a > b || a.is_nan() {
        a
    } else {
        b
    }
}

/// NumPy's `fmax`: NaN is ignored when the other is a number.
#[vectorize(targets = ["cpu", "parallel"], identity = f64::NAN)]
fn fmax(a: f64, b: f64) -> f64 {
    a.max(b)
}

#[vectorize(targets = ["cpu", "parallel"], types = [f64, i64], identity = 0 as T)]
fn add_generic<T>(a: T, b: T) -> T {
    a + b
}

/// Declared associative: `accumulate` runs as a blocked (and on `parallel`, split) scan.
#[vectorize(targets = ["cpu", "parallel"], identity = 0, associative = true)]
fn add_i64_assoc(a: i64, b: i64) -> i64 {
    a.wrapping_add(b)
}

/// 4-byte elements: the scan's vector tiles (on x86-64 with AVX2).
#[vectorize(targets = ["cpu", "parallel"], identity = 0, associative = true)]
fn add_i32_assoc(a: i32, b: i32) -> i32 {
    a.wrapping_add(b)
}

#[vectorize(targets = ["cpu", "parallel"], identity = 0.0, associative = true)]
fn add_f32_assoc(a: f32, b: f32) -> f32 {
    a + b
}

#[vectorize(targets = ["cpu", "parallel"], identity = 0.0, associative = true)]
fn add_f64_assoc(a: f64, b: f64) -> f64 {
    a + b
}

/// Associative but not commutative: the affine map `x -> a x + b` modulo 2^16 (`a` in the
/// low half, `b` in the high half) of `p`, then that of `q`. `associative = true` also promises
/// commutativity (the split scan's totals are reduced as `reduce` does), but the scan kernels
/// themselves keep every pair in order, which one thread shows.
#[vectorize(targets = ["cpu", "parallel"], associative = true)]
fn then_affine(p: u32, q: u32) -> u32 {
    let a = (p & 0xFFFF).wrapping_mul(q & 0xFFFF) & 0xFFFF;
    let b = (q & 0xFFFF).wrapping_mul(p >> 16).wrapping_add(q >> 16) & 0xFFFF;
    a | (b << 16)
}

/// [`then_affine`] modulo 2^32, in 8-byte elements.
#[vectorize(targets = ["cpu", "parallel"], associative = true)]
fn then_affine64(p: u64, q: u64) -> u64 {
    let a = (p & 0xFFFF_FFFF).wrapping_mul(q & 0xFFFF_FFFF) & 0xFFFF_FFFF;
    let b = (q & 0xFFFF_FFFF)
        .wrapping_mul(p >> 32)
        .wrapping_add(q >> 32)
        & 0xFFFF_FFFF;
    a | (b << 32)
}

/// A recurrence (an exponential moving sum), not associative: `accumulate` must apply it
/// strictly in order, as NumPy does.
#[vectorize(targets = ["cpu", "parallel"])]
fn decay(acc: f64, x: f64) -> f64 {
    0.5 * acc + x
}

/// `a - b`: not associative, so that `outer` and `at` show the order of their operands.
#[vectorize(targets = ["cpu", "parallel"])]
fn sub_i64(a: i64, b: i64) -> i64 {
    a.wrapping_sub(b)
}

/// `3a + b`, wrapping: applied twice at one place, the order of the two `b`s shows (`a - b`
/// would not show it).
#[vectorize(targets = ["cpu", "parallel"])]
fn shift_in(a: i64, b: i64) -> i64 {
    a.wrapping_mul(3).wrapping_add(b)
}

/// `shift_in` of scalars, for the naive loops.
fn shift(a: i64, b: i64) -> i64 {
    a.wrapping_mul(3).wrapping_add(b)
}

/// The naive reduction: every element folded in C order into its output element; `None`
/// (NumPy's error) where a reduced axis is empty and there is no identity, even when the
/// result is empty too.
fn naive<T: Copy>(
    a: &ArrayViewD<'_, T>,
    axes: &[usize],
    identity: Option<T>,
    f: impl Fn(T, T) -> T,
) -> Option<ArrayD<T>> {
    if identity.is_none() && axes.iter().any(|&i| a.shape()[i] == 0) {
        return None;
    }
    let shape: Vec<usize> = (0..a.ndim())
        .filter(|i| !axes.contains(i))
        .map(|i| a.shape()[i])
        .collect();
    let mut acc: ArrayD<Option<T>> = ArrayD::from_elem(IxDyn(&shape), None);
    for (idx, &v) in a.indexed_iter() {
        let o: Vec<usize> = (0..a.ndim())
            .filter(|i| !axes.contains(i))
            .map(|i| idx[i])
            .collect();
        let slot = &mut acc[IxDyn(&o)];
        *slot = Some(slot.map_or(v, |s| f(s, v)));
    }
    let mut out = Vec::new();
    for s in acc.iter() {
        out.push(s.or(identity)?);
    }
    Some(ArrayD::from_shape_vec(IxDyn(&shape), out).unwrap())
}

/// A view of `data` with the given layout: axes permuted by `perm`, each sliced with a step.
fn view<'a, T>(data: &'a ArrayD<T>, perm: &[usize], steps: &[isize]) -> ArrayViewD<'a, T> {
    let mut v = data.view().permuted_axes(IxDyn(perm));
    // A negative step takes every element from the end.
    for (ax, &s) in steps.iter().enumerate() {
        v.slice_axis_inplace(Axis(ax), Slice::new(0, None, s));
    }
    v
}

#[derive(Debug, Clone)]
struct Case {
    shape: Vec<usize>,
    perm: Vec<usize>,
    steps: Vec<isize>,
    axes: Vec<usize>,
    negative: bool,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (0usize..=4)
        .prop_flat_map(|nd| {
            (
                proptest::collection::vec(prop_oneof![0usize..=3, Just(1), 5usize..=40], nd),
                Just((0..nd).collect::<Vec<_>>()).prop_shuffle(),
                proptest::collection::vec(
                    prop_oneof![Just(1isize), Just(1), Just(2), Just(-1)],
                    nd,
                ),
                proptest::collection::vec(any::<bool>(), nd),
                any::<bool>(),
                any::<u64>(),
            )
        })
        .prop_map(|(shape, perm, steps, pick, negative, seed)| Case {
            axes: (0..shape.len()).filter(|&i| pick[i]).collect(),
            shape,
            perm,
            steps,
            negative,
            seed,
        })
}

fn data_i64(case: &Case) -> ArrayD<i64> {
    // The underlying array before slicing: each stepped axis twice as long.
    let full: Vec<usize> = case
        .shape
        .iter()
        .zip(&case.steps)
        .map(|(&n, &s)| n * s.unsigned_abs())
        .collect();
    let mut state = case.seed | 1;
    let n: usize = full.iter().product();
    let v: Vec<i64> = (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state as i64) >> (state % 60)
        })
        .collect();
    // Fortran order: permuting and slicing the view then gives every kind of layout.
    ArrayD::from_shape_vec(IxDyn(&full).f(), v).unwrap()
}

fn axes_arg(case: &Case) -> Axes {
    let nd = case.shape.len() as isize;
    Axes::List(
        case.axes
            .iter()
            .map(|&a| {
                if case.negative {
                    a as isize - nd
                } else {
                    a as isize
                }
            })
            .collect(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Exact operations (wrapping integers, max) match the naive reference bit for bit on
    /// `cpu` and on `parallel`, for any layout and axis set.
    #[test]
    fn reduce_matches_the_naive_reference(case in case()) {
        let data = data_i64(&case);
        let a = view(&data, &(0..case.shape.len()).collect::<Vec<_>>(), &case.steps);
        let a = a.permuted_axes(IxDyn(&case.perm));
        let axes = axes_arg(&case);
        let expect = naive(&a, &case.axes, Some(0), i64::wrapping_add);
        for target in [Target::Cpu, Target::Parallel] {
            let got = add_i64::reduce_on(target, &a, axes.clone()).unwrap();
            prop_assert_eq!(Some(&got), expect.as_ref());
        }
        let expect = naive(&a, &case.axes, Some(1), i64::wrapping_mul);
        prop_assert_eq!(Some(mul_i64::reduce(&a, axes.clone()).unwrap()), expect);
        let af = a.mapv(|x| (x % 1000) as f64);
        let expect = naive(&af.view(), &case.axes, None, f64::max);
        let got = maximum::reduce(&af, axes.clone());
        match expect {
            Some(e) => prop_assert_eq!(got.unwrap(), e),
            None => {
                let empty = matches!(got, Err(Error::EmptyReduction { .. }));
                prop_assert!(empty);
            }
        }
        // keepdims: the same values with the reduced axes as length 1.
        let kept = add_i64::reduce_keepdims(&a, axes.clone()).unwrap();
        let plain = add_i64::reduce(&a, axes.clone()).unwrap();
        let expect_shape: Vec<usize> = (0..a.ndim())
            .map(|i| if case.axes.contains(&i) { 1 } else { a.shape()[i] })
            .collect();
        prop_assert_eq!(kept.shape(), &expect_shape[..]);
        prop_assert_eq!(kept.iter().collect::<Vec<_>>(), plain.iter().collect::<Vec<_>>());
        prop_assert_eq!(&add_i64::reduce_keepdims_on(Target::Parallel, &a, axes.clone()).unwrap(), &kept);
        // out, into a transposed (strided) output of the plain shape.
        let mut out = ArrayD::<i64>::zeros(IxDyn(&plain.shape().iter().rev().copied().collect::<Vec<_>>()));
        let mut out_t = out.view_mut().reversed_axes();
        add_i64::reduce_out(&a, axes.clone(), &mut out_t).unwrap();
        prop_assert_eq!(&out_t, &plain.view());
        add_i64::reduce_out_on(Target::Parallel, &a, axes.clone(), &mut out_t).unwrap();
        prop_assert_eq!(out_t, plain.view());
        // Float sums within rounding of the exact (integer) sum.
        let got = add_f64::reduce_on(Target::Parallel, &af, axes.clone()).unwrap();
        let exact = naive(&af.view(), &case.axes, Some(0.0), |x, y| x + y).unwrap();
        prop_assert_eq!(got, exact, "small integers sum exactly in f64");
    }

    /// `accumulate` along every axis of any layout matches the running fold.
    #[test]
    fn accumulate_matches_the_running_fold(case in case()) {
        prop_assume!(!case.shape.is_empty());
        let data = data_i64(&case);
        let a = view(&data, &(0..case.shape.len()).collect::<Vec<_>>(), &case.steps);
        let a = a.permuted_axes(IxDyn(&case.perm));
        for axis in 0..a.ndim() {
            let mut expect = a.to_owned();
            for mut lane in expect.lanes_mut(Axis(axis)) {
                for i in 1..lane.len() {
                    lane[i] = lane[i - 1].wrapping_add(lane[i]);
                }
            }
            for target in [Target::Cpu, Target::Parallel] {
                let got = add_i64::accumulate_on(target, &a, axis as isize - a.ndim() as isize).unwrap();
                prop_assert_eq!(&got, &expect);
            }
        }
    }

    /// A function that is not reorderable (no identity, not associative) is folded in order
    /// along its one reduced axis, as NumPy does: bit for bit the naive fold and the last
    /// element of `accumulate`; several axes are NumPy's error, naming them.
    #[test]
    fn a_function_not_reorderable_reduces_one_axis_in_order(case in case()) {
        let data = data_i64(&case);
        let a = view(&data, &(0..case.shape.len()).collect::<Vec<_>>(), &case.steps);
        let a = a.permuted_axes(IxDyn(&case.perm));
        let af = a.mapv(|x| (x % 1000) as f64 / 7.0);
        let axes = axes_arg(&case);
        for target in [Target::Cpu, Target::Parallel] {
            let got = decay::reduce_on(target, &af, axes.clone());
            let sub = sub_i64::reduce_on(target, &a, axes.clone());
            if case.axes.len() > 1 {
                for e in [got.unwrap_err(), sub.unwrap_err()] {
                    let refused = matches!(&e, Error::NotReorderable { axes, .. } if *axes == case.axes);
                    prop_assert!(refused, "{}", e);
                }
                continue;
            }
            match naive(&af.view(), &case.axes, None, decay::scalar) {
                Some(want) => {
                    let got = got.unwrap();
                    prop_assert_eq!(got.mapv(f64::to_bits), want.mapv(f64::to_bits));
                    if let [axis] = case.axes[..] {
                        if af.len_of(Axis(axis)) > 0 {
                            let running = decay::accumulate_on(target, &af, axis as isize).unwrap();
                            let last = running.index_axis(Axis(axis), af.len_of(Axis(axis)) - 1);
                            prop_assert_eq!(got.mapv(f64::to_bits), last.mapv(f64::to_bits).into_dyn());
                        }
                    }
                }
                None => {
                    let empty = matches!(got, Err(Error::EmptyReduction { .. }));
                    prop_assert!(empty);
                }
            }
            let want = naive(&a, &case.axes, None, i64::wrapping_sub);
            prop_assert_eq!(sub.ok(), want);
        }
    }
}

/// NumPy's own results for `np.subtract.reduce` (`scripts`-free: small enough to read):
/// `[10, 1, 2, 3]` -> 4; `arange(12).reshape(3, 4)` over axis 0, over axis 1 and over axis 1
/// reversed; `axis=None` of a 2-d array (even `(1, 3)`) refused; of a 0-d array, the element.
#[test]
fn subtract_reduces_as_numpy() {
    assert_eq!(sub_i64::reduce(&array![10i64, 1, 2, 3], 0).unwrap()[[]], 4);
    assert_eq!(
        sub_i64::reduce(&array![10i64, 1, 2, 3], Axes::All).unwrap()[[]],
        4
    );
    let m = Array::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as i64);
    assert_eq!(
        sub_i64::reduce(&m, 0).unwrap(),
        array![-12i64, -13, -14, -15].into_dyn()
    );
    assert_eq!(
        sub_i64::reduce(&m, -1).unwrap(),
        array![-6i64, -14, -22].into_dyn()
    );
    assert_eq!(
        sub_i64::reduce(m.slice(ndarray::s![.., ..;-1]), 1).unwrap(),
        array![0i64, -8, -16].into_dyn()
    );
    let e = sub_i64::reduce(&Array::<i64, _>::ones((1, 3)), Axes::All).unwrap_err();
    assert!(
        matches!(&e, Error::NotReorderable { function: "sub_i64", axes } if axes == &[0, 1]),
        "{e}"
    );
    let text = e.to_string();
    assert!(
        text.contains("not reorderable") && text.contains("[0, 1]"),
        "{text}"
    );
    assert!(text.contains("associative = true"), "{text}");
    let zero_d = ndarray::arr0(5i64);
    assert_eq!(sub_i64::reduce(&zero_d, Axes::All).unwrap()[[]], 5);
    // NumPy's legacy rule: a lone axis 0 or -1 of a 0-d array reduces nothing; `(0,)` and 1
    // are out of bounds (`np.add.reduce(np.array(5), axis=0)` is 5).
    assert_eq!(sub_i64::reduce(&zero_d, 0).unwrap()[[]], 5);
    assert_eq!(add_i64::reduce_keepdims(&zero_d, -1).unwrap()[[]], 5);
    for axes in [Axes::from([0]), Axes::from(1), Axes::from(-2)] {
        let e = add_i64::reduce(&zero_d, axes).unwrap_err();
        assert!(matches!(e, Error::MethodAxis { ndim: 0, .. }), "{e}");
    }
    // No axis: nothing reduced, the input back.
    assert_eq!(
        sub_i64::reduce(&m, Axes::List(vec![])).unwrap(),
        m.into_dyn()
    );
}

/// Every path that regroups a reorderable function (long runs split over threads, rows four
/// at a time, rows streamed in blocks over threads) keeps one that is not in order.
#[test]
fn a_function_not_reorderable_stays_in_order_at_every_size() {
    let fold = |a: &ArrayD<f64>, axis: usize| {
        a.map_axis(Axis(axis), |lane| {
            let mut it = lane.iter().copied();
            let first = it.next().unwrap();
            it.fold(first, decay::scalar).to_bits()
        })
    };
    let value = |i: usize| ((i * 7919) % 1013) as f64 / 64.0;
    for (shape, axis) in [
        (vec![1 << 20], 0),
        (vec![3, 300_000], 1),
        (vec![300_000, 3], 0),
        (vec![5000, 300], 1),
        (vec![20_000, 64], 0),
    ] {
        let n: usize = shape.iter().product();
        let a = ArrayD::from_shape_vec(IxDyn(&shape), (0..n).map(value).collect()).unwrap();
        let want = fold(&a, axis);
        for target in [Target::Cpu, Target::Parallel] {
            let got = decay::reduce_on(target, &a, axis).unwrap();
            assert_eq!(
                got.mapv(f64::to_bits),
                want,
                "{shape:?} axis {axis} {target:?}"
            );
        }
    }
    // Rows read backwards and strided, eight at a time with five left over.
    let a = Array::from_shape_fn((8 * 40 + 5, 600), |(i, j)| value(i * 600 + j)).into_dyn();
    let v = a.slice(ndarray::s![.., ..;-2]).into_dyn().to_owned();
    let want = fold(&v, 1);
    for target in [Target::Cpu, Target::Parallel] {
        let got = decay::reduce_on(target, a.slice(ndarray::s![.., ..;-2]), 1).unwrap();
        assert_eq!(
            got.mapv(f64::to_bits),
            want,
            "reversed strided rows {target:?}"
        );
    }
}

#[test]
fn axes_are_checked_with_the_function_named() {
    // As NumPy: every axis in range before any repeat is looked for.
    let e = add_i64::reduce(&Array::<i64, _>::ones((2, 2)), [0, 0, 5]).unwrap_err();
    assert!(matches!(e, Error::MethodAxis { axis: 5, .. }), "{e}");
    let a = Array::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as i32);
    assert_eq!(add_i32::reduce(&a, 0).unwrap(), array![3, 5, 7].into_dyn());
    assert_eq!(add_i32::reduce(&a, -1).unwrap(), array![3, 12].into_dyn());
    assert_eq!(
        add_i32::reduce(&a, 1usize).unwrap(),
        array![3, 12].into_dyn()
    );
    assert_eq!(add_i32::reduce(&a, Axes::All).unwrap()[[]], 15);
    assert_eq!(add_i32::reduce(&a, [0, 1]).unwrap()[[]], 15);
    assert_eq!(
        add_i32::reduce(&a, Vec::<isize>::new()).unwrap(),
        a.clone().into_dyn()
    );
    let e = add_i32::reduce(&a, 2).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`add_i32::reduce`: axis 2 is out of bounds for an array of dimension 2"
    );
    let e = add_i32::reduce(&a, [0, -2]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`add_i32::reduce`: repeated axis in axes [0, -2]"
    );
    assert!(matches!(
        add_i32::accumulate(&a, -3),
        Err(Error::MethodAxis {
            method: "accumulate",
            axis: -3,
            ndim: 2,
            ..
        })
    ));
    // out of the wrong shape.
    let mut out = Array::<i32, _>::zeros(4);
    let e = add_i32::reduce_out(&a, 0, &mut out).unwrap_err();
    assert!(matches!(e, Error::ReducedShape { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        format!(
            "`add_i32::reduce`: `out` has shape (4,) but the reduction gives ({},) (or (1,{}) \
             with the reduced axes kept)",
            a.shape()[1],
            a.shape()[1]
        )
    );
    // keepdims-shaped out is accepted too.
    let mut out = Array::<i32, _>::zeros((1, 3));
    add_i32::reduce_out(&a, 0, &mut out).unwrap();
    assert_eq!(out, array![[3, 5, 7]]);
}

#[test]
fn empty_axes_give_the_identity_or_an_error() {
    let a = Array::<f64, _>::zeros((0, 3));
    assert_eq!(
        add_f64::reduce(&a, 0).unwrap(),
        Array::<f64, _>::zeros(3).into_dyn()
    );
    assert_eq!(add_f64::reduce(&a, Axes::All).unwrap()[[]], 0.0);
    assert_eq!(
        add_f64::reduce(&a, 1).unwrap().shape(),
        &[0],
        "no output, no error"
    );
    let e = maximum::reduce(&a, 0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "zero-size array to reduction operation `maximum`, which has no identity: axis 0 of \
         shape (0,3) is empty (give the function `identity = ...`)"
    );
    assert!(maximum::reduce(&a, 1).unwrap().is_empty());
    // An empty reduced axis without an identity is an error even where the result is empty
    // (NumPy's `maximum.reduce(zeros((0, 0)), axis=1)`), on every target.
    let none = Array::<f64, _>::zeros((0, 0));
    for target in [Target::Cpu, Target::Parallel] {
        let e = maximum::reduce_on(target, &none, 1).unwrap_err();
        assert!(matches!(e, Error::EmptyReduction { axis: 1, .. }), "{e}");
    }
    assert_eq!(add_f64::reduce(&none, 1).unwrap().shape(), &[0]);
    assert!(add_generic::reduce(&Array::<i64, _>::zeros(0), 0).unwrap()[[]] == 0);
    // Length-1 axes: a copy.
    let b = array![[1.5f64], [2.5]];
    assert_eq!(maximum::reduce(&b, 1).unwrap(), array![1.5, 2.5].into_dyn());
    // -0.0 alone stays -0.0 (the identity is only the empty result).
    assert!(add_f64::reduce(&array![-0.0f64], 0).unwrap()[[]].is_sign_negative());
}

#[test]
fn nan_propagates_through_maximum_not_fmax() {
    for n in [1usize, 7, 100, 10_000, 100_001] {
        for pos in [0, n / 2, n - 1] {
            let mut v = Array::from_shape_fn(n, |i| (i % 97) as f64);
            v[pos] = f64::NAN;
            for t in [Target::Cpu, Target::Parallel] {
                assert!(
                    maximum::reduce_on(t, &v, 0).unwrap()[[]].is_nan(),
                    "n {n} pos {pos}"
                );
                let m = fmax::reduce_on(t, &v, 0).unwrap()[[]];
                let expect = v.iter().fold(f64::NAN, |a, &b| a.max(b));
                assert!(
                    m == expect || (n == 1 && m.is_nan()),
                    "n {n} pos {pos}: {m}"
                );
            }
        }
    }
    let v = array![[1.0, f64::NAN], [3.0, 2.0]];
    let m = maximum::reduce(&v, 0).unwrap();
    assert_eq!(m[[0]], 3.0);
    assert!(m[[1]].is_nan());
    assert_eq!(fmax::reduce(&v, 0).unwrap(), array![3.0, 2.0].into_dyn());
}

#[test]
fn a_long_run_is_reduced_as_four_parts() {
    // Runs of 64 blocks of 2048 elements or more are reduced as four parts (the first three
    // `n / 4` rounded down to whole blocks; read side by side or one after another, as the
    // instruction set's machines prefer), each reduced alone, the totals combined pairwise:
    // exact for integers, NaN from any part, the same float grouping.
    let block = 2048;
    // Up to 490_001: each part (the last up to three blocks longer) stays under the
    // threshold, so that reducing it alone splits it no further.
    for n in [64 * block, 64 * block + 1, 200_003, 490_001] {
        let part = n / 4 / block * block;
        let ints = Array::from_shape_fn(n, |i| ((i as i64) << 33) ^ (i as i64 * 7_777_777));
        let want = ints.iter().fold(0i64, |s, &v| s.wrapping_add(v));
        let floats = Array::from_shape_fn(n, |i| 1.0f32 + ((i * 7919) % 1000) as f32 * 1e-3);
        let pieces = [0, part, 2 * part, 3 * part, n];
        let parts: Vec<f32> = pieces
            .windows(2)
            .map(|w| {
                add_f32::reduce_on(Target::Cpu, floats.slice(ndarray::s![w[0]..w[1]]), 0).unwrap()
                    [[]]
            })
            .collect();
        let grouped = (parts[0] + parts[1]) + (parts[2] + parts[3]);
        assert_eq!(
            add_i64::reduce_on(Target::Cpu, &ints, 0).unwrap()[[]],
            want,
            "{n}"
        );
        let got = add_f32::reduce_on(Target::Cpu, &floats, 0).unwrap()[[]];
        assert_eq!(got.to_bits(), grouped.to_bits(), "{n}: {got} vs {grouped}");
        for at in [0, part + 5, 3 * part + 7, n - 1] {
            let mut v = Array::from_shape_fn(n, |i| (i % 97) as f64);
            v[at] = f64::NAN;
            for t in [Target::Cpu, Target::Parallel] {
                assert!(
                    maximum::reduce_on(t, &v, 0).unwrap()[[]].is_nan(),
                    "{n} at {at}"
                );
                assert_eq!(fmax::reduce_on(t, &v, 0).unwrap()[[]], 96.0, "{n} at {at}");
            }
        }
    }
}

#[test]
fn rows_reduced_four_at_a_time_equal_each_row_reduced_alone() {
    // An inner reduction over one contiguous axis reads four rows side by side (where the
    // instruction set's machines gain from it; `reduce_four` is tested on its own): every row's
    // float sum is bit for bit its own, for short and long rows, any row count, and more
    // rows than one stretch of four streams takes (4096).
    for (rows, n) in [
        (4, 1),
        (5, 255),
        (9, 256),
        (7, 2048),
        (13, 4000),
        (6, 131_071),
        (9_001, 300),
    ] {
        let a = Array::from_shape_fn((rows, n), |(i, j)| {
            1.0f32 + (((i * n + j) * 7919) % 1000) as f32 * 1e-3
        });
        for t in [Target::Cpu, Target::Parallel] {
            let got = add_f32::reduce_on(t, &a, 1).unwrap();
            for (i, row) in a.outer_iter().enumerate() {
                let alone = add_f32::reduce_on(Target::Cpu, row, 0).unwrap()[[]];
                assert_eq!(
                    got[[i]].to_bits(),
                    alone.to_bits(),
                    "{rows}x{n} row {i} {t:?}"
                );
            }
            let mut v = a.mapv(|x| x as f64);
            v[[rows - 1, n / 2]] = f64::NAN;
            let m = maximum::reduce_on(t, &v, 1).unwrap();
            assert!(
                m[[rows - 1]].is_nan() && !m[[0]].is_nan(),
                "{rows}x{n} {t:?}"
            );
        }
    }
}

#[test]
fn integers_wrap_as_the_scalar_function() {
    let a = Array::from_elem(1000, i32::MAX);
    let expect = (0..1000).fold(0i32, |s, _| s.wrapping_add(i32::MAX));
    for t in [Target::Cpu, Target::Parallel] {
        assert_eq!(add_i32::reduce_on(t, &a, 0).unwrap()[[]], expect);
    }
    let acc = add_i32::accumulate(&a, 0).unwrap();
    assert_eq!(acc[1], i32::MAX.wrapping_add(i32::MAX));
}

#[test]
fn a_float_sum_of_ten_million_is_pairwise_accurate() {
    let n = 10_000_000;
    let a = Array::from_shape_fn(n, |i| 1.0f32 + ((i * 7919) % 1000) as f32 * 1e-3);
    let exact: f64 = a.iter().map(|&x| x as f64).sum();
    let mut naive = 0.0f32;
    for &x in &a {
        naive += x;
    }
    for t in [Target::Cpu, Target::Parallel] {
        let got = add_f32::reduce_on(t, &a, 0).unwrap()[[]] as f64;
        let rel = ((got - exact) / exact).abs();
        // NumPy's pairwise sum: a few ulps times log2(n); a running sum is far off.
        assert!(rel < 1e-6, "{t:?}: {got} vs {exact}, relative {rel}");
        let drift = ((naive as f64 - exact) / exact).abs();
        assert!(
            drift > 1e-4 && rel < drift / 100.0,
            "running sum {drift}, pairwise {rel}"
        );
    }
    // Over the outer axis of a 2-d array: rows streamed into an accumulator row, a running sum
    // per column as in NumPy: within n * eps relative for n = 10^4 terms.
    let b = a.into_shape_with_order((10_000, 1000)).unwrap();
    let got = add_f32::reduce(&b, 0).unwrap();
    let exact = b.mapv(|x| x as f64).sum_axis(Axis(0));
    for (g, e) in got.iter().zip(&exact) {
        assert!(
            ((*g as f64 - e) / e).abs() < 1e4 * f32::EPSILON as f64,
            "{g} vs {e}"
        );
    }
}

#[test]
fn parallel_is_deterministic_and_exact_ops_match_cpu() {
    let a = Array::from_shape_fn((300, 5000), |(i, j)| {
        ((i * 31 + j * 17) % 1013) as f64 * 0.37 - 100.0
    });
    for axes in [Axes::All, Axes::from(0), Axes::from(1)] {
        let p1 = add_f64::reduce_on(Target::Parallel, &a, axes.clone()).unwrap();
        let p2 = add_f64::reduce_on(Target::Parallel, &a, axes.clone()).unwrap();
        assert_eq!(p1, p2, "same input, same threads: same bits");
        // Floats: the same sums in another grouping (an outer axis splits its rows).
        let c1 = add_f64::reduce_on(Target::Cpu, &a, axes.clone()).unwrap();
        for (p, c) in p1.iter().zip(&c1) {
            assert!((p - c).abs() <= 1e-9 * c.abs().max(1.0), "{p} vs {c}");
        }
        let c = maximum::reduce_on(Target::Cpu, &a, axes.clone()).unwrap();
        assert_eq!(
            maximum::reduce_on(Target::Parallel, &a, axes.clone()).unwrap(),
            c
        );
        let ai = a.mapv(|x| (x * 1e3) as i64 * 1_000_003);
        assert_eq!(
            add_i64::reduce_on(Target::Parallel, &ai, axes.clone()).unwrap(),
            add_i64::reduce_on(Target::Cpu, &ai, axes.clone()).unwrap()
        );
    }
}

/// The running fold along the last axis, in order.
fn running<T: Copy>(a: &ArrayD<T>, f: impl Fn(T, T) -> T) -> ArrayD<T> {
    let mut out = a.clone();
    let last = Axis(a.ndim() - 1);
    for mut lane in out.lanes_mut(last) {
        for i in 1..lane.len() {
            lane[i] = f(lane[i - 1], lane[i]);
        }
    }
    out
}

/// `add_i64_assoc::accumulate` along the last axis `axis` of `a` equals the running fold on
/// both CPU targets, and so does `add_i32_assoc`'s of `a` cut to 32 bits.
fn scans_exactly(a: &ArrayD<i64>, axis: isize, label: usize) {
    let want = running(a, i64::wrapping_add);
    let a32 = a.mapv(|v| ((v >> 40) as i32).wrapping_mul(1_000_003));
    let want32 = running(&a32, i32::wrapping_add);
    for t in [Target::Cpu, Target::Parallel] {
        let got = add_i64_assoc::accumulate_on(t, a, axis).unwrap();
        assert_eq!(got, want, "{label} {t:?}");
        let got = add_i32_assoc::accumulate_on(t, &a32, axis).unwrap();
        assert_eq!(got, want32, "{label} {t:?} i32");
    }
}

#[test]
fn an_associative_accumulate_is_exact_for_integers_at_every_length() {
    // Around the scan's blocks (8 x 264), past the length split over threads (2^17), a few
    // rows (each split) and many (one per thread), and a strided view (the running scan).
    let value = |i: usize| (((i * 2_654_435_761) % 1_000_003) as i64 - 500_000) << 40;
    for len in [
        1,
        2,
        2111,
        2112,
        2113,
        3 * 2112 + 5,
        4096,
        1 << 17,
        (1 << 18) + 4099,
        // Several stretches of 2 MiB pieces: two and a half, of i64 on two threads.
        1_300_007,
    ] {
        scans_exactly(&Array::from_shape_fn(len, value).into_dyn(), 0, len);
    }
    for rows in [3, 64] {
        let a = Array::from_shape_fn((rows, 150_001), |(i, j)| value(i * 150_001 + j)).into_dyn();
        scans_exactly(&a, 1, rows);
        let stepped =
            a.slice_each_axis(|ax| Slice::new(0, None, if ax.axis.0 == 1 { -3 } else { 1 }));
        let want = running(&stepped.to_owned(), i64::wrapping_add);
        let stepped32 = stepped.mapv(|v| ((v >> 40) as i32).wrapping_mul(1_000_003));
        let want32 = running(&stepped32, i32::wrapping_add);
        for t in [Target::Cpu, Target::Parallel] {
            assert_eq!(
                add_i64_assoc::accumulate_on(t, &stepped, -1).unwrap(),
                want,
                "{t:?}"
            );
            // Gathered and scanned in place in the buffer (4-byte elements: in tiles).
            assert_eq!(
                add_i32_assoc::accumulate_on(t, &stepped32, -1).unwrap(),
                want32,
                "{t:?} i32"
            );
        }
    }
}

#[test]
fn an_associative_accumulate_of_a_broadcast_or_strided_axis_is_exact() {
    // Stride 0 along the accumulated axis, and a column of a C-order array (the gathered
    // scan), both longer than several of its chunks.
    let col = Array::from_shape_fn((3, 1), |(i, _)| (i as i64 + 1) << 50);
    let wide = col.broadcast((3, 40_001)).unwrap();
    let want = running(&wide.to_owned().into_dyn(), i64::wrapping_add);
    let tall = Array::from_shape_fn((40_001, 3), |(i, j)| ((i * 3 + j) as i64 * 7_777_777) << 30);
    let want_t = running(&tall.t().to_owned().into_dyn(), i64::wrapping_add);
    for t in [Target::Cpu, Target::Parallel] {
        assert_eq!(
            add_i64_assoc::accumulate_on(t, wide, 1).unwrap().into_dyn(),
            want,
            "{t:?}"
        );
        let got = add_i64_assoc::accumulate_on(t, tall.t(), 1).unwrap();
        assert_eq!(got.into_dyn(), want_t, "{t:?}");
    }
}

#[test]
fn an_associative_accumulate_splits_over_any_number_of_threads() {
    let value = |i: usize| ((i * 40_503) % 65_521) as i64 - 30_000;
    for len in [150_001, 1_000_003] {
        let a = Array::from_shape_fn(len, value);
        let want = running(&a.clone().into_dyn(), i64::wrapping_add);
        for threads in [2, 3, 7, 64] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            // Into a contiguous `out` too: the same split scan.
            let mut out = Array::zeros(len);
            let a32 = a.mapv(|v| v as i32 * 40_503);
            let want32 = running(&a32.clone().into_dyn(), i32::wrapping_add);
            pool.install(|| {
                let got = add_i64_assoc::accumulate_on(Target::Parallel, &a, 0).unwrap();
                assert_eq!(got.into_dyn(), want, "{len} on {threads} threads");
                add_i64_assoc::accumulate_out_on(Target::Parallel, &a, 0, &mut out).unwrap();
                // Pieces after the first start from a carry (4-byte elements: in tiles).
                let got = add_i32_assoc::accumulate_on(Target::Parallel, &a32, 0).unwrap();
                assert_eq!(got.into_dyn(), want32, "{len} on {threads} threads, i32");
            });
            assert_eq!(out.into_dyn(), want, "{len} into out on {threads} threads");
        }
    }
}

#[test]
fn a_large_associative_accumulate_streams_its_output_with_the_same_result() {
    // Outputs of 16 MiB or more are written with non-temporal stores, in whole lines: odd
    // lengths, an `out` one element off a line, several rows, 4- and 8-byte elements.
    let value = |i: usize| ((i * 40_503) % 65_521) as i32 - 30_000;
    let len = 4_200_007;
    let a = Array::from_shape_fn(len, value);
    let want = running(&a.clone().into_dyn(), i32::wrapping_add);
    let a64 = a.mapv(|v| v as i64 * 40_503);
    let want64 = running(&a64.clone().into_dyn(), i64::wrapping_add);
    let rows = Array::from_shape_fn((4, 1_100_003), |(i, j)| value(i * 7 + j));
    let want_rows = running(&rows.clone().into_dyn(), i32::wrapping_add);
    for t in [Target::Cpu, Target::Parallel] {
        let got = add_i32_assoc::accumulate_on(t, &a, 0).unwrap();
        assert_eq!(got.into_dyn(), want, "{t:?}");
        let mut wider = Array::zeros(len + 1);
        add_i32_assoc::accumulate_out_on(t, &a, 0, wider.slice_mut(ndarray::s![1..])).unwrap();
        assert_eq!(wider[0], 0, "{t:?}");
        assert_eq!(
            wider.slice(ndarray::s![1..]).into_dyn(),
            want,
            "{t:?}, out off a line"
        );
        let got = add_i64_assoc::accumulate_on(t, &a64, 0).unwrap();
        assert_eq!(got.into_dyn(), want64, "{t:?}, i64");
        let got = add_i32_assoc::accumulate_on(t, &rows, 1).unwrap();
        assert_eq!(got.into_dyn(), want_rows, "{t:?}, rows");
        // Floats whose every partial sum is exact: any grouping gives the running sums.
        let small = a.mapv(|v| (v.rem_euclid(4)) as f32);
        let want_f32 = running(&small.clone().into_dyn(), |x, y| x + y);
        let got = add_f32_assoc::accumulate_on(t, &small, 0).unwrap();
        assert_eq!(got.into_dyn(), want_f32, "{t:?}, f32");
        let quarters = a.mapv(|v| v as f64 * 0.25);
        let want_f64 = running(&quarters.clone().into_dyn(), |x, y| x + y);
        let got = add_f64_assoc::accumulate_on(t, &quarters, 0).unwrap();
        assert_eq!(got.into_dyn(), want_f64, "{t:?}, f64");
    }
}

#[test]
fn an_associative_accumulate_on_one_thread_keeps_a_non_commutative_function_in_order() {
    // Short runs, runs of a few blocks, and outputs of 16 MiB or more (streamed, in vectors
    // for 4-byte elements), into an `out` on and off a 32-byte boundary, and a strided axis
    // (gathered into a buffer).
    let value = |i: usize| (i as u32).wrapping_mul(2_654_435_761) ^ 0x9E37_79B9;
    let in_order = |p: u32, q: u32| then_affine::scalar(p, q);
    for len in [1, 7, 8, 9, 63, 2_113, 70_001, 4_200_007] {
        let a = Array::from_shape_fn(len, value);
        let want = running(&a.clone().into_dyn(), in_order);
        let got = then_affine::accumulate_on(Target::Cpu, &a, 0).unwrap();
        assert_eq!(got.into_dyn(), want, "{len}");
        into_out_on_and_off_a_vector(len, &want, "", |out| {
            then_affine::accumulate_out_on(Target::Cpu, &a, 0, out).unwrap();
        });
    }
    let a = Array::from_shape_fn((40_001, 2), |(i, j)| value(2 * i + j));
    let want = running(&a.t().to_owned().into_dyn(), in_order);
    let got = then_affine::accumulate_on(Target::Cpu, a.t(), 1).unwrap();
    assert_eq!(got.into_dyn(), want, "strided");
    // 8-byte elements: streamed from 2M elements (16 MiB) on, four to a vector.
    let value64 = |i: usize| (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x2545_F491;
    let in_order64 = |p: u64, q: u64| then_affine64::scalar(p, q);
    for len in [1, 3, 4, 5, 2_113, 2_100_003] {
        let a = Array::from_shape_fn(len, value64);
        let want = running(&a.clone().into_dyn(), in_order64);
        into_out_on_and_off_a_vector(len, &want, ", 8 bytes", |out| {
            then_affine64::accumulate_out_on(Target::Cpu, &a, 0, out).unwrap();
        });
    }
}

/// `accumulate(out)` into an `out` of `len` elements whose first element is on a 32-byte
/// boundary, then one element past it: each time `want`.
fn into_out_on_and_off_a_vector<T: Copy + Default + PartialEq + std::fmt::Debug>(
    len: usize,
    want: &ArrayD<T>,
    what: &str,
    accumulate: impl Fn(ndarray::ArrayViewMut1<'_, T>),
) {
    let mut wider = Array::<T, _>::default(len + 9);
    let aligned = (32 - wider.as_ptr() as usize % 32) % 32 / size_of::<T>();
    for offset in [aligned, aligned + 1] {
        accumulate(wider.slice_mut(ndarray::s![offset..offset + len]));
        let got = wider.slice(ndarray::s![offset..offset + len]).into_dyn();
        assert_eq!(
            &got, want,
            "{len}, out {offset} elements into the allocation{what}"
        );
    }
}

#[test]
fn an_associative_float_accumulate_is_deterministic_and_as_accurate() {
    let n = 3_000_001;
    let a = Array::from_shape_fn(n, |i| 1.0f32 + ((i * 7919) % 1000) as f32 * 1e-3);
    let mut exact = Vec::with_capacity(n);
    let mut s = 0.0f64;
    for &x in &a {
        s += x as f64;
        exact.push(s);
    }
    let error = |got: &Array<f32, ndarray::Ix1>| {
        got.iter()
            .zip(&exact)
            .map(|(&g, &e)| (g as f64 - e).abs() / e)
            .fold(0.0, f64::max)
    };
    let running = add_f32::accumulate(&a, 0).unwrap();
    for t in [Target::Cpu, Target::Parallel] {
        let got = add_f32_assoc::accumulate_on(t, &a, 0).unwrap();
        assert_eq!(
            got,
            add_f32_assoc::accumulate_on(t, &a, 0).unwrap(),
            "{t:?}"
        );
        // The regrouped sum is no less accurate than the running one.
        let (e, e_running) = (error(&got), error(&running));
        assert!(
            e <= e_running && e < 1e-4,
            "{t:?}: {e} vs running {e_running}"
        );
    }
}

#[test]
fn a_recurrence_accumulates_in_order() {
    let a = Array::from_shape_fn((3, 200_003), |(i, j)| {
        ((i * 7 + j * 13) % 101) as f64 - 50.0
    })
    .into_dyn();
    let want = running(&a, |acc, x| 0.5 * acc + x);
    for t in [Target::Cpu, Target::Parallel] {
        assert_eq!(decay::accumulate_on(t, &a, -1).unwrap(), want, "{t:?}");
    }
}

#[test]
fn accumulate_out_writes_into_any_layout_and_checks_the_shape() {
    let a = Array::from_shape_fn((4, 5000), |(i, j)| (i * 5000 + j) as i64 % 977 - 400);
    for axis in [0, 1] {
        let want = add_i64::accumulate(&a, axis).unwrap();
        for t in [Target::Cpu, Target::Parallel] {
            // Transposed memory, and a reversed view.
            let mut out = Array::zeros((4, 5000).f());
            add_i64_assoc::accumulate_out_on(t, &a, axis, &mut out).unwrap();
            assert_eq!(out, want);
            let mut buf = Array::zeros((4, 5000));
            let mut rev = buf.slice_mut(ndarray::s![.., ..;-1]);
            add_i64::accumulate_out_on(t, a.slice(ndarray::s![.., ..;-1]), axis, &mut rev).unwrap();
            assert_eq!(
                buf.slice(ndarray::s![.., ..;-1]),
                add_i64::accumulate(a.slice(ndarray::s![.., ..;-1]), axis).unwrap()
            );
        }
    }
    let mut wrong = Array::zeros((5000, 4));
    let e = add_i64::accumulate_out(&a, 0, &mut wrong).unwrap_err();
    assert_eq!(
        e,
        ufunc::Error::OutputShape {
            output: 0,
            expected: vec![4, 5000],
            found: vec![5000, 4],
        }
    );
    let e = add_i64::accumulate_out(&a, 2, &mut Array::zeros((4, 5000))).unwrap_err();
    assert!(e.to_string().contains("axis 2 is out of bounds"), "{e}");
}

#[test]
fn outer_has_the_shapes_concatenated() {
    let a = array![[1i64, 2], [3, 4]];
    let b = array![10i64, 20, 30];
    let o = sub_i64::outer(&a, &b).unwrap();
    assert_eq!(o.shape(), &[2, 2, 3]);
    for ((i, j, k), &v) in o
        .clone()
        .into_dimensionality::<ndarray::Ix3>()
        .unwrap()
        .indexed_iter()
    {
        assert_eq!(v, a[[i, j]] - b[k]);
    }
    // Views of any strides, and a scalar.
    let o = sub_i64::outer(a.t(), 5i64).unwrap();
    assert_eq!(o, (&a.t() - 5).into_dyn());
    let o = add_f64::outer(&Array::<f64, _>::zeros(0), &array![1.0]).unwrap();
    assert_eq!(o.shape(), &[0, 1]);
}

/// Broadcast views (stride 0 along some axes) reduce, accumulate and take outer products as
/// their owned copies do, on `cpu` and `parallel`: the repeated elements are read, not skipped.
#[test]
fn broadcast_views_reduce_as_their_copies() {
    let row = Array::from_shape_fn((1, 5, 1), |(_, j, _)| j as i64 * 7 - 3);
    let wide = row.broadcast((4, 5, 300)).unwrap();
    let owned = wide.to_owned();
    for axes in [
        Axes::All,
        Axes::from(0),
        Axes::from(2),
        Axes::List(vec![0, 2]),
        Axes::List(vec![1]),
    ] {
        for target in [Target::Cpu, Target::Parallel] {
            let got = add_i64::reduce_on(target, wide, axes.clone()).unwrap();
            let want = add_i64::reduce_on(target, &owned, axes.clone()).unwrap();
            assert_eq!(got, want, "{axes:?} {target:?}");
        }
    }
    for axis in [0, 2] {
        assert_eq!(
            add_i64::accumulate(&wide, axis).unwrap(),
            add_i64::accumulate(&owned, axis).unwrap(),
            "accumulate along {axis}"
        );
    }
    let column = array![1i64, 2, 3].into_shape_with_order((3, 1)).unwrap();
    let b = column.broadcast((3, 4)).unwrap();
    assert_eq!(
        sub_i64::outer(b, wide).unwrap(),
        sub_i64::outer(&b.to_owned(), &owned).unwrap()
    );
}

#[test]
fn at_applies_repeated_indices_repeatedly() {
    let mut a = array![1i64, 2, 3, 4];
    sub_i64::at(&mut a, &[0, 0, -1, 2], &array![1i64, 2, 3, 4]).unwrap();
    assert_eq!(a, array![1 - 1 - 2, 2, 3 - 4, 4 - 3]);
    // Rows of a 2-d array, `b` broadcast; a strided view.
    let mut m = Array::<i64, _>::zeros((3, 2));
    add_i64::at(
        m.view_mut().reversed_axes().reversed_axes(),
        &[2usize, 2, 0],
        1i64,
    )
    .unwrap();
    assert_eq!(m, array![[1, 1], [0, 0], [2, 2]]);
    // Bad indices: an error naming the function, and nothing applied.
    let e = add_i64::at(&mut m, &[0, 3], 1i64).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`add_i64::at`: index 3 is out of bounds for axis 0 with size 3"
    );
    assert_eq!(m, array![[1, 1], [0, 0], [2, 2]]);
    let e = add_i64::at(&mut m, &[0], &array![1i64, 2, 3]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid `b`: `add_i64::at`: shape (3,) does not broadcast to the indexed shape (1,2)"
    );
    // An index that does not fit an isize is out of bounds, and named exactly.
    let e = add_i64::at(&mut m, &[0, u64::MAX], 1i64).unwrap_err();
    assert!(
        e.to_string()
            .contains("index 18446744073709551615 is out of bounds"),
        "{e}"
    );
    assert_eq!(m, array![[1, 1], [0, 0], [2, 2]]);
    // Thousands of points (the one-array loop, and the chunks of the tuple form) from a
    // stepped view of an index array, against a naive loop with a function whose repeated
    // application shows its order.
    let mut rng = Lcg(3);
    let idx = Array1::from_iter((0..6001).map(|_| rng.below(40) as i32 - 20));
    let b = Array1::from_iter((0..3001).map(|_| rng.below(1000) as i64));
    let picked = idx.slice(s![..;2]);
    let mut a = Array1::from_iter(0..20i64);
    let mut want = a.clone();
    shift_in::at(&mut a, &picked, &b).unwrap();
    for (k, &i) in picked.iter().enumerate() {
        let place = &mut want[((i + 20) % 20) as usize];
        *place = shift(*place, b[k]);
    }
    assert_eq!(a, want);
    let mut a2 = Array::from_shape_fn((20, 1), |(i, _)| i as i64);
    shift_in::at(&mut a2, (&picked, &[0u8]), &b).unwrap();
    assert_eq!(a2.column(0), want);
}

/// A tuple of index arrays and `..` addresses the first k axes, NumPy's tuple of index arrays
/// and `slice(None)`: every case of NumPy's `test_ufunc_at_multiD` as written there, and the
/// cases of `test_ufunc_at_basic`, `test_ufunc_at_large`, `test_ufunc_at_0D`,
/// `test_ufunc_at_ellipsis` and `test_ufunc_at_advanced` (`numpy/_core/tests/test_ufunc.py`).
#[test]
fn at_takes_numpys_index_forms() {
    let arange = |shape: &[usize]| {
        Array::from_shape_vec(
            shape.to_vec(),
            (0..shape.iter().product::<usize>() as i64).collect(),
        )
        .unwrap()
    };
    let b3 = array![[100i64, 100, 100], [200, 200, 200], [300, 300, 300]];
    let b = array![100i64, 200, 300];
    // (slice(None), [1, 2, 1]).
    let mut a = arange(&[3, 3]);
    add_i64::at(&mut a, (.., &[1, 2, 1]), &b3).unwrap();
    assert_eq!(
        a,
        array![[0, 201, 102], [3, 404, 205], [6, 607, 308]].into_dyn()
    );
    // (slice(None), slice(None), [1, 2, 1]).
    let mut a = arange(&[3, 3, 3]);
    add_i64::at(&mut a, (.., .., &[1, 2, 1]), &b).unwrap();
    let want = Array::from_shape_fn((3, 3, 3), |(i, j, k)| {
        9 * i as i64 + 3 * j as i64 + k as i64 + [0, 400, 200][k]
    });
    assert_eq!(a, want.into_dyn());
    // ([1, 2, 1], slice(None)).
    let mut a = arange(&[3, 3]);
    add_i64::at(&mut a, (&[1, 2, 1], ..), &b3).unwrap();
    assert_eq!(
        a,
        array![[0, 1, 2], [403, 404, 405], [206, 207, 208]].into_dyn()
    );
    // (slice(None), [1, 2, 1], slice(None)).
    let mut a = arange(&[3, 3, 3]);
    add_i64::at(&mut a, (.., &[1, 2, 1], ..), &b).unwrap();
    let mut want = arange(&[3, 3, 3]);
    for i in 0..3 {
        let base = 9 * i as i64;
        want.slice_mut(s![i, 1, ..])
            .assign(&array![base + 203, base + 404, base + 605]);
        want.slice_mut(s![i, 2, ..])
            .assign(&array![base + 106, base + 207, base + 308]);
    }
    assert_eq!(a, want);
    // (0, [1, 2, 1]).
    let mut a = arange(&[3, 3]);
    add_i64::at(&mut a, (&0, &[1, 2, 1]), &b).unwrap();
    assert_eq!(a, array![[0, 401, 202], [3, 4, 5], [6, 7, 8]].into_dyn());
    // ([1, 2, 1], 0, slice(None)).
    let mut a = arange(&[3, 3, 3]);
    add_i64::at(&mut a, (&vec![1, 2, 1], &0u8, ..), &b).unwrap();
    let mut want = arange(&[3, 3, 3]);
    want.slice_mut(s![1, 0, ..]).assign(&array![209, 410, 611]);
    want.slice_mut(s![2, 0, ..]).assign(&array![118, 219, 320]);
    assert_eq!(a, want);
    // (slice(None), slice(None), slice(None)).
    let mut a = arange(&[3, 3, 3]);
    add_i64::at(&mut a, (.., .., ..), &b).unwrap();
    assert_eq!(a, arange(&[3, 3, 3]) + &b);
    // Index arrays separated by a slice: the points' axis comes first, as NumPy's
    // np.subtract.at(a, ([0, 1, 0], slice(None), [1, 2, 1]), np.arange(9).reshape(3, 3) * 10).
    let mut a = arange(&[2, 3, 4]);
    let b33 = arange(&[3, 3]) * 10;
    sub_i64::at(&mut a, (&[0, 1, 0], .., &[1, 2, 1]), &b33).unwrap();
    let mut want = arange(&[2, 3, 4]);
    for (i, col) in [(0, [-59, -75, -91]), (1, [-16, -22, -28])] {
        want.slice_mut(s![i, .., 1 + i])
            .assign(&array![col[0], col[1], col[2]]);
    }
    assert_eq!(a, want);
    // test_ufunc_at_ellipsis: np.add.at(arr, slice(None), np.ones(5)).
    let mut a = Array::<i64, _>::zeros(5);
    add_i64::at(&mut a, .., &Array::<i64, _>::ones(5)).unwrap();
    assert_eq!(a, Array::<i64, _>::ones(5));
    // A transposed view indexed with `..` first, as the permuted view NumPy's strides give.
    let mut a = arange(&[3, 3]);
    add_i64::at(a.view_mut().reversed_axes(), (.., &[1, 2, 1]), b3.t()).unwrap();
    assert_eq!(
        a,
        array![[0, 1, 2], [403, 404, 405], [206, 207, 208]].into_dyn()
    );
    // `()` indexes no axis: the whole array (NumPy's `np.add.at(a, (), 1)` on 0-d and more).
    let mut zero_d = ndarray::arr0(0i64);
    add_i64::at(&mut zero_d, (), 1i64).unwrap();
    assert_eq!(zero_d[()], 1);
    let e = add_i64::at(&mut zero_d, &[0], 1i64).unwrap_err();
    assert!(e.to_string().contains("too many indices for array"), "{e}");
    // `b` broadcasts to `a` itself, not to a leading axis of one point.
    let mut m = arange(&[2, 3]);
    add_i64::at(&mut m, (), &array![10i64, 20, 30]).unwrap();
    assert_eq!(m, array![[10i64, 21, 32], [13, 24, 35]].into_dyn());
    let e = add_i64::at(&mut m, (), &Array::<i64, _>::ones((1, 2, 3))).unwrap_err();
    assert!(
        e.to_string()
            .contains("shape (1,2,3) does not broadcast to the indexed shape (2,3)"),
        "{e}"
    );
    assert!(add_i64::at(&mut zero_d, (), &array![1i64]).is_err());
    assert_eq!(zero_d[()], 1);
    // test_ufunc_at_basic and _large: repeated indices, i16 indices, an ordered float sum.
    let mut a = Array::from_iter(0..10i64);
    let borrowed: &[usize] = &[2, 5, 2];
    // The borrow is the point: a `&&[usize]`, as code written for a `&[I]` parameter passes.
    #[allow(clippy::needless_borrows_for_generic_args)]
    let applied = add_i64::at(&mut a, &borrowed, &array![100i64, 100, 100]);
    applied.unwrap();
    assert_eq!(a, array![0, 1, 202, 3, 4, 105, 6, 7, 8, 9]);
    let indices = vec![0i16; 8195];
    let mut b = vec![0.0f64; 8195];
    (b[0], b[1]) = (10.0, 5.0);
    b[8192..].fill(100.0);
    let mut total = array![0.0f64];
    add_f64::at(&mut total, &indices, &Array::from(b)).unwrap();
    assert_eq!(total[0], 315.0);
    // test_ufunc_at_advanced: an empty sub-array leaves everything as it was.
    let mut orig = Array::from_iter(0..4i64).insert_axis(ndarray::Axis(1));
    add_i64::at(orig.slice_mut(s![.., 0..0]), &[0, 1], 3i64).unwrap();
    assert_eq!(orig.column(0), array![0, 1, 2, 3]);
}

/// Index arrays of any dimension, as NumPy's: the points take the index arrays' broadcast
/// shape, in C order, and `b` broadcasts to that shape followed by the sub-array's. The
/// expected arrays are NumPy 2.4's results for the calls in the comments.
#[test]
fn at_takes_index_arrays_of_any_dimension() {
    // np.subtract.at(a, [[0, 3], [3, -1], [0, 0]], np.arange(12).reshape(3, 2, 2)), a (4, 2).
    let mut a = Array::<i64, _>::zeros((4, 2));
    let idx = array![[0i64, 3], [3, -1], [0, 0]];
    let b = Array::from_shape_vec((3, 2, 2), (0..12i64).collect()).unwrap();
    sub_i64::at(&mut a, &idx, &b).unwrap();
    assert_eq!(a, array![[-18, -21], [0, 0], [0, 0], [-12, -15]]);
    // np.add.at(h, (r, c), w): r (3, 1) and c (4,) broadcast to (3, 4) points; w (3, 1)
    // broadcasts along them with a stride that is no multiple of the point's number.
    let mut h = Array::<i64, _>::zeros((5, 6));
    let (r, c) = (array![[0i32], [4], [0]], array![1i64, 5, 1, -6]);
    add_i64::at(&mut h, (&r, &c), &array![[1i64], [10], [100]]).unwrap();
    let mut want = Array::<i64, _>::zeros((5, 6));
    want.row_mut(0).assign(&array![101, 202, 0, 0, 0, 101]);
    want.row_mut(4).assign(&array![10, 20, 0, 0, 0, 10]);
    assert_eq!(h, want);
    // Scalar indices: np.add.at(a, 2, [10, 20]); np.add.at(a, (0, [1, 1]), 5).
    let mut a = Array::from_shape_vec((3, 2), (0..6i64).collect()).unwrap();
    add_i64::at(&mut a, &2, &array![10i64, 20]).unwrap();
    add_i64::at(&mut a, (&0usize, &[1, 1]), 5i64).unwrap();
    assert_eq!(a, array![[0, 11], [2, 3], [14, 25]]);
    // An index array that is a transposed view: np.add.at(a, i.T, [[1, 2], [3, 4]]).
    let i = array![[1u16, 2], [0, 1]];
    let mut a = Array::<i64, _>::zeros(3);
    add_i64::at(&mut a, &i.t(), &array![[1i64, 2], [3, 4]]).unwrap();
    assert_eq!(a, array![2, 5, 3]);
    // Index arrays that do not broadcast: NumPy's message; nothing applied.
    let before = h.clone();
    let e = add_i64::at(&mut h, (&Array::<i64, _>::zeros((2, 3)), &[0, 0]), 1i64).unwrap_err();
    assert!(
        e.to_string()
            .contains("indexing arrays could not be broadcast together with shapes (2,3) (2,)"),
        "{e}"
    );
    // A bad index anywhere in an n-d array, after good ones in C order: nothing applied.
    let e = add_i64::at(&mut h, &array![[0i64, 1], [-6, 2]], 1i64).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`add_i64::at`: index -6 is out of bounds for axis 0 with size 5"
    );
    assert_eq!(h, before);
    // Random n-d index arrays against a naive loop in C order, with a function whose repeated
    // application shows its order.
    let mut rng = Lcg(11);
    let mut next = |m: u64| rng.below(m);
    let idx = Array::from_shape_fn((4, 1, 5), |_| next(7) as i64 - 3);
    let cols = Array::from_shape_fn((3, 1), |_| next(2) as usize);
    let b = Array::from_shape_fn((3, 5, 2), |_| next(100) as i64);
    let mut a = Array::from_shape_fn((7, 2, 2), |_| next(50) as i64);
    let mut want = a.clone();
    shift_in::at(&mut a, (&idx, &cols), &b).unwrap();
    for (p, q, s) in c_order3(4, 3, 5) {
        let row = ((idx[[p, 0, s]] + 7) % 7) as usize;
        let col = cols[[q, 0]];
        for j in 0..2 {
            want[[row, col, j]] = shift(want[[row, col, j]], b[[q, s, j]]);
        }
    }
    assert_eq!(a, want);
    // Hundreds of n-d points (several chunks), from index views with a negative stride.
    let rows = Array::from_shape_fn((30, 20), |_| next(9) as i32 - 4);
    let cols = Array::from_shape_fn((20,), |_| next(3) as u8);
    let rows_view = rows.slice(s![..;-1, ..]);
    let cols_view = cols.slice(s![..;-1]);
    let b = Array::from_shape_fn((30, 20), |_| next(100) as i64);
    let mut a = Array::from_shape_fn((5, 3), |_| next(50) as i64);
    let mut want = a.clone();
    shift_in::at(&mut a, (&rows_view, &cols_view), &b).unwrap();
    for (p, q) in (0..30).flat_map(|p| (0..20).map(move |q| (p, q))) {
        let row = ((rows_view[[p, q]] + 5) % 5) as usize;
        let place = &mut want[[row, cols_view[q] as usize]];
        *place = shift(*place, b[[p, q]]);
    }
    assert_eq!(a, want);
    // An integer index is checked even where no points are made, as NumPy's; an empty index
    // array is not.
    let mut m = Array::<i64, _>::zeros((3, 3));
    let none: [i64; 0] = [];
    let e = add_i64::at(&mut m, (&5, &none), 1i64).unwrap_err();
    assert!(
        e.to_string()
            .contains("index 5 is out of bounds for axis 0"),
        "{e}"
    );
    let e = add_i64::at(&mut m, (&none, &7u8), 1i64).unwrap_err();
    assert!(
        e.to_string()
            .contains("index 7 is out of bounds for axis 1"),
        "{e}"
    );
    add_i64::at(&mut m, (&none, &[7]), 1i64).unwrap();
    let e = add_i64::at(&mut m, (&5, &[0]), 1i64).unwrap_err();
    assert!(
        e.to_string()
            .contains("index 5 is out of bounds for axis 0"),
        "{e}"
    );
    let mut empty_axis = Array::<i64, _>::zeros((0, 2));
    assert!(add_i64::at(&mut empty_axis, &0, 1i64).is_err());
    // `..` alone on a 0-d array indexes one axis too many.
    let e = add_i64::at(&mut ndarray::arr0(0i64), .., 1i64).unwrap_err();
    assert!(e.to_string().contains("too many indices"), "{e}");
    assert_eq!(m, Array::<i64, _>::zeros((3, 3)));
}

/// `(p, q, s)` over `0..n0 x 0..n1 x 0..n2` in C order.
fn c_order3(n0: usize, n1: usize, n2: usize) -> impl Iterator<Item = (usize, usize, usize)> {
    (0..n0).flat_map(move |p| (0..n1).flat_map(move |q| (0..n2).map(move |s| (p, q, s))))
}

/// Pairs of index lists against a naive loop: a 2-d histogram with weights, lists as slices,
/// `Vec`s and `Array1`s, negative indices, a reversed view of `a`, a list of one broadcast.
#[test]
fn at_with_a_tuple_of_lists_matches_a_naive_loop() {
    let mut rng = Lcg(7);
    let mut next = |m: u64| rng.below(m);
    let n = 500;
    let rows: Vec<i64> = (0..n).map(|_| next(9) as i64 - 4).collect();
    let cols = Array1::from_iter((0..n).map(|_| next(7) as i32));
    let weights = Array1::from_iter((0..n).map(|_| next(1000) as i64));
    let mut hist = Array::<i64, _>::zeros((5, 7));
    let mut want = hist.clone();
    add_i64::at(hist.slice_mut(s![..;-1, ..]), (&rows, &cols), &weights).unwrap();
    for k in 0..n {
        let r = (rows[k] + 5) % 5;
        want[[4 - r as usize, cols[k] as usize]] += weights[k];
    }
    assert_eq!(hist, want);
    // A list of one broadcasts: column 3 of every listed row, `b` (n, 2) into a 3-d `a`.
    let mut a = Array::<i64, _>::zeros((5, 7, 2));
    let mut want = a.clone();
    let b = Array::from_shape_fn((n, 2), |(k, j)| weights[k] * (j as i64 + 1));
    add_i64::at(&mut a, (&rows[..], &[3u8]), &b).unwrap();
    for k in 0..n {
        for j in 0..2 {
            want[[((rows[k] + 5) % 5) as usize, 3, j]] += b[[k, j]];
        }
    }
    assert_eq!(a, want);
    // Errors name the axis and the lists; nothing is applied.
    let before = a.clone();
    let e = add_i64::at(&mut a, (&[0, 1], &[0, 7]), 1i64).unwrap_err();
    assert_eq!(
        e.to_string(),
        "`add_i64::at`: index 7 is out of bounds for axis 1 with size 7"
    );
    let e = add_i64::at(&mut a, (&[0, 1], &[0, 1, 2]), 1i64).unwrap_err();
    assert!(
        e.to_string()
            .contains("could not be broadcast together with shapes (2,) (3,)"),
        "{e}"
    );
    let e = add_i64::at(&mut a, (&[0], &[0], &[0], &[0]), 1i64).unwrap_err();
    assert!(
        e.to_string().contains("3-dimensional, but 4 were indexed"),
        "{e}"
    );
    assert_eq!(a, before);
}

#[test]
fn the_cuda_target_is_refused_for_host_methods() {
    #[vectorize(targets = ["cpu"], associative = true)]
    fn min_i32(a: i32, b: i32) -> i32 {
        a.min(b)
    }
    assert!(matches!(
        min_i32::reduce_on(Target::Parallel, &array![1, 2], 0),
        Err(Error::TargetNotCompiled { .. })
    ));
    assert_eq!(
        min_i32::reduce(&array![[4, 2], [3, 5]], Axes::All).unwrap()[[]],
        2
    );
    assert_eq!(
        min_i32::accumulate(&array![4, 2, 3], 0).unwrap(),
        array![4, 2, 2]
    );
}
