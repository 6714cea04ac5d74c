use ufunc::prelude::*;
use ndarray::ArrayView1;

#[guvectorize("(n)->()")]
fn f(a: ArrayView1<f32>) -> Vec<f32> {
    a.to_vec()
}

fn main() {}
