use ufunc::prelude::*;

#[vectorize(targets = [])]
fn f(a: f32) -> f32 {
    a
}

fn main() {}
