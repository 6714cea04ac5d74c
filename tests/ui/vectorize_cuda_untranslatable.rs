use ufunc::prelude::*;

#[vectorize(targets = ["cpu", "cuda"])]
fn f(a: f32) -> f32 {
    let scale = |x: f32| x * 2.0;
    scale(a)
}

fn main() {}
