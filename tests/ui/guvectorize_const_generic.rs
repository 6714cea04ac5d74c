use ufunc::prelude::*;
use ndarray::ArrayView1;

#[guvectorize("(n)->()")]
fn f<const N: usize>(a: ArrayView1<f32>) -> f32 {
    a.sum() * N as f32
}

fn main() {}
