//! Minimal reproducers of translator bugs found by the differential generator
//! (`scripts/kernelgen.py`), each run on cpu and cuda and compiled by NVRTC.

use super::differential::{agree, sample};
use super::on_gpu;
use ufunc::prelude::*;

/// Negating a complex value called the integer negation helper (no such conversion in C++).
#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn reg_complex_neg(z: Complex<f64>, w: Complex<f32>) -> Complex<f64> {
    -(z * Complex::new(w.re as f64, 1.0)) + -z
}

/// A `usize`/`isize` suffixed literal was rejected although both are element types.
#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn reg_usize_literals(n: u8) -> i64 {
    let mut s = 0isize;
    for i in 0..(n as usize % 5 + 2usize) {
        s += i as isize - 3isize;
    }
    s as i64
}

pub(crate) fn sources() -> Vec<(&'static str, String)> {
    vec![
        ("reg_complex_neg", reg_complex_neg::cuda_source()),
        ("reg_usize_literals", reg_usize_literals::cuda_source()),
    ]
}

#[test]
fn generator_regressions_agree_on_cpu_and_cuda() {
    let z = sample::<Complex<f64>>(0, 16);
    let w = sample::<Complex<f32>>(1, 16);
    let n = sample::<u8>(2, 16);
    let want: Vec<i64> = n
        .iter()
        .map(|&n| (0..(n as i64 % 5 + 2)).map(|i| i - 3).sum())
        .collect();
    assert_eq!(reg_usize_literals(&n).unwrap().to_vec(), want);
    on_gpu("generator_regressions_agree_on_cpu_and_cuda", || {
        agree(
            "reg_complex_neg",
            reg_complex_neg::on(Target::Cpu, &z, &w),
            reg_complex_neg::on(Target::Cuda, &z, &w),
        );
        agree(
            "reg_usize_literals",
            reg_usize_literals::on(Target::Cpu, &n),
            reg_usize_literals::on(Target::Cuda, &n),
        );
    });
}
