//! The `#[vectorize]` seeds: `foo`, `gaussian_pdf`, `polar_distance` (through a helper that
//! returns a tuple) and an `i64` `add` with broadcasting, each checked against its scalar
//! function and timed on `cpu` and `parallel`.
//!
//! Run with `cargo run --release --example vectorize`.

use ndarray::{Array1, Array2};
use std::time::Instant;
use ufunc::prelude::*;

/// sqrt(2 pi), the normal density's constant.
pub const SQRT_2PI: f32 = 2.506_628_3;

#[vectorize(targets = ["parallel", "cpu"])]
pub fn foo(a: f32, b: f32) -> f32 {
    (a + b) * (a + b)
}

#[vectorize(targets = ["parallel", "cpu"])]
pub fn gaussian_pdf(x: f32, mean: f32, sigma: f32) -> f32 {
    (-0.5 * ((x - mean) / sigma).powi(2)).exp() / (sigma * SQRT_2PI)
}

/// Polar to Cartesian coordinates: a helper the ufuncs below call.
#[kernel_fn]
pub fn polar_to_cartesian(rho: f32, theta: f32) -> (f32, f32) {
    (rho * theta.cos(), rho * theta.sin())
}

#[vectorize(targets = ["parallel", "cpu"])]
pub fn polar_distance(rho1: f32, theta1: f32, rho2: f32, theta2: f32) -> f32 {
    let (x1, y1) = polar_to_cartesian(rho1, theta1);
    let (x2, y2) = polar_to_cartesian(rho2, theta2);
    ((x1 - x2).powi(2) + (y1 - y2).powi(2)).sqrt()
}

#[vectorize(target = "cpu")]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Milliseconds of the best of `reps` runs.
fn best_ms(reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() -> Result<(), ufunc::Error> {
    let n = 16_000_000;
    println!("instruction set: {:?}", ufunc::active_isa());
    let a = Array1::from_shape_fn(n, |i| (i % 1000) as f32 * 1e-3);
    let b = Array1::from_shape_fn(n, |i| (i % 777) as f32 * 1e-3);

    let c = foo(&a, &b)?;
    assert_eq!(c[12345], foo::scalar(a[12345], b[12345]));
    for target in [Target::Cpu, Target::Parallel] {
        let ms = best_ms(5, || drop(foo::on(target, &a, &b).unwrap()));
        println!(
            "foo            (a+b)^2   n={n:>9}  {target:>8}: {ms:7.2} ms  [{}]",
            foo::KERNEL_PATH
        );
    }

    let y = gaussian_pdf(&a, 0.0f32, 1.0f32)?;
    let want = gaussian_pdf::scalar(a[999], 0.0, 1.0);
    assert!((y[999] - want).abs() <= 2.0 * f32::EPSILON * want.abs());
    for target in [Target::Cpu, Target::Parallel] {
        let ms = best_ms(5, || {
            drop(gaussian_pdf::on(target, &a, 0.0f32, 1.0f32).unwrap())
        });
        println!(
            "gaussian_pdf   scalars   n={n:>9}  {target:>8}: {ms:7.2} ms  [{}]",
            gaussian_pdf::KERNEL_PATH
        );
    }

    let d = polar_distance(&a, &b, &b, &a)?;
    let want = polar_distance::scalar(a[4321], b[4321], b[4321], a[4321]);
    assert!((d[4321] - want).abs() <= 1e-5);
    for target in [Target::Cpu, Target::Parallel] {
        let ms = best_ms(3, || {
            drop(polar_distance::on(target, &a, &b, &b, &a).unwrap())
        });
        println!(
            "polar_distance 4 inputs  n={n:>9}  {target:>8}: {ms:7.2} ms  [{}]",
            polar_distance::KERNEL_PATH
        );
    }

    // i64 with broadcasting: (3,1) + (4,) -> (3,4).
    let col = Array2::from_shape_fn((3, 1), |(i, _)| 10 * i as i64);
    let row = Array1::from_vec(vec![1i64, 2, 3, 4]);
    let sum = add(&col, &row)?;
    println!("add (3,1) + (4,) =\n{sum}");
    assert_eq!(sum[[2, 3]], 24);

    // Errors name the shapes.
    let err = add(&Array1::<i64>::zeros(3), &row).unwrap_err();
    println!("add (3,) + (4,): {err}");
    Ok(())
}
