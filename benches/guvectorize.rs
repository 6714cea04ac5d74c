//! `#[guvectorize]` benchmarks, run beside NumPy and Numba by `bench/run.sh`: batched matmul
//! (naive and fast cores) and the polygon mask.
//!
//! `cargo bench --bench guvectorize -- [--json] [--quick]`.

use ndarray::linalg::general_mat_mul;
use ndarray::{Array1, Array2, Array3, Axis};
use std::hint::black_box;
use std::time::Instant;
use ufunc::prelude::*;

#[guvectorize("(m,n),(n,p)->(m,p)", targets = ["cpu", "parallel"])]
fn matmul_naive(a: ArrayView2<f32>, b: ArrayView2<f32>, mut c: ArrayViewMut2<f32>) {
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

#[guvectorize("(m,n),(n,p)->(m,p)", targets = ["cpu", "parallel"])]
fn matmul_fast(a: ArrayView2<f32>, b: ArrayView2<f32>, mut c: ArrayViewMut2<f32>) {
    let (m, n) = a.dim();
    let p = b.ncols();
    if m * n * p >= 32 * 32 * 32 {
        general_mat_mul(1.0, &a, &b, 0.0, &mut c);
        return;
    }
    let (Some(a), Some(b), Some(c)) = (a.as_slice(), b.as_slice(), c.as_slice_mut()) else {
        general_mat_mul(1.0, &a, &b, 0.0, &mut c);
        return;
    };
    // Small matrices: a kernel specialised on the output width, so each output row is a
    // register-resident accumulator updated with whole rows of b.
    match p {
        1 => small_rows::<1>(a, b, c, n),
        2 => small_rows::<2>(a, b, c, n),
        3 => small_rows::<3>(a, b, c, n),
        4 => small_rows::<4>(a, b, c, n),
        5 => small_rows::<5>(a, b, c, n),
        6 => small_rows::<6>(a, b, c, n),
        7 => small_rows::<7>(a, b, c, n),
        8 => small_rows::<8>(a, b, c, n),
        _ => {
            for (a_row, c_row) in a.chunks_exact(n).zip(c.chunks_exact_mut(p)) {
                c_row.fill(0.0);
                for (&aik, b_row) in a_row.iter().zip(b.chunks_exact(p)) {
                    for (cij, &bkj) in c_row.iter_mut().zip(b_row) {
                        *cij += aik * bkj;
                    }
                }
            }
        }
    }
}

/// `c = a b` for contiguous row-major a (m x n), b (n x P), c (m x P).
fn small_rows<const P: usize>(a: &[f32], b: &[f32], c: &mut [f32], n: usize) {
    for (i, c_row) in c.chunks_exact_mut(P).enumerate() {
        let a_row = &a[i * n..(i + 1) * n];
        let mut acc = [0.0f32; P];
        for (&aik, b_row) in a_row.iter().zip(b.chunks_exact(P)) {
            for (x, &y) in acc.iter_mut().zip(b_row) {
                *x += aik * y;
            }
        }
        c_row.copy_from_slice(&acc);
    }
}

#[guvectorize("(),(),(n,2)->()", targets = ["cpu", "parallel"])]
fn inside(x: f32, y: f32, poly: ArrayView2<f32>) -> bool {
    let Some(points) = poly.as_slice() else {
        // A non-contiguous polygon: the same test through indexing.
        let n = poly.nrows();
        let mut inside = false;
        let mut j = n.wrapping_sub(1);
        for i in 0..n {
            let (xi, yi, xj, yj) = (poly[[i, 0]], poly[[i, 1]], poly[[j, 0]], poly[[j, 1]]);
            if (yi > y) != (yj > y) && x < (xj - xi) * (y - yi) / (yj - yi) + xi {
                inside = !inside;
            }
            j = i;
        }
        return inside;
    };
    let mut inside = false;
    let (mut xj, mut yj) = match points {
        [.., xl, yl] => (*xl, *yl),
        _ => return false,
    };
    for p in points.chunks_exact(2) {
        let (xi, yi) = (p[0], p[1]);
        if (yi > y) != (yj > y) && x < (xj - xi) * (y - yi) / (yj - yi) + xi {
            inside = !inside;
        }
        (xj, yj) = (xi, yi);
    }
    inside
}

struct Bench {
    json: bool,
    reps: usize,
}

impl Bench {
    fn time(&self, mut f: impl FnMut()) -> f64 {
        f();
        let mut t: Vec<f64> = (0..self.reps)
            .map(|_| {
                let s = Instant::now();
                f();
                s.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
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
