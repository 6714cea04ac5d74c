use ndarray::ArrayView1;
use ufunc::prelude::*;

// A bad layout, an unknown argument and an unknown target, reported together.
#[guvectorize("(n)->(#)", parallel = true, target = "gpu")]
fn f(a: ArrayView1<f32>) -> f32 {
    a.sum()
}

fn main() {}
