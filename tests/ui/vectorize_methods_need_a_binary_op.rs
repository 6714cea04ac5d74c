use ndarray::array;
use ufunc::prelude::*;

// `reduce`, `accumulate`, `outer` and `at` exist only for `f(T, T) -> T`: other functions get
// none, and `identity = ...` or `associative = true` on one says why.
#[vectorize(identity = 0.0)]
fn scale(a: f32) -> f32 {
    a * 2.0
}

#[vectorize(identity = 0)]
fn widen(a: i32, b: i32) -> i64 {
    a as i64 + b as i64
}

#[vectorize(associative = true)]
fn negate(a: f32) -> f32 {
    -a
}

#[vectorize]
fn fma3(a: f32, b: f32, c: f32) -> f32 {
    a * b + c
}

#[guvectorize("(),()->()", identity = 0.0, associative = true)]
fn gu_add(a: f32, b: f32) -> f32 {
    a + b
}

fn reduce() {
    let x = array![1.0f32, 2.0];
    let _ = fma3::reduce(&x, 0);
}

fn outer() {
    let x = array![1.0f32, 2.0];
    let _ = fma3::outer(&x, &x);
}

fn main() {
    reduce();
    outer();
}
