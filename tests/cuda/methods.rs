//! The ufunc methods on the `cuda` target against the CPU's: `reduce` over every axis set of
//! several shapes (device arrays, strided and permuted device views, host arrays), the
//! two-pass path (many elements per output), empty and length-1 axes, NaN propagation,
//! integer wrapping, float sums within the stated bound, `accumulate` and `outer`.

use super::on_gpu;
use ndarray::{s, Array, ArrayD, IxDyn, ShapeBuilder};
use ufunc::cuda::to_device;
use ufunc::prelude::*;
use ufunc::Axes;

#[vectorize(targets = ["cpu", "cuda"], identity = 0.0)]
pub(crate) fn cuda_add_f32(a: f32, b: f32) -> f32 {
    a + b
}

#[vectorize(targets = ["cpu", "cuda"], identity = 0)]
pub(crate) fn cuda_add_i64(a: i64, b: i64) -> i64 {
    a.wrapping_add(b)
}

#[vectorize(targets = ["cpu", "cuda"], identity = 1)]
pub(crate) fn cuda_mul_i32(a: i32, b: i32) -> i32 {
    a.wrapping_mul(b)
}

/// NumPy's `maximum`: NaN propagates. No identity: an empty reduction is an error. Reorderable,
/// as NumPy's.
#[vectorize(targets = ["cpu", "cuda"], associative = true)]
pub(crate) fn cuda_maximum(a: f64, b: f64) -> f64 {
    if a > b || a.is_nan() {
        a
    } else {
        b
    }
}

/// NumPy's `fmax`: NaN is skipped.
#[vectorize(targets = ["cpu", "cuda"], identity = f64::NAN)]
pub(crate) fn cuda_fmax(a: f64, b: f64) -> f64 {
    a.max(b)
}

/// Updates that do not commute: `at` must apply repeated indices in order.
#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn cuda_shift_in(a: i64, b: i64) -> i64 {
    a.wrapping_mul(2).wrapping_add(b)
}

/// Panics on a zero element (integer division). Declared associative (it is not) so that its
/// reductions take the regrouped paths, two passes among them, whose panics the tests follow.
#[vectorize(targets = ["cpu", "cuda"], associative = true)]
pub(crate) fn cuda_add_inverse(a: i64, b: i64) -> i64 {
    a.wrapping_add(1_000_000 / b)
}

/// Associative but not commutative: the affine map `x -> a x + b` modulo 2^16 (`a` in the low
/// half, `b` in the high half) of `p`, then that of `q`. A scan that combined any pair out of
/// order would change the result.
#[vectorize(targets = ["cpu", "cuda"], associative = true)]
pub(crate) fn cuda_then_affine(p: u32, q: u32) -> u32 {
    let a = (p & 0xFFFF).wrapping_mul(q & 0xFFFF) & 0xFFFF;
    let b = (q & 0xFFFF).wrapping_mul(p >> 16).wrapping_add(q >> 16) & 0xFFFF;
    a | (b << 16)
}

/// Float addition declared associative: its device accumulation of long runs is a blocked scan.
#[vectorize(targets = ["cpu", "cuda"], identity = 0.0, associative = true)]
pub(crate) fn cuda_add_f32_assoc(a: f32, b: f32) -> f32 {
    a + b
}

/// The sources of the functions above, for the NVRTC test.
pub(crate) fn sources() -> Vec<(&'static str, String)> {
    vec![
        ("cuda_add_f32", cuda_add_f32::cuda_source()),
        ("cuda_add_i64", cuda_add_i64::cuda_source()),
        ("cuda_mul_i32", cuda_mul_i32::cuda_source()),
        ("cuda_maximum", cuda_maximum::cuda_source()),
        ("cuda_fmax", cuda_fmax::cuda_source()),
        ("cuda_shift_in", cuda_shift_in::cuda_source()),
        ("cuda_add_inverse", cuda_add_inverse::cuda_source()),
        ("cuda_then_affine", cuda_then_affine::cuda_source()),
        ("cuda_add_f32_assoc", cuda_add_f32_assoc::cuda_source()),
    ]
}

/// Every list of distinct axes of `ndim` dimensions (each subset, and one reversed order).
fn axis_sets(ndim: usize) -> Vec<Vec<isize>> {
    let mut sets = Vec::new();
    for mask in 0..1u32 << ndim {
        let set: Vec<isize> = (0..ndim as isize).filter(|&i| mask >> i & 1 == 1).collect();
        sets.push(set.iter().rev().copied().collect());
        sets.push(set);
    }
    sets
}

fn values_i64(shape: &[usize]) -> ArrayD<i64> {
    let mut k = 0i64;
    Array::from_shape_simple_fn(IxDyn(shape), || {
        k += 1;
        (k * 7919) % 2001 - 1000
    })
}

