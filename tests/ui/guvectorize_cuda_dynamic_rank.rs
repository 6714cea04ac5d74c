use ufunc::prelude::*;
use ndarray::ArrayViewD;

#[guvectorize("(n)->()", targets = ["cpu", "cuda"])]
fn f(a: ArrayViewD<f32>) -> f32 {
    a[[0]]
}

fn main() {}
