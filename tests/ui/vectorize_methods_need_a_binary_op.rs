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

// Every other form says the same: here one on a target, one into an output, one on the device.
fn on_a_target() {
    let x = array![1.0f32, 2.0];
    let _ = fma3::reduce_on(ufunc::Target::Cpu, &x, 0);
}

fn into_an_output() {
    let x = array![1.0f32, 2.0];
    let mut out = array![0.0f32, 0.0];
    fma3::accumulate_out(&x, 0, &mut out);
}

fn on_the_device() {
    let x = array![1.0f32, 2.0];
    let _ = fma3::reduce_device(&x, 0);
}

fn main() {
    reduce();
    outer();
    on_a_target();
    into_an_output();
    on_the_device();
}
