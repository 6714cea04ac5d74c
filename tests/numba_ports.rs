//! Kernels ported from Numba's own tests and documentation (`numba/tests/npyufunc/`,
//! `numba/cuda/tests/cudapy/test_gufunc*.py`, `test_vectorize*.py`), written the way a Numba
//! user writes them, run on `cpu` and `parallel` and compared with values computed here by a
//! plain loop (or taken from Numba's test). Notes say where the Rust form differs and why.
//! The same kernels on `cuda` run in `tests/cuda/ports.rs`.

use ndarray::{array, Array1, Array2};
use ufunc::prelude::*;

const CPU_TARGETS: [Target; 2] = [Target::Cpu, Target::Parallel];

// Issue 13, item 1: any parameter name works, `out` and `target` included
// (test_gufunc.py names outputs `out`; Numba passes outputs as the last parameters).

#[guvectorize("()->()", targets = ["cpu", "parallel"])]
fn twice(inp: i32, out: &mut i32) {
    *out = inp * 2;
}

/// numba/tests/npyufunc/test_gufunc.py `sum_row`: `def sum_row(inp, out)`.
#[guvectorize("(n)->()", targets = ["cpu", "parallel"])]
fn sum_row(inp: ArrayView1<i32>, out: &mut i32) {
    let mut tmp = 0;
    for i in 0..inp.len() {
        tmp += inp[i];
    }
    *out = tmp;
}

/// Parameters named like every companion parameter and like the generated loop's locals.
#[guvectorize("(n),(),()->(n)", targets = ["cpu", "parallel"])]
fn scale_named(target: ArrayView1<f64>, n: f64, stream: f64, mut out: ArrayViewMut1<f64>) {
    for i in 0..target.len() {
        out[i] = target[i] * n + stream;
    }
}

#[vectorize(targets = ["cpu", "parallel"])]
fn add_named(out: f64, target: f64, out0: f64) -> f64 {
    out + target * out0
}

#[test]
fn reserved_looking_parameter_names_work() {
    let x = array![1, 2, 3, -4];
    let xs = Array2::from_shape_fn((3, 4), |(i, j)| (i * 10 + j) as i32);
    let t = array![[1.0, 2.0], [3.0, 4.0]];
    for target in CPU_TARGETS {
        assert_eq!(
            twice::on(target, &x)
                .unwrap()
                .into_dimensionality()
                .unwrap(),
            array![2, 4, 6, -8]
        );
        let sums = sum_row::on(target, &xs).unwrap();
        let expected: Array1<i32> = xs.rows().into_iter().map(|r| r.iter().sum()).collect();
        assert_eq!(sums.into_dimensionality().unwrap(), expected);
        let scaled = scale_named::on(target, &t, 2.0, 0.5).unwrap();
        assert_eq!(
            scaled.into_dimensionality().unwrap(),
            array![[2.5, 4.5], [6.5, 8.5]]
        );
        let mut out = Array1::zeros(2);
        add_named::out_on(target, &array![1.0, 2.0], 3.0, 4.0, &mut out).unwrap();
        assert_eq!(out, array![13.0, 14.0]);
    }
}

// Item 7: `isize`/`usize` elements (Numba's `intp`, the type of indices and counts).

/// test_vectorize_intp (numba/tests/npyufunc/test_vectorize_decor.py): `add` over `intp`.
#[vectorize(targets = ["cpu", "parallel"])]
fn add_intp(a: isize, b: isize) -> isize {
    a + b
}

#[vectorize(targets = ["cpu", "parallel"])]
fn index_of_max(a: f64, b: f64, c: f64) -> usize {
    if a >= b && a >= c {
        0
    } else if b >= c {
        1
    } else {
        2
    }
}

/// Counting into a `usize` output from an `isize` view.
#[guvectorize("(n),()->()", targets = ["cpu", "parallel"])]
fn count_above(a: ArrayView1<isize>, t: isize, out: &mut usize) {
    let mut c = 0;
    for i in 0..a.len() {
        if a[i] > t {
            c += 1;
        }
    }
    *out = c;
}

#[test]
fn intp_elements() {
    let a: Array1<isize> = array![1, -2, 3, isize::MAX - 10];
    let b: Array1<isize> = array![10, 20, -30, 5];
    let m = Array2::from_shape_fn((3, 5), |(i, j)| (i as isize - 1) * j as isize);
    for target in CPU_TARGETS {
        let sum = add_intp::on(target, &a, &b).unwrap();
        for i in 0..a.len() {
            assert_eq!(sum[i], a[i] + b[i]);
        }
        let idx =
            index_of_max::on(target, &array![3.0, 1.0, 0.0], &array![1.0, 5.0, 0.0], 2.0).unwrap();
        assert_eq!(idx, array![0usize, 1, 2]);
        let counts = count_above::on(target, &m, 0isize).unwrap();
        for (r, row) in m.rows().into_iter().enumerate() {
            assert_eq!(counts[[r]], row.iter().filter(|&&v| v > 0).count());
        }
    }
}

// Issue 13: Numba's own test kernels, widened (tests/numba_kernels/mod.rs): each kernel is
// written once for cpu, parallel and cuda, and each check compares it with what Numba's test
// asserts; here on the CPU targets (on cuda in tests/cuda/numba_ports.rs).

#[macro_use]
mod numba_kernels;

/// A `#[test]` per check of `numba_kernels`, run on `cpu` and `parallel`.
macro_rules! on_cpu_targets {
    ($($check:ident),* $(,)?) => {$(
        #[test]
        fn $check() {
            for target in CPU_TARGETS {
                numba_kernels::$check(target);
            }
        }
    )*};
}

numba_checks!(on_cpu_targets);
