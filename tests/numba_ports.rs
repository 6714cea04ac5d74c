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
