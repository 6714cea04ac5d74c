use ufunc::prelude::*;
use ndarray::ArrayView1;

#[guvectorize("(n)->()")]
fn f(a: ArrayView1<f32>, out: &mut f32) {
    *out = a.sum();
}

fn main() {}