#[test]
fn integer_reductions_match_the_cpu_over_every_axis_set() {
    on_gpu(
        "integer_reductions_match_the_cpu_over_every_axis_set",
        || {
            for shape in [&[7][..], &[5, 6], &[3, 4, 5], &[2, 3, 1, 4]] {
                let a = values_i64(shape);
                let d = to_device(&a).unwrap();
                for axes in axis_sets(shape.len()) {
                    let want = cuda_add_i64::reduce_on(Target::Cpu, &a, axes.clone()).unwrap();
                    let got = cuda_add_i64::reduce_device(&d, axes.clone()).unwrap();
                    assert_eq!(got.copy_to_host().unwrap(), want, "{shape:?} {axes:?}");
                    let host = cuda_add_i64::reduce_on(Target::Cuda, &a, axes.clone()).unwrap();
                    assert_eq!(host, want, "host {shape:?} {axes:?}");
                    let kept = cuda_add_i64::reduce_device_keepdims(&d, axes.clone()).unwrap();
                    let want_kept = cuda_add_i64::reduce_keepdims(&a, axes.clone()).unwrap();
                    assert_eq!(
                        kept.copy_to_host().unwrap(),
                        want_kept,
                        "{shape:?} {axes:?}"
                    );
                    let host_kept =
                        cuda_add_i64::reduce_keepdims_on(Target::Cuda, &a, axes.clone()).unwrap();
                    assert_eq!(host_kept, want_kept, "host {shape:?} {axes:?}");
                }
                let all = cuda_add_i64::reduce_device(&d, Axes::All).unwrap();
                assert_eq!(all.copy_to_host().unwrap()[[]], a.sum());
            }
        },
    );
}

/// `cuda_shift_in` (`2a + b`) is not reorderable: the device folds each output in order, as
/// the CPU does (NumPy's order), on inner, outer, strided and long axes; several axes are
/// refused.
#[test]
fn a_function_not_reorderable_reduces_in_order_on_the_device() {
    on_gpu(
        "a_function_not_reorderable_reduces_in_order_on_the_device",
        || {
            let a = values_i64(&[6, 40]);
            let d = to_device(&a).unwrap();
            let rev = a.slice(s![..;-1, 1..;3]);
            let drev = d.view().slice(s![..;-1, 1..;3]).unwrap();
            for axis in [0isize, 1, -1] {
                let want = cuda_shift_in::reduce_on(Target::Cpu, &a, axis).unwrap();
                let got = cuda_shift_in::reduce_device(&d, axis).unwrap();
                assert_eq!(got.copy_to_host().unwrap(), want, "axis {axis}");
                let host = cuda_shift_in::reduce_on(Target::Cuda, &a, axis).unwrap();
                assert_eq!(host, want, "host, axis {axis}");
                let want = cuda_shift_in::reduce_on(Target::Cpu, rev, axis).unwrap();
                let got = cuda_shift_in::reduce_device(drev.clone(), axis).unwrap();
                assert_eq!(got.copy_to_host().unwrap(), want, "view, axis {axis}");
            }
            // Long enough that a reorderable function would take two passes.
            let long = values_i64(&[30_000]);
            let mut want = long[0];
            for &x in long.iter().skip(1) {
                want = cuda_shift_in::scalar(want, x);
            }
            let got = cuda_shift_in::reduce_device(&to_device(&long).unwrap(), 0).unwrap();
            assert_eq!(got.copy_to_host().unwrap()[[]], want);
            for axes in [Axes::All, Axes::from([0, 1])] {
                let e = cuda_shift_in::reduce_device(&d, axes.clone()).unwrap_err();
                assert!(matches!(e, ufunc::Error::NotReorderable { .. }), "{e}");
                let e = cuda_shift_in::reduce_on(Target::Cuda, &a, axes).unwrap_err();
                assert!(matches!(e, ufunc::Error::NotReorderable { .. }), "{e}");
            }
        },
    );
}

#[test]
fn strided_and_permuted_device_views_reduce_as_their_host_views() {
    on_gpu(
        "strided_and_permuted_device_views_reduce_as_their_host_views",
        || {
            let a = values_i64(&[6, 9, 5]);
            let d = to_device(&a).unwrap();
            let dv = d.view().slice(s![1..;2, ..;-2, ..]).unwrap();
            let hv = a.slice(s![1..;2, ..;-2, ..]);
            let dp = dv.clone().permuted_axes([2, 0, 1]).unwrap();
            let hp = hv.permuted_axes([2, 0, 1]);
            for axes in axis_sets(3) {
                let want = cuda_add_i64::reduce_on(Target::Cpu, hv, axes.clone()).unwrap();
                let got = cuda_add_i64::reduce_device(dv.clone(), axes.clone()).unwrap();
                assert_eq!(got.copy_to_host().unwrap(), want, "{axes:?}");
                let want = cuda_add_i64::reduce_on(Target::Cpu, hp, axes.clone()).unwrap();
                let got = cuda_add_i64::reduce_device(&dp, axes.clone()).unwrap();
                assert_eq!(got.copy_to_host().unwrap(), want, "permuted {axes:?}");
            }
        },
    );
}

#[test]
fn many_elements_per_output_take_two_passes_and_agree() {
    on_gpu("many_elements_per_output_take_two_passes_and_agree", || {
        // 3 outputs of 20000 elements: blocks over chunks, then a warp over the partials;
        // inner (axis 1) and outer (axis 0 of the transpose) reductions, and all axes.
        let a = values_i64(&[3, 20000]);
        let d = to_device(&a).unwrap();
        for (axes, view) in [(1, false), (0, true)] {
            let (want, got) = if view {
                let t = a.t();
                let dt = d.view().t();
                (
                    cuda_add_i64::reduce_on(Target::Cpu, &t, axes).unwrap(),
                    cuda_add_i64::reduce_device(dt, axes).unwrap(),
                )
            } else {
                (
                    cuda_add_i64::reduce_on(Target::Cpu, &a, axes).unwrap(),
                    cuda_add_i64::reduce_device(&d, axes).unwrap(),
                )
            };
            assert_eq!(
                got.copy_to_host().unwrap(),
                want,
                "axis {axes}, view {view}"
            );
        }
        let all = cuda_add_i64::reduce_device(&d, Axes::All).unwrap();
        assert_eq!(all.copy_to_host().unwrap()[[]], a.sum());
    });
}

