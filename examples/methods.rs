//! The ufunc methods of a `#[vectorize]` function `f(T, T) -> T`: `reduce` over chosen axes,
//! `accumulate` (in order, or regrouped for a function declared `associative = true`), `outer`
//! and `at`, each checked against a plain loop, the long ones timed on `cpu` and `parallel`.
//!
//! Run with `cargo run --release --example methods`.

use ndarray::{array, Array1, Array2, Axis};
use std::time::Instant;
use ufunc::prelude::*;

/// Addition, declared associative: `add::accumulate` may regroup it (a blocked scan, split
/// over the threads), as `add::reduce` always does (pairwise, NumPy's accuracy).
#[vectorize(targets = ["parallel", "cpu"], identity = 0.0, associative = true)]
fn add(a: f32, b: f32) -> f32 {
    a + b
}

/// An exponentially decaying sum: a recurrence, so `accumulate` must apply it in order (the
/// default without `associative`).
#[vectorize(targets = ["parallel", "cpu"])]
fn decay(acc: f32, x: f32) -> f32 {
    0.9 * acc + x
}

/// NumPy's `maximum` (NaN propagates); no identity, so reducing an empty axis is an error.
/// Declared associative (it is, and commutative but for the sign of a zero, as NumPy's), so
/// `reduce` may regroup it, as NumPy does.
#[vectorize(targets = ["parallel", "cpu"], associative = true)]
fn maximum(a: f32, b: f32) -> f32 {
    if a > b || a.is_nan() {
        a
    } else {
        b
    }
}

/// Milliseconds of the best of five runs.
fn best_ms(mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() -> Result<(), ufunc::Error> {
    // reduce: over one axis, several, or all; keepdims and out forms.
    let m = Array2::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as f32);
    assert_eq!(add::reduce(&m, 0)?, m.sum_axis(Axis(0)).into_dyn());
    assert_eq!(add::reduce(&m, [0, 1])?[[]], 66.0);
    assert_eq!(
        maximum::reduce(&m, -1)?,
        array![3.0f32, 7.0, 11.0].into_dyn()
    );
    assert_eq!(add::reduce_keepdims(&m, 1)?.shape(), &[3, 1]);
    let empty = Array2::<f32>::zeros((0, 4));
    assert_eq!(add::reduce(&empty, 0)?, Array1::zeros(4).into_dyn());
    println!(
        "maximum of no rows: {}",
        maximum::reduce(&empty, 0).unwrap_err()
    );

    // accumulate: a recurrence in order, a sum regrouped; both into `out` without allocating.
    let x = Array1::from_shape_fn(1000, |i| (i % 7) as f32);
    let mut running = x.clone();
    for i in 1..running.len() {
        running[i] += 0.9 * running[i - 1];
    }
    assert_eq!(decay::accumulate(&x, 0)?, running);
    // Not reorderable (no identity, not associative): `reduce` folds it in order, as NumPy,
    // so it ends where `accumulate` does; reducing two axes of it is an error.
    assert_eq!(decay::reduce(&x, 0)?[[]], running[999]);
    println!(
        "decay over two axes: {}",
        decay::reduce(&m, [0, 1]).unwrap_err()
    );
    let sums = add::accumulate(&x, 0)?;
    assert_eq!(sums[999], x.sum());

    // outer: every pair; at: unbuffered, a repeated index applied twice.
    assert_eq!(
        add::outer(&array![1.0f32, 2.0], &array![10.0f32, 20.0, 30.0])?,
        array![[11.0f32, 21.0, 31.0], [12.0, 22.0, 32.0]].into_dyn()
    );
    let mut hist = Array1::<f32>::zeros(4);
    add::at(&mut hist, &[1, 3, 1], 1.0f32)?;
    assert_eq!(hist, array![0.0f32, 2.0, 0.0, 1.0]);
    // A tuple of index lists addresses the leading axes, as NumPy's `np.add.at(h, (y, x), w)`:
    // a weighted 2-d histogram.
    let (y, x) = (vec![0usize, 2, 2, 1], vec![1usize, 0, 0, 1]);
    let mut hist2 = ndarray::Array2::<f32>::zeros((3, 2));
    add::at(&mut hist2, (&y, &x), &array![0.5f32, 1.0, 2.0, 4.0])?;
    assert_eq!(hist2, array![[0.0f32, 0.5], [0.0, 4.0], [3.0, 0.0]]);
    // `..` is NumPy's `slice(None)`: a column of `b` into chosen columns of every row.
    let mut m = ndarray::Array2::<f32>::zeros((2, 3));
    add::at(&mut m, (.., &[2, 0, 2]), &array![[1.0f32], [10.0]])?;
    assert_eq!(m, array![[1.0f32, 0.0, 2.0], [10.0, 0.0, 20.0]]);

    // Timings: 16M elements.
    let n = 16_000_000;
    let big = Array1::from_shape_fn(n, |i| ((i * 7919) % 1000) as f32 * 1e-3);
    let square = big.view().into_shape_with_order((4000, 4000)).unwrap();
    let mut out = Array1::<f32>::zeros(n);
    for target in [Target::Cpu, Target::Parallel] {
        let sum = best_ms(|| drop(add::reduce_on(target, &big, 0).unwrap()));
        let cols = best_ms(|| drop(add::reduce_on(target, square, 0).unwrap()));
        let scan = best_ms(|| add::accumulate_out_on(target, &big, 0, &mut out).unwrap());
        let rec = best_ms(|| drop(decay::accumulate_on(target, &big, 0).unwrap()));
        println!(
            "{target:>8}: add.reduce {sum:6.2} ms, over axis 0 of 4000x4000 {cols:6.2} ms, \
             add.accumulate into out {scan:6.2} ms, decay.accumulate (in order) {rec:6.2} ms"
        );
    }
    // The regrouped running sum against a sum in f64.
    let exact: f64 = big.iter().map(|&v| v as f64).sum();
    println!("running sum of {n}: {} (f64: {exact:.1})", out[n - 1]);
    Ok(())
}
