use ufunc::prelude::*;
use ndarray::ArrayView1;

#[guvectorize("(n)->()", targets = ["cpu", "cuda"])]
fn f(a: ArrayView1<f32>) -> f32 {
    a.mean().unwrap_or(0.0)
}

fn main() {}