#[test]
fn a_panic_in_a_two_pass_reduction_is_an_error_of_that_call_only() {
    on_gpu(
        "a_panic_in_a_two_pass_reduction_is_an_error_of_that_call_only",
        || {
            // 20000 elements a row: two passes, the zero met in the first.
            let mut zero = Array::from_elem((2, 20000), 1i64);
            zero[[1, 12345]] = 0;
            let d = to_device(&zero).unwrap();
            for axes in [Axes::All, Axes::from(1)] {
                let before = ufunc::cuda::cuda_counters();
                let e = cuda_add_inverse::reduce_device(&d, axes.clone()).unwrap_err();
                // The output, the partials, the two passes' geometry and one status word
                // that both passes share (one wait, one read of it).
                let allocations = ufunc::cuda::cuda_counters().allocations - before.allocations;
                assert_eq!(allocations, 5, "{axes:?}");
                assert!(
                    matches!(&e, ufunc::Error::KernelPanic { message, .. }
                        if message.contains("divide by zero")),
                    "{e}"
                );
                // The next call on the same queue starts clean.
                let got = cuda_add_i64::reduce_device(&d, axes.clone()).unwrap();
                let want = cuda_add_i64::reduce_on(Target::Cpu, &zero, axes).unwrap();
                assert_eq!(got.copy_to_host().unwrap(), want);
            }
        },
    );
}

#[test]
fn float_sums_are_within_the_stated_bound_of_the_cpu() {
    on_gpu("float_sums_are_within_the_stated_bound_of_the_cpu", || {
        let mut k = 0u32;
        let a = Array::from_shape_simple_fn(IxDyn(&[4, 30000]), || {
            k = k.wrapping_mul(1664525).wrapping_add(1013904223);
            (k >> 8) as f32 / (1u32 << 24) as f32 - 0.3
        });
        let d = to_device(&a).unwrap();
        for axes in [vec![0], vec![1], vec![0, 1]] {
            let cpu = cuda_add_f32::reduce_on(Target::Cpu, &a, axes.clone()).unwrap();
            let gpu = cuda_add_f32::reduce_device(&d, axes.clone()).unwrap();
            let abs =
                cuda_add_f32::reduce_on(Target::Cpu, &a.mapv(f32::abs), axes.clone()).unwrap();
            let n = axes
                .iter()
                .map(|&i| a.shape()[i as usize])
                .product::<usize>() as f32;
            for ((c, g), s) in cpu.iter().zip(gpu.copy_to_host().unwrap().iter()).zip(&abs) {
                let bound = 2.0 * n * f32::EPSILON * s;
                assert!(
                    (c - g).abs() <= bound,
                    "{axes:?}: {c} vs {g} (bound {bound})"
                );
            }
        }
    });
}

/// 10^7 float32 summed on the device: 0/1 values, whose every partial sum is an exact float32
/// integer, give the exact count (a missing or doubled element would show); uniform values are
/// within 1e-5 of the exact f64 sum (each thread's running sum is a short chain; the stated
/// worst case, `n eps sum|x|`, says nothing at this size).
#[test]
fn a_sum_of_ten_million_float32_counts_every_element() {
    on_gpu("a_sum_of_ten_million_float32_counts_every_element", || {
        let n = 10_000_000;
        let mut k = 0u32;
        let mut next = move || {
            k = k.wrapping_mul(1664525).wrapping_add(1013904223);
            k >> 8
        };
        let bits = ndarray::Array1::from_shape_simple_fn(n, || (next() & 1) as f32);
        let total = cuda_add_f32::reduce_device(&to_device(&bits).unwrap(), Axes::All).unwrap();
        let exact: f64 = bits.iter().map(|&v| v as f64).sum();
        assert_eq!(total.copy_to_host().unwrap()[[]] as f64, exact);
        let uniform = ndarray::Array1::from_shape_simple_fn(n, || next() as f32 / (1 << 24) as f32);
        let total = cuda_add_f32::reduce_device(&to_device(&uniform).unwrap(), Axes::All).unwrap();
        let exact: f64 = uniform.iter().map(|&v| v as f64).sum();
        let got = total.copy_to_host().unwrap()[[]] as f64;
        assert!((got - exact).abs() <= 1e-5 * exact, "{got} vs {exact}");
    });
}

