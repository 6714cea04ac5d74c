//! Batched matrix multiply with `#[guvectorize]`: the seeds' naive triple-loop core and a fast
//! core (a GEMM crate for large matrices, a contiguous-row loop for small ones), through the
//! same layout; both checked against a reference and timed.
//!
//! Run with `cargo run --release --example batched_matmul`.

use ndarray::linalg::general_mat_mul;
use ndarray::{Array3, ArrayD, Axis};
use std::time::Instant;
use ufunc::prelude::*;

/// The seeds' core: plain loops.
#[guvectorize("(m,n),(n,p)->(m,p)", targets = ["parallel", "cpu"])]
pub fn matmul_naive(a: ArrayView2<f32>, b: ArrayView2<f32>, mut c: ArrayViewMut2<f32>) {
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

/// The same layout with a fast core: a BLAS-quality GEMM from a crate (ndarray's
/// `general_mat_mul`, i.e. `matrixmultiply`) for large matrices, and for small ones a loop in
/// row-times-matrix order whose inner loop runs over contiguous rows with no dependency chain.
#[guvectorize("(m,n),(n,p)->(m,p)", targets = ["parallel", "cpu"])]
pub fn matmul_fast(a: ArrayView2<f32>, b: ArrayView2<f32>, mut c: ArrayViewMut2<f32>) {
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
pub fn small_rows<const P: usize>(a: &[f32], b: &[f32], c: &mut [f32], n: usize) {
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

fn reference(a: &Array3<f32>, b: &Array3<f32>) -> Array3<f32> {
    let mut c = Array3::zeros((a.len_of(Axis(0)), a.dim().1, b.dim().2));
    for ((a, b), mut c) in a.outer_iter().zip(b.outer_iter()).zip(c.outer_iter_mut()) {
        c.assign(&a.dot(&b));
    }
    c
}

fn close(x: &ArrayD<f32>, y: &Array3<f32>, n: usize) -> bool {
    let tol = 1e-6 * n as f32 * 16.0;
    x.iter()
        .zip(y.iter())
        .all(|(p, q)| (p - q).abs() <= tol * (1.0 + q.abs()))
}

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
    let cases = [(1000, 2, 4, 5), (100_000, 4, 4, 4), (64, 256, 256, 256)];
    for (batch, m, n, p) in cases {
        let a = Array3::from_shape_fn((batch, m, n), |(b, i, k)| {
            ((b + 2 * i + 3 * k) % 7) as f32 - 3.0
        });
        let b = Array3::from_shape_fn((batch, n, p), |(b, k, j)| {
            ((b + k + 5 * j) % 5) as f32 - 2.0
        });
        let want = reference(&a, &b);
        let flops = 2.0 * (batch * m * n * p) as f64;
        println!("{batch} x ({m}x{n}) @ ({n}x{p})");
        for target in [Target::Cpu, Target::Parallel] {
            type Call<'c> =
                &'c dyn Fn(Target, &Array3<f32>, &Array3<f32>) -> ufunc::Result<ArrayD<f32>>;
            let naive: Call = &|t, a, b| matmul_naive::on(t, a, b);
            let fast: Call = &|t, a, b| matmul_fast::on(t, a, b);
            for (name, f) in [("naive", naive), ("fast ", fast)] {
                let c = f(target, &a, &b)?;
                assert!(
                    close(&c, &want, n),
                    "{name} on {target} disagrees with the reference"
                );
                let ms = best_ms(5, || drop(f(target, &a, &b).unwrap()));
                println!(
                    "  {name} {target:>8}: {ms:9.3} ms  {:7.2} GFLOP/s",
                    flops / ms / 1e6
                );
            }
        }
    }
    // Loop dimensions broadcast: (7,1,3,4) x (5,4,2) -> (7,5,3,2).
    let a = ndarray::Array4::<f32>::ones((7, 1, 3, 4));
    let b = Array3::<f32>::ones((5, 4, 2));
    let c = matmul_naive(&a, &b)?;
    println!("(7,1,3,4) x (5,4,2) -> {:?}", c.shape());
    assert_eq!(c.shape(), &[7, 5, 3, 2]);
    Ok(())
}
