use ufunc::prelude::*;
use ndarray::ArrayView1;

#[guvectorize("(n)->()")]
async fn f(a: ArrayView1<'_, f32>) -> f32 {
    a.sum()
}

fn main() {}