#[test]
fn empty_and_length_one_axes_follow_the_cpu_rules() {
    on_gpu("empty_and_length_one_axes_follow_the_cpu_rules", || {
        let e = ArrayD::<i64>::zeros(IxDyn(&[3, 0, 2]));
        let d = to_device(&e).unwrap();
        for axes in axis_sets(3) {
            let want = cuda_add_i64::reduce_on(Target::Cpu, &e, axes.clone()).unwrap();
            let got = cuda_add_i64::reduce_device(&d, axes.clone()).unwrap();
            assert_eq!(got.copy_to_host().unwrap(), want, "{axes:?}");
        }
        let m = ArrayD::<f64>::zeros(IxDyn(&[2, 0]));
        let dm = to_device(&m).unwrap();
        let ones = cuda_fmax::reduce_device(&dm, 1)
            .unwrap()
            .copy_to_host()
            .unwrap();
        assert!(ones.iter().all(|v| v.is_nan()) && ones.len() == 2);
        for err in [
            cuda_maximum::reduce_device(&dm, 1).unwrap_err(),
            cuda_maximum::reduce_on(Target::Cuda, &m, 1).unwrap_err(),
        ] {
            assert!(
                matches!(err, Error::EmptyReduction { axis: 1, .. }),
                "{err}"
            );
        }
        // Nothing to write from a non-empty reduced axis: no error even without an identity;
        // from an empty one, NumPy's error, even though the result is empty.
        assert_eq!(cuda_maximum::reduce_device(&dm, 0).unwrap().shape(), &[0]);
        let none = ArrayD::<f64>::zeros(IxDyn(&[0, 0]));
        for err in [
            cuda_maximum::reduce_device(&to_device(&none).unwrap(), 1).unwrap_err(),
            cuda_maximum::reduce_on(Target::Cuda, &none, 1).unwrap_err(),
            cuda_maximum::reduce_on(Target::Cpu, &none, 1).unwrap_err(),
        ] {
            assert!(
                matches!(err, Error::EmptyReduction { axis: 1, .. }),
                "{err}"
            );
        }
        let one = values_i64(&[1, 5, 1]);
        let d1 = to_device(&one).unwrap();
        for axes in axis_sets(3) {
            let want = cuda_add_i64::reduce_on(Target::Cpu, &one, axes.clone()).unwrap();
            let got = cuda_add_i64::reduce_device(&d1, axes.clone()).unwrap();
            assert_eq!(got.copy_to_host().unwrap(), want, "{axes:?}");
        }
    });
}

#[test]
fn nan_propagates_as_the_function_says_and_integers_wrap() {
    on_gpu(
        "nan_propagates_as_the_function_says_and_integers_wrap",
        || {
            let mut a = Array::from_shape_fn(IxDyn(&[4, 50]), |i| (i[0] * 50 + i[1]) as f64);
            a[[1, 17]] = f64::NAN;
            a[[3, 0]] = f64::NAN;
            let d = to_device(&a).unwrap();
            for axes in [vec![0], vec![1], vec![0, 1]] {
                for (name, cpu, gpu) in [
                    (
                        "maximum",
                        cuda_maximum::reduce_on(Target::Cpu, &a, axes.clone()).unwrap(),
                        cuda_maximum::reduce_device(&d, axes.clone()).unwrap(),
                    ),
                    (
                        "fmax",
                        cuda_fmax::reduce_on(Target::Cpu, &a, axes.clone()).unwrap(),
                        cuda_fmax::reduce_device(&d, axes.clone()).unwrap(),
                    ),
                ] {
                    let gpu = gpu.copy_to_host().unwrap();
                    for (c, g) in cpu.iter().zip(&gpu) {
                        assert!(
                            c == g || c.is_nan() && g.is_nan(),
                            "{name} {axes:?}: {cpu} {gpu}"
                        );
                    }
                }
            }
            let big = Array::from_shape_fn(IxDyn(&[3, 40]), |i| 1_000_003 * (i[1] as i32 + 2));
            let db = to_device(&big).unwrap();
            for axes in [vec![0], vec![1], vec![]] {
                let want = cuda_mul_i32::reduce_on(Target::Cpu, &big, axes.clone()).unwrap();
                let got = cuda_mul_i32::reduce_device(&db, axes.clone()).unwrap();
                assert_eq!(got.copy_to_host().unwrap(), want, "{axes:?}");
            }
        },
    );
}

#[test]
fn reduce_out_device_takes_either_shape_and_checks_it() {
    on_gpu("reduce_out_device_takes_either_shape_and_checks_it", || {
        let a = values_i64(&[4, 3, 5]);
        let d = to_device(&a).unwrap();
        let want = cuda_add_i64::reduce_on(Target::Cpu, &a, [0, 2]).unwrap();
        let mut out = ufunc::cuda::device_array::<i64, _>(IxDyn(&[3])).unwrap();
        cuda_add_i64::reduce_out_device(&d, [0, 2], &mut out).unwrap();
        assert_eq!(out.copy_to_host().unwrap(), want);
        let mut kept = ufunc::cuda::device_array::<i64, _>((1, 3, 1)).unwrap();
        cuda_add_i64::reduce_out_device(&d, [0, 2], &mut kept).unwrap();
        assert_eq!(
            kept.copy_to_host().unwrap().into_dyn(),
            want.into_shape_with_order(IxDyn(&[1, 3, 1])).unwrap()
        );
        let mut wrong = ufunc::cuda::device_array::<i64, _>((4,)).unwrap();
        let err = cuda_add_i64::reduce_out_device(&d, [0, 2], &mut wrong).unwrap_err();
        assert!(matches!(err, Error::ReducedShape { .. }), "{err}");
        let err = cuda_add_i64::reduce_device(&d, [0, 0]).unwrap_err();
        assert!(matches!(err, Error::MethodRepeatedAxis { .. }), "{err}");
        let err = cuda_add_i64::reduce_device(&d, 3).unwrap_err();
        assert!(matches!(err, Error::MethodAxis { .. }), "{err}");
        // NumPy's legacy rule: a lone axis 0 of a 0-d array reduces nothing; `[0]` is refused.
        let zero_d = to_device(&ndarray::arr0(5i64)).unwrap();
        for axis in [0, -1] {
            let got = cuda_add_i64::reduce_device(&zero_d, axis).unwrap();
            assert_eq!(got.copy_to_host().unwrap()[[]], 5);
        }
        let err = cuda_add_i64::reduce_device(&zero_d, [0]).unwrap_err();
        assert!(matches!(err, Error::MethodAxis { ndim: 0, .. }), "{err}");
    });
}

