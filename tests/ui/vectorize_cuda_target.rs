use ufunc::prelude::*;

#[vectorize(target = "cuda")]
fn f(a: f32) -> f32 {
    a
}

fn main() {}
