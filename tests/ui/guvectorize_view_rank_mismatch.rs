use ufunc::prelude::*;
use ndarray::ArrayView2;

#[guvectorize("(n)->()")]
fn f(a: ArrayView2<f32>) -> f32 {
    a.sum()
}

fn main() {}