/// The running `f` along `axis` of `a`, applied strictly in order.
fn running_in_order(a: &ArrayD<u32>, axis: usize, f: fn(u32, u32) -> u32) -> ArrayD<u32> {
    let mut out = a.clone();
    for mut lane in out.lanes_mut(ndarray::Axis(axis)) {
        for i in 1..lane.len() {
            lane[i] = f(lane[i - 1], lane[i]);
        }
    }
    out
}

/// An associative function accumulated along long runs takes the blocked scan (chunks'
/// totals, their running values, each chunk scanned from the one before): every pair still
/// combined in order (a function that does not commute), at lengths around the chunks' and
/// the tiles' edges, along inner, outer and reversed axes.
#[test]
fn a_long_associative_accumulation_is_a_blocked_scan_in_order() {
    on_gpu(
        "a_long_associative_accumulation_is_a_blocked_scan_in_order",
        || {
            let values = |shape: &[usize]| {
                let mut k = 0u32;
                Array::from_shape_simple_fn(IxDyn(shape), || {
                    k = k.wrapping_add(1);
                    k.wrapping_mul(2_654_435_761) | 1
                })
            };
            for shape in [
                &[8192][..],
                &[8193],
                &[3 * 8192 + 5],
                &[2, 17_000],
                &[17_000, 2],
            ] {
                let a = values(shape);
                let d = to_device(&a).unwrap();
                for axis in 0..shape.len() {
                    let want = running_in_order(&a, axis, cuda_then_affine::scalar);
                    let before = ufunc::cuda::cuda_counters().allocations;
                    let got = cuda_then_affine::accumulate_device(&d, axis as isize).unwrap();
                    // The output, its geometry and the status word; with the blocked scan the
                    // carries, and with two chunks or more a row their totals and geometry.
                    let allocations = ufunc::cuda::cuda_counters().allocations - before;
                    let expected = match shape[axis] {
                        ..8192 => 3,
                        8192..16384 => 4,
                        _ => 6,
                    };
                    assert_eq!(allocations, expected, "{shape:?} axis {axis}");
                    assert_eq!(got.copy_to_host().unwrap(), want, "{shape:?} axis {axis}");
                    let host = cuda_then_affine::accumulate_on(Target::Cuda, &a, axis as isize);
                    assert_eq!(host.unwrap(), want, "host {shape:?} axis {axis}");
                }
            }
            let a = values(&[3, 51_000]);
            let hv = a.slice(s![..;-1, ..;-3]).to_owned().into_dyn();
            let dv = to_device(&a).unwrap();
            let dv = dv.view().slice(s![..;-1, ..;-3]).unwrap();
            let got = cuda_then_affine::accumulate_device(dv, 1).unwrap();
            let want = running_in_order(&hv, 1, cuda_then_affine::scalar);
            let got = got.copy_to_host().unwrap().into_dyn();
            assert_eq!(got, want, "reversed strided view");
            // A function not declared associative runs in order, a thread a row.
            let long = values_i64(&[3 * 8192 + 5]);
            let d = to_device(&long).unwrap();
            let before = ufunc::cuda::cuda_counters().allocations;
            let got = cuda_add_i64::accumulate_device(&d, 0).unwrap();
            assert_eq!(ufunc::cuda::cuda_counters().allocations - before, 3);
            let want = cuda_add_i64::accumulate_on(Target::Cpu, &long, 0).unwrap();
            assert_eq!(got.copy_to_host().unwrap(), want);
            // A float sum of ones and halves: exact in f32 at every step either way.
            let x = Array::from_shape_fn(IxDyn(&[100_000]), |i| [1.0f32, 0.5][i[0] % 2]);
            let got = cuda_add_f32_assoc::accumulate_device(&to_device(&x).unwrap(), 0).unwrap();
            let got = got.copy_to_host().unwrap();
            let want = cuda_add_f32_assoc::accumulate_on(Target::Cpu, &x, 0).unwrap();
            assert_eq!(got, want);
            assert_eq!(got[[99_999]], 75_000.0);
        },
    );
}

