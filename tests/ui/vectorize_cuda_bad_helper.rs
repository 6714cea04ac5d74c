use ufunc::prelude::*;

#[kernel_fn]
fn helper(x: f32) -> f32 {
    let v = vec![x];
    v[0]
}

#[vectorize(targets = ["cpu", "cuda"])]
fn f(a: f32) -> f32 {
    helper(a)
}

fn main() {}
