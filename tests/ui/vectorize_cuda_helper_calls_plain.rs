use ufunc::prelude::*;

fn plain(x: f32) -> f32 {
    x * 2.0
}

#[kernel_fn]
fn helper(x: f32) -> f32 {
    plain(x) + 1.0
}

#[vectorize(targets = ["cpu", "cuda"])]
fn f(a: f32) -> f32 {
    helper(a) + 1.0
}

fn main() {}