/// The methods queued on a stream: nothing waits until the stream is synchronised, then the
/// results are the default queue's; a panic of the function is that synchronisation's error.
#[test]
fn methods_queued_on_a_stream_agree_once_it_is_synchronised() {
    on_gpu(
        "methods_queued_on_a_stream_agree_once_it_is_synchronised",
        || {
            let stream = ufunc::cuda::Stream::new().unwrap();
            let a = values_i64(&[3, 20_000]);
            let d = to_device(&a).unwrap();
            let sums = cuda_add_i64::reduce_stream(&stream, &d, 1).unwrap();
            let kept = cuda_add_i64::reduce_stream_keepdims(&stream, &d, Axes::All).unwrap();
            let mut total = ufunc::cuda::device_array::<i64, _>(()).unwrap();
            cuda_add_i64::reduce_out_stream(&stream, &d, Axes::All, &mut total).unwrap();
            let running = cuda_add_i64::accumulate_stream(&stream, &d, 1).unwrap();
            let pairs =
                cuda_add_i64::outer_stream(&stream, d.view().slice(s![.., ..2]).unwrap(), 5i64)
                    .unwrap();
            stream.synchronize().unwrap();
            let want = |axes| cuda_add_i64::reduce_on(Target::Cpu, &a, axes).unwrap();
            assert_eq!(sums.copy_to_host().unwrap(), want(Axes::from(1)));
            assert_eq!(kept.copy_to_host().unwrap().shape(), &[1, 1]);
            assert_eq!(kept.copy_to_host().unwrap()[[0, 0]], a.sum());
            assert_eq!(total.copy_to_host().unwrap()[()], a.sum());
            let want = cuda_add_i64::accumulate_on(Target::Cpu, &a, 1).unwrap();
            assert_eq!(running.copy_to_host().unwrap(), want);
            let want = cuda_add_i64::outer_on(Target::Cpu, a.slice(s![.., ..2]), 5i64).unwrap();
            assert_eq!(pairs.copy_to_host().unwrap(), want);
            // The blocked scan of a long row, and an empty reduction's identity, on the stream.
            let long = Array::from_shape_fn(20_000, |i| (i as u32).wrapping_mul(2_654_435_761) | 1);
            let scanned =
                cuda_then_affine::accumulate_stream(&stream, &to_device(&long).unwrap(), 0)
                    .unwrap();
            let empty = to_device(&Array::<i64, _>::zeros((3, 0))).unwrap();
            let identity = cuda_add_i64::reduce_stream(&stream, &empty, 1).unwrap();
            stream.synchronize().unwrap();
            let mut want = long.clone();
            for i in 1..want.len() {
                want[i] = cuda_then_affine::scalar(want[i - 1], want[i]);
            }
            assert_eq!(scanned.copy_to_host().unwrap(), want);
            assert_eq!(
                identity.copy_to_host().unwrap(),
                Array::<i64, _>::zeros(3).into_dyn()
            );
            // A panic in each form is queued without an error, then reported by the sync.
            let mut zero = Array::from_elem((2, 100), 1i64);
            zero[[1, 50]] = 0;
            let dz = to_device(&zero).unwrap();
            let mut out = ufunc::cuda::device_array::<i64, _>(2).unwrap();
            type Queued<'a> = Box<dyn FnMut() -> ufunc::Result<()> + 'a>;
            let mut forms: Vec<(&str, Queued<'_>)> = vec![
                (
                    "reduce_stream",
                    Box::new(|| cuda_add_inverse::reduce_stream(&stream, &dz, 1).map(drop)),
                ),
                (
                    "reduce_stream_keepdims",
                    Box::new(|| {
                        cuda_add_inverse::reduce_stream_keepdims(&stream, &dz, 1).map(drop)
                    }),
                ),
                (
                    "accumulate_stream",
                    Box::new(|| cuda_add_inverse::accumulate_stream(&stream, &dz, 1).map(drop)),
                ),
                (
                    "outer_stream",
                    Box::new(|| cuda_add_inverse::outer_stream(&stream, &dz, 0i64).map(drop)),
                ),
                (
                    "reduce_out_stream",
                    Box::new(|| cuda_add_inverse::reduce_out_stream(&stream, &dz, 1, &mut out)),
                ),
            ];
            for (name, queue) in &mut forms {
                let queued = queue();
                assert!(queued.is_ok(), "{name} queued without waiting: {queued:?}");
                let e = stream.synchronize().unwrap_err();
                assert!(
                    matches!(&e, ufunc::Error::KernelPanic { message, .. } if message.contains("divide by zero")),
                    "{name}: {e}"
                );
            }
            stream.synchronize().unwrap();
        },
    );
}

/// An array read by reductions queued on a stream, then read on the default queue and dropped
/// at once, is not freed under the stream's reads: new memory of its size, zeroed on the
/// device right away, must not change what the queued reductions see. On a GPU the arrays
/// are large (256 MiB) and the reductions many (200, queued ahead of the drop), so that the
/// stream is still reading when the memory would be reused; the simulator runs everything at
/// once. (Expected to fail on a GPU without the reader events of the GPU backend: not yet
/// confirmed on one.)
#[test]
fn memory_read_on_a_stream_outlives_its_reads_when_dropped() {
    on_gpu(
        "memory_read_on_a_stream_outlives_its_reads_when_dropped",
        || {
            let simulated = std::env::var("UFUNC_CUDA_SIM").is_ok_and(|v| v == "1");
            let (n, reads) = if simulated { (4096, 4) } else { (1 << 25, 200) };
            let stream = ufunc::cuda::Stream::new().unwrap();
            let ones = to_device(&Array::from_elem(n, 1i64)).unwrap();
            let sums: Vec<_> = (0..reads)
                .map(|_| cuda_add_i64::reduce_stream(&stream, &ones, 0).unwrap())
                .collect();
            // The latest read of `ones` is now the default queue's.
            assert_eq!(
                ones.view().slice(s![..1]).unwrap().copy_to_host().unwrap()[0],
                1
            );
            drop(ones);
            // Device-speed work that reuses freed memory on the default queue: a zeroed array.
            let zeros = ufunc::cuda::device_array::<i64, _>(n).unwrap();
            stream.synchronize().unwrap();
            for sum in &sums {
                assert_eq!(sum.copy_to_host().unwrap()[[]], n as i64);
            }
            drop(zeros);
        },
    );
}

