use ufunc::prelude::*;

// `step_by` on cuda takes a positive integer literal: a step known only at run time (which
// Rust checks for zero) is a compile error at the step.
#[vectorize(targets = ["cpu", "cuda"])]
fn f(a: f32, n: u32, k: u32) -> f32 {
    let mut s = a;
    for i in (0..n).step_by(k as usize) {
        s += i as f32;
    }
    s
}

fn main() {}
