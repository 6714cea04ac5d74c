//! ndarray view methods in a gufunc core on `cuda` (issue 13, item 6): `sum`, `fill`, `dot`,
//! `row`/`row_mut`, `column`, `len_of`, `for x in a.iter()` / `iter_mut()`, each run on cpu and
//! cuda and compared with a plain loop.

use super::differential::{agree, agree2, sample, sample2};
use super::on_gpu;
use ndarray::{Array2, Array3, Axis};
use ufunc::prelude::*;

/// Row sums, column dot products and a count through `len_of`.
#[guvectorize("(m,n),(n)->(m),(n)", targets = ["cpu", "cuda"])]
pub(crate) fn view_rows_cols(
    a: ArrayView2<f64>,
    w: ArrayView1<f64>,
    mut rows: ArrayViewMut1<f64>,
    mut cols: ArrayViewMut1<f64>,
) {
    for i in 0..a.len_of(Axis(0)) {
        rows[i] = a.row(i).sum() + a.row(i).dot(&w);
    }
    for j in 0..a.len_of(Axis(1)) {
        let c = a.column(j);
        cols[j] = c.sum() * w[j];
    }
}

/// `fill`, `row_mut` and `iter_mut` on the output, `iter` over an input; integers (exact).
#[guvectorize("(m,n)->(m,n)", targets = ["cpu", "cuda"])]
pub(crate) fn view_fill_iter(a: ArrayView2<i32>, mut out: ArrayViewMut2<i32>) {
    out.fill(1);
    let mut total = 0;
    for x in a.iter() {
        total += *x;
    }
    for i in 0..out.nrows() {
        let mut r = out.row_mut(i);
        for v in r.iter_mut() {
            *v = total.wrapping_mul(*v) + i as i32;
        }
    }
    for &x in a.row(0).iter() {
        out[[0, 0]] += x;
    }
}

/// `sum` of a whole 2-d view and of a complex one.
#[guvectorize("(m,n),(k)->(),()", targets = ["cpu", "cuda"])]
pub(crate) fn view_sums(a: ArrayView2<i64>, z: ArrayView1<Complex<f32>>) -> (i64, Complex<f32>) {
    (a.sum(), z.sum())
}

pub(crate) fn sources() -> Vec<(&'static str, String)> {
    vec![
        ("view_rows_cols", view_rows_cols::cuda_source()),
        ("view_fill_iter", view_fill_iter::cuda_source()),
        ("view_sums", view_sums::cuda_source()),
    ]
}

#[test]
fn view_methods_agree_with_plain_loops_on_cpu_and_cuda() {
    let a = Array3::from_shape_fn((3, 4, 5), |(q, i, j)| {
        (q * 20 + i * 5 + j) as f64 * 0.25 - 7.0
    });
    let w = ndarray::Array1::from_shape_fn(5, |j| j as f64 - 1.5);
    let (rows, cols) = view_rows_cols(&a, &w).unwrap();
    for q in 0..3 {
        let m = a.index_axis(Axis(0), q);
        for i in 0..4 {
            let want: f64 = (0..5).map(|j| m[[i, j]] + m[[i, j]] * w[j]).sum();
            assert!((rows[[q, i]] - want).abs() < 1e-9, "row {q} {i}");
        }
        for j in 0..5 {
            let want: f64 = (0..4).map(|i| m[[i, j]]).sum::<f64>() * w[j];
            assert!((cols[[q, j]] - want).abs() < 1e-9, "column {q} {j}");
        }
    }
    let b = Array3::from_shape_fn((2, 3, 4), |(q, i, j)| (q * 12 + i * 4 + j) as i32 - 9);
    let filled = view_fill_iter(&b).unwrap();
    for q in 0..2 {
        let m = b.index_axis(Axis(0), q);
        let total: i32 = m.sum();
        for i in 0..3 {
            for j in 0..4 {
                let extra = if (i, j) == (0, 0) { m.row(0).sum() } else { 0 };
                assert_eq!(filled[[q, i, j]], total + i as i32 + extra, "{q} {i} {j}");
            }
        }
    }
    // Two loop items of (4, 6) cores, MIN and MAX among the values: the sums wrap.
    let c = ndarray::stack(
        Axis(0),
        &[sample2::<i64>(2).view(), sample2::<i64>(5).view()],
    )
    .unwrap();
    let z = sample::<Complex<f32>>(3, 16);
    let (s, zs) = view_sums(&c, &z.insert_axis(Axis(0))).unwrap();
    for q in 0..2 {
        let want = c
            .index_axis(Axis(0), q)
            .iter()
            .fold(0i64, |s, v| s.wrapping_add(*v));
        assert_eq!(s[q], want);
    }
    assert!(zs[0].re.is_nan() || zs[0].re.is_infinite());
    let z = ndarray::Array1::from_shape_fn(7, |k| Complex::new(k as f32, 1.0 - k as f32));
    let zz = z.clone().insert_axis(Axis(0));
    on_gpu(
        "view_methods_agree_with_plain_loops_on_cpu_and_cuda",
        || {
            agree2(
                "view_rows_cols",
                view_rows_cols::on(Target::Cpu, &a, &w),
                view_rows_cols::on(Target::Cuda, &a, &w),
            );
            agree(
                "view_fill_iter",
                view_fill_iter::on(Target::Cpu, &b),
                view_fill_iter::on(Target::Cuda, &b),
            );
            let (g1, g2) = view_sums::on(Target::Cuda, &c, &zz).unwrap();
            assert_eq!(g2[0], Complex::new(21.0, -14.0));
            agree2(
                "view_sums",
                view_sums::on(Target::Cpu, &c, &zz),
                Ok((g1, g2)),
            );
        },
    );
}

/// A row index past the end panics on the CPU targets and is an error on cuda too.
#[guvectorize("(m,n),()->()", targets = ["cpu", "cuda"])]
pub(crate) fn view_row_out_of_bounds(a: ArrayView2<f32>, i: u32) -> f32 {
    a.row(i as usize).sum()
}

#[test]
fn a_row_out_of_bounds_is_an_error_on_every_target() {
    let a = Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f32);
    assert_eq!(
        *view_row_out_of_bounds(&a, 1u32).unwrap().first().unwrap(),
        12.0
    );
    assert!(view_row_out_of_bounds(&a, 2u32).is_err());
    on_gpu("a_row_out_of_bounds_is_an_error_on_every_target", || {
        assert_eq!(
            *view_row_out_of_bounds::on(Target::Cuda, &a, 1u32)
                .unwrap()
                .first()
                .unwrap(),
            12.0
        );
        assert!(view_row_out_of_bounds::on(Target::Cuda, &a, 2u32).is_err());
    });
}