#[test]
fn accumulate_and_outer_match_the_cpu() {
    on_gpu("accumulate_and_outer_match_the_cpu", || {
        let a = values_i64(&[3, 4, 5]);
        let d = to_device(&a).unwrap();
        let v = d.view().slice(s![.., ..;-1, 1..]).unwrap();
        let hv = a.slice(s![.., ..;-1, 1..]);
        for axis in [0, 1, 2, -1] {
            let want = cuda_add_i64::accumulate_on(Target::Cpu, &a, axis).unwrap();
            let got = cuda_add_i64::accumulate_device(&d, axis).unwrap();
            assert_eq!(got.copy_to_host().unwrap(), want, "axis {axis}");
            let host = cuda_add_i64::accumulate_on(Target::Cuda, &a, axis).unwrap();
            assert_eq!(host, want, "host axis {axis}");
            // Into a host array of another layout (Fortran order) and a reversed view of one.
            let mut out = ArrayD::<i64>::zeros(IxDyn(&[3, 4, 5]).f());
            cuda_add_i64::accumulate_out_on(Target::Cuda, &a, axis, &mut out).unwrap();
            assert_eq!(out, want, "out axis {axis}");
            let mut buf = ArrayD::<i64>::zeros(IxDyn(&[3, 4, 5]));
            cuda_add_i64::accumulate_out_on(
                Target::Cuda,
                &a,
                axis,
                buf.slice_mut(s![.., ..;-1, ..]),
            )
            .unwrap();
            assert_eq!(
                buf.slice(s![.., ..;-1, ..]).into_dyn(),
                want,
                "reversed out axis {axis}"
            );
            let want = cuda_add_i64::accumulate_on(Target::Cpu, &hv, axis).unwrap();
            let got = cuda_add_i64::accumulate_device(v.clone(), axis).unwrap();
            assert_eq!(got.copy_to_host().unwrap(), want, "view axis {axis}");
        }
        let e = ArrayD::<i64>::zeros(IxDyn(&[2, 0]));
        assert_eq!(
            cuda_add_i64::accumulate_on(Target::Cuda, &e, 1)
                .unwrap()
                .shape(),
            &[2, 0]
        );
        let x = values_i64(&[3, 2]);
        let y = values_i64(&[4]);
        let want = cuda_add_i64::outer_on(Target::Cpu, &x, y.slice(s![..;-1])).unwrap();
        let got = cuda_add_i64::outer_on(Target::Cuda, &x, y.slice(s![..;-1])).unwrap();
        assert_eq!(got, want);
        assert_eq!(got.shape(), &[3, 2, 4]);
        let (dx, dy) = (to_device(&x).unwrap(), to_device(&y).unwrap());
        let dev = cuda_add_i64::outer_device(dx.view().t(), dy.view().slice(s![..;-1]).unwrap());
        let want = cuda_add_i64::outer_on(Target::Cpu, x.t(), y.slice(s![..;-1])).unwrap();
        assert_eq!(dev.unwrap().copy_to_host().unwrap(), want);
        let scalar = cuda_add_i64::outer_device(&dx, 5i64).unwrap();
        assert_eq!(scalar.copy_to_host().unwrap(), x.mapv(|v| v + 5));
    });
}

