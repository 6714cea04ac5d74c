use ufunc::prelude::*;

#[vectorize(target = "gpu")]
fn f(a: f32) -> f32 {
    a
}

fn main() {}
