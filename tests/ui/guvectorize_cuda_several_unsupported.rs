use ndarray::{ArrayView1, ArrayViewD};
use ufunc::prelude::*;

// Every node the CUDA translation cannot take is reported, each at its own span.
#[guvectorize("(n),(m)->()", targets = ["cpu", "cuda"])]
fn f(a: ArrayView1<f32>, b: ArrayViewD<f32>) -> f32 {
    let total: f32 = a.iter().sum();
    let first = match a.first() {
        Some(x) => *x,
        None => 0.0,
    };
    total + first + a.sum() + b[[0]]
}

fn main() {}