#[test]
fn at_device_applies_repeated_indices_in_order_as_the_cpu() {
    on_gpu(
        "at_device_applies_repeated_indices_in_order_as_the_cpu",
        || {
            let a = values_i64(&[5, 3, 4]);
            let idx = [0i32, 4, -1, 2, 0, 0];
            let b = values_i64(&[6, 1, 4]);
            let mut want = a.clone();
            cuda_add_i64::at(&mut want, &idx, &b).unwrap();
            let mut d = to_device(&a).unwrap();
            let db = to_device(&b).unwrap();
            cuda_add_i64::at_device(&mut d, &idx, db.view().slice(s![.., .., ..]).unwrap())
                .unwrap();
            assert_eq!(d.copy_to_host().unwrap(), want);
            // Order matters where updates do not commute (`2a + b`): a repeated index takes
            // its rows of `b` in order.
            let mut want = a.clone();
            cuda_shift_in::at(&mut want, &idx, &b).unwrap();
            let mut d = to_device(&a).unwrap();
            cuda_shift_in::at_device(&mut d, &idx, &db).unwrap();
            assert_eq!(d.copy_to_host().unwrap(), want);
            // A scalar `b` on wrapping integers.
            let a32 = a.mapv(|v| v as i32 * 1_000_003);
            let mut want32 = a32.clone();
            cuda_mul_i32::at(&mut want32, &idx, 3i32).unwrap();
            let mut d = to_device(&a32).unwrap();
            cuda_mul_i32::at_device(&mut d, &idx, 3i32).unwrap();
            assert_eq!(d.copy_to_host().unwrap(), want32);
            // A host `b`, copied in.
            let mut d = to_device(&a).unwrap();
            cuda_add_i64::at_device(&mut d, &idx, &b).unwrap();
            let mut want = a.clone();
            cuda_add_i64::at(&mut want, &idx, &b).unwrap();
            assert_eq!(d.copy_to_host().unwrap(), want);
            // A tuple of lists (rows and columns), `b` over the last axis; then a list of one
            // broadcast.
            let (rows, cols) = (vec![4i64, 0, -1, 4, 1], [2u8, 0, 2, 2, 1]);
            let b2 = values_i64(&[5, 4]);
            let mut want = a.clone();
            cuda_shift_in::at(&mut want, (&rows, &cols), &b2).unwrap();
            let mut d = to_device(&a).unwrap();
            cuda_shift_in::at_device(&mut d, (&rows, &cols), &to_device(&b2).unwrap()).unwrap();
            assert_eq!(d.copy_to_host().unwrap(), want);
            let mut want = a.clone();
            cuda_add_i64::at(&mut want, (&rows[..], &[1]), 7i64).unwrap();
            let mut d = to_device(&a).unwrap();
            cuda_add_i64::at_device(&mut d, (&rows[..], &[1]), 7i64).unwrap();
            assert_eq!(d.copy_to_host().unwrap(), want);
            // Every axis indexed (a 3-d histogram: a sub-array of one element), and `()`.
            let planes = [1usize, 4, 1, 0];
            let mut want = a.clone();
            cuda_shift_in::at(
                &mut want,
                (&planes, &[2, 0, 2, 1], &[3i8]),
                &ndarray::array![5i64, 6, 7, 8],
            )
            .unwrap();
            let mut d = to_device(&a).unwrap();
            cuda_shift_in::at_device(
                &mut d,
                (&planes, &[2, 0, 2, 1], &[3i8]),
                &ndarray::array![5i64, 6, 7, 8],
            )
            .unwrap();
            assert_eq!(d.copy_to_host().unwrap(), want);
            let row = values_i64(&[4]);
            let mut want = a.clone();
            cuda_add_i64::at(&mut want, (), &row).unwrap();
            let mut d = to_device(&a).unwrap();
            cuda_add_i64::at_device(&mut d, (), &row).unwrap();
            assert_eq!(d.copy_to_host().unwrap(), want);
            // A histogram of many points over few places, each place's points (grouped on
            // the host) applied in their order, the last axis a sub-array of two.
            let ys: Vec<i64> = (0..5000i64).map(|k| (k * 7919 % 13) - 6).collect();
            let xs: Vec<u16> = (0..5000u16)
                .map(|k| (k as u32 * 104_729 % 7) as u16)
                .collect();
            let weights = values_i64(&[5000, 2]).mapv(|v| v % 5);
            let base = values_i64(&[13, 7, 2]);
            let mut hist = base.clone();
            cuda_shift_in::at(&mut hist, (&ys, &xs), &weights).unwrap();
            let mut dh = to_device(&base).unwrap();
            cuda_shift_in::at_device(&mut dh, (&ys, &xs), &to_device(&weights).unwrap()).unwrap();
            assert_eq!(dh.copy_to_host().unwrap(), hist);
            // Index arrays of two dimensions broadcast to (3, 4) points, with a `b` whose
            // offsets along the points are no multiple of the point's number; then a scalar
            // index with a reversed (strided) index view.
            let (r, c) = (
                ndarray::array![[4i64], [0], [-1]],
                ndarray::array![2u8, 0, 2, 1],
            );
            let b34 = values_i64(&[3, 1, 4]);
            let mut want = a.clone();
            cuda_shift_in::at(&mut want, (&r, &c), &b34).unwrap();
            let mut d = to_device(&a).unwrap();
            cuda_shift_in::at_device(&mut d, (&r, &c), &to_device(&b34).unwrap()).unwrap();
            assert_eq!(d.copy_to_host().unwrap(), want);
            let mut want = a.clone();
            cuda_shift_in::at(&mut want, (&r.slice(s![..;-1, ..]), &1), 9i64).unwrap();
            let mut d = to_device(&a).unwrap();
            cuda_shift_in::at_device(&mut d, (&r.slice(s![..;-1, ..]), &1), 9i64).unwrap();
            assert_eq!(d.copy_to_host().unwrap(), want);
            // `..` (NumPy's `slice(None)`): index arrays side by side keep their place in
            // `b`'s shape; separated by a `..`, the points' axis comes first.
            let b_mid = values_i64(&[5, 3, 4]);
            let mut want = a.clone();
            cuda_shift_in::at(&mut want, (.., &[1, 2, 1], ..), &b_mid).unwrap();
            let mut d = to_device(&a).unwrap();
            cuda_shift_in::at_device(&mut d, (.., &[1, 2, 1], ..), &b_mid).unwrap();
            assert_eq!(d.copy_to_host().unwrap(), want);
            let b_first = values_i64(&[3, 3]);
            let mut want = a.clone();
            cuda_shift_in::at(&mut want, (&[4, 0, 4], .., &[1, 2, 3]), &b_first).unwrap();
            let mut d = to_device(&a).unwrap();
            cuda_shift_in::at_device(&mut d, (&[4, 0, 4], .., &[1, 2, 3]), &b_first).unwrap();
            assert_eq!(d.copy_to_host().unwrap(), want);
            // Index arrays that broadcast to 2^40 points: an error, not an abort.
            let rows = ndarray::Array2::<i64>::zeros((1 << 20, 1));
            let cols = ndarray::Array2::<i64>::zeros((1, 1 << 20));
            let mut one = to_device(&ndarray::Array2::<i64>::zeros((1, 1))).unwrap();
            let err = cuda_add_i64::at_device(&mut one, (&rows, &cols), 1i64).unwrap_err();
            assert!(matches!(err, Error::OutOfMemory { .. }), "{err}");
            // Empty lists apply nothing.
            let none: [i64; 0] = [];
            cuda_add_i64::at_device(&mut d, (&none, &none), 1i64).unwrap();
            assert_eq!(d.copy_to_host().unwrap(), want);
            let err = cuda_add_i64::at_device(&mut d, (&[0], &[3]), 1i64).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::IndexOutOfBounds {
                        axis: 1,
                        len: 3,
                        ..
                    }
                ),
                "{err}"
            );
            let err = cuda_add_i64::at_device(&mut d, &[5], 1i64).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::IndexOutOfBounds {
                        index: 5,
                        len: 5,
                        ..
                    }
                ),
                "{err}"
            );
            assert_eq!(d.copy_to_host().unwrap(), want, "nothing touched");
        },
    );
}
