use ufunc::prelude::*;
use ndarray::ArrayView1;

#[guvectorize("(m?),(m)->()")]
fn f(a: ArrayView1<f32>, b: ArrayView1<f32>) -> f32 {
    a.dot(&b)
}

fn main() {}
