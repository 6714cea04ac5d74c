//! `#[guvectorize]` benchmarks, run beside NumPy and Numba by `bench/run.sh`: batched matmul
//! (naive and fast cores) and the polygon mask.
//!
//! `cargo bench --bench guvectorize -- [--json] [--quick]`.

mod common;
use ndarray::{Array1, Array2, Array3, Axis};
use std::hint::black_box;
use ufunc::prelude::*;

// The cores are the examples' own, so that what is measured is what users copy.
#[path = "../examples/batched_matmul.rs"]
#[allow(dead_code)]
mod batched_matmul;
#[path = "../examples/polygon_mask.rs"]
#[allow(dead_code)]
mod polygon_mask;

use batched_matmul::{matmul_fast, matmul_naive};
use polygon_mask::inside;

struct Bench {
    json: bool,
    reps: usize,
}

impl Bench {
    /// Median milliseconds of `self.reps` runs after one warm-up.
    fn time(&self, f: impl FnMut()) -> f64 {
        common::median_ms(self.reps, f)
    }

    fn report(&self, case: &str, n: usize, imp: &str, ms: f64, gflops: Option<f64>) {
        if self.json {
            let extra = gflops.map_or(String::new(), |g| format!(", \"gflops\": {g:.2}"));
            println!(
                "{{\"case\": \"{case}\", \"n\": {n}, \"impl\": \"{imp}\", \"ms\": {ms:.4}{extra}}}"
            );
        } else {
            let extra = gflops.map_or(String::new(), |g| format!("  {g:7.2} GFLOP/s"));
            println!("{case:14} n={n:>8} {imp:22} {ms:10.3} ms{extra}");
        }
    }
}

fn matmul_case(b: &Bench, case: &str, (batch, m, n, p): (usize, usize, usize, usize), naive: bool) {
    let x = Array3::from_shape_fn((batch, m, n), |(q, i, k)| {
        ((q + 2 * i + 3 * k) % 7) as f32 - 3.0
    });
    let y = Array3::from_shape_fn((batch, n, p), |(q, k, j)| {
        ((q + k + 5 * j) % 5) as f32 - 2.0
    });
    let flops = 2.0 * (batch * m * n * p) as f64;
    for target in [Target::Cpu, Target::Parallel] {
        if naive {
            let ms = b.time(|| drop(black_box(matmul_naive::on(target, &x, &y).unwrap())));
            b.report(
                case,
                batch,
                &format!("ufunc-naive-{target}"),
                ms,
                Some(flops / ms / 1e6),
            );
        }
        let ms = b.time(|| drop(black_box(matmul_fast::on(target, &x, &y).unwrap())));
        b.report(
            case,
            batch,
            &format!("ufunc-fast-{target}"),
            ms,
            Some(flops / ms / 1e6),
        );
    }
}

fn polygon_case(b: &Bench) {
    let n = 1024;
    let poly = Array2::from_shape_fn((24, 2), |(k, c)| {
        let angle = k as f32 * 2.0 * std::f32::consts::PI / 24.0;
        let r = if k % 2 == 0 { 0.45 } else { 0.2 } * n as f32;
        let centre = n as f32 / 2.0;
        if c == 0 {
            centre + r * angle.cos()
        } else {
            centre + r * angle.sin()
        }
    });
    let xs = Array1::from_shape_fn(n, |i| i as f32 + 0.5).insert_axis(Axis(0));
    let ys = Array1::from_shape_fn(n, |i| i as f32 + 0.5).insert_axis(Axis(1));
    for target in [Target::Cpu, Target::Parallel] {
        let ms = b.time(|| drop(black_box(inside::on(target, &xs, &ys, &poly).unwrap())));
        b.report("polygon_mask", n * n, &format!("ufunc-{target}"), ms, None);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let b = Bench {
        json: args.iter().any(|a| a == "--json"),
        reps: if quick { 3 } else { 7 },
    };
    matmul_case(&b, "matmul_small", (1000, 2, 4, 5), true);
    polygon_case(&b);
    if !quick {
        matmul_case(&b, "matmul_4x4", (100_000, 4, 4, 4), true);
        matmul_case(&b, "matmul_256", (64, 256, 256, 256), false);
    }
}
