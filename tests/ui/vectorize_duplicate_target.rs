use ufunc::prelude::*;

#[vectorize(targets = ["cpu", "parallel", "cpu"])]
fn f(a: f32) -> f32 {
    a
}

fn main() {}
