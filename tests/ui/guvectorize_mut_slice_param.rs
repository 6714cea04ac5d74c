use ufunc::prelude::*;
use ndarray::ArrayView1;

#[guvectorize("(n)->(n)")]
fn f(a: ArrayView1<f32>, b: &mut [f32]) {
    b.copy_from_slice(a.as_slice().unwrap());
}

fn main() {}
