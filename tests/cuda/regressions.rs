//! Minimal reproducers of translator bugs found by the differential generator
//! (`scripts/kernelgen.py`), each run on cpu and cuda and compiled by NVRTC.

use super::differential::{agree, agree2, sample};
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

#[kernel_fn]
fn reg_bucket(x: i32) -> i32 {
    x & 3
}

/// `match` on a helper's result (opaque to the translator) was rejected; integer `abs`,
/// `signum` and `wrapping_abs` did not compile (only float overloads existed).
#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn reg_int_abs_and_match(x: i32, y: i8) -> i32 {
    let a = match reg_bucket(x) {
        0 => x.abs(),
        1 | 2 => x.wrapping_abs(),
        _ => x.signum(),
    };
    a + y.signum() as i32 + y.wrapping_abs() as i32
}

#[kernel_fn]
fn reg_small(x: u8) -> i16 {
    x as i16 - 200
}

/// Negating a helper's `i16` result gave a C++ `int` (integer promotion), which then met an
/// `i16` in an ambiguous overload; num-complex's corner cases of `sqrt`, `exp`, `powi`, `powf`
/// (a zero imaginary part, infinities, NaN, a zero exponent) were not followed.
#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn reg_neg_helper_and_complex_corners(x: u8, z: Complex<f64>) -> (i16, Complex<f64>) {
    let n = -reg_small(x);
    let w = (-(z - z)).sqrt() + z.sqrt() + z.exp() + z.powi(-3) + z.powf(0.0) + z.powf(1.5);
    (n.wrapping_mul(reg_small(x)), w)
}

/// A helper's result (opaque) met an unsuffixed literal, and the helper's argument was a
/// block: the literal was cast to `decltype(<a lambda>)`, which C++17 (NVRTC) rejects
/// (generator seed 31, kernel 69).
#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn reg_block_argument_meets_literal(x: i32) -> i32 {
    (reg_bucket({
        let t = x ^ 5;
        t
    }) & 7)
        + (3 * reg_bucket({
            let u = x + 1;
            u
        }))
}

/// A helper's result (opaque) added into a literal-initialised binding: the binding was cast
/// to the helper's type on the left of the assignment, which C++ rejects (not an lvalue);
/// found porting a gufunc that sums a helper's results.
#[kernel_fn]
fn reg_half(x: f64) -> f64 {
    x * 0.5
}

#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn reg_literal_binding_accumulates_helper(x: i32) -> f64 {
    let mut s = 0.0;
    for i in 0..3 {
        s += reg_half((x & 255) as f64 + i as f64);
    }
    s
}

/// gen7_90 (seed 7): the function's u32 result type reached the literal inside
/// `count_ones`'s receiver, which is an `i8` sum; the C++ add got a u32 and an i8.
#[vectorize(targets = ["cpu", "cuda"])]
pub(crate) fn reg_literal_under_count_ones(a: u64, z: Complex<f32>) -> u32 {
    let n = (100 + ((a as i32) as i8)).count_ones();
    let nan = (1.5 * z.re).is_nan() as u32;
    n + nan + (2.0 * z).norm_sqr() as u32
}

pub(crate) fn sources() -> Vec<(&'static str, String)> {
    vec![
        (
            "reg_literal_under_count_ones",
            reg_literal_under_count_ones::cuda_source(),
        ),
        ("reg_complex_neg", reg_complex_neg::cuda_source()),
        ("reg_usize_literals", reg_usize_literals::cuda_source()),
        (
            "reg_int_abs_and_match",
            reg_int_abs_and_match::cuda_source(),
        ),
        (
            "reg_block_argument_meets_literal",
            reg_block_argument_meets_literal::cuda_source(),
        ),
        (
            "reg_literal_binding_accumulates_helper",
            reg_literal_binding_accumulates_helper::cuda_source(),
        ),
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
    let (x, y) = (sample::<i32>(3, 16), sample::<i8>(4, 16));
    let want: Vec<i32> = x
        .iter()
        .zip(&y)
        .map(|(&x, &y)| {
            let a = match x & 3 {
                0..=2 => x.wrapping_abs(),
                _ => x.signum(),
            };
            a + y.signum() as i32 + y.wrapping_abs() as i32
        })
        .collect();
    assert_eq!(reg_int_abs_and_match(&x, &y).unwrap().to_vec(), want);
    let want: Vec<i32> = x
        .iter()
        .map(|&x| ((x ^ 5) & 3) + 3 * ((x + 1) & 3))
        .collect();
    assert_eq!(reg_block_argument_meets_literal(&x).unwrap().to_vec(), want);
    let want: Vec<f64> = x
        .iter()
        .map(|&x| (0..3).map(|i| ((x & 255) as f64 + i as f64) * 0.5).sum())
        .collect();
    assert_eq!(
        reg_literal_binding_accumulates_helper(&x).unwrap().to_vec(),
        want
    );
    let a = sample::<u64>(7, 16);
    let c = sample::<Complex<f32>>(8, 16);
    let want: Vec<u32> = a
        .iter()
        .zip(&c)
        .map(|(&a, &z)| {
            let small = (a as i32) as i8;
            (100i8.wrapping_add(small)).count_ones()
                + (1.5 * z.re).is_nan() as u32
                + (2.0 * z).norm_sqr() as u32
        })
        .collect();
    assert_eq!(reg_literal_under_count_ones(&a, &c).unwrap().to_vec(), want);
    on_gpu("generator_regressions_agree_on_cpu_and_cuda", || {
        agree(
            "reg_complex_neg",
            reg_complex_neg::on(Target::Cpu, &z, &w),
            reg_complex_neg::on(Target::Cuda, &z, &w),
        );
        agree(
            "reg_int_abs_and_match",
            reg_int_abs_and_match::on(Target::Cpu, &x, &y),
            reg_int_abs_and_match::on(Target::Cuda, &x, &y),
        );
        let (u, z) = (sample::<u8>(5, 17), sample::<Complex<f64>>(6, 17));
        agree2(
            "reg_neg_helper_and_complex_corners",
            reg_neg_helper_and_complex_corners::on(Target::Cpu, &u, &z),
            reg_neg_helper_and_complex_corners::on(Target::Cuda, &u, &z),
        );
        agree(
            "reg_block_argument_meets_literal",
            reg_block_argument_meets_literal::on(Target::Cpu, &x),
            reg_block_argument_meets_literal::on(Target::Cuda, &x),
        );
        agree(
            "reg_literal_binding_accumulates_helper",
            reg_literal_binding_accumulates_helper::on(Target::Cpu, &x),
            reg_literal_binding_accumulates_helper::on(Target::Cuda, &x),
        );
        let (a, c) = (sample::<u64>(7, 16), sample::<Complex<f32>>(8, 16));
        agree(
            "reg_literal_under_count_ones",
            reg_literal_under_count_ones::on(Target::Cpu, &a, &c),
            reg_literal_under_count_ones::on(Target::Cuda, &a, &c),
        );
        agree(
            "reg_usize_literals",
            reg_usize_literals::on(Target::Cpu, &n),
            reg_usize_literals::on(Target::Cuda, &n),
        );
    });
}
