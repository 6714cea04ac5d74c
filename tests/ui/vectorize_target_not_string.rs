use ufunc::prelude::*;

#[vectorize(target = cpu)]
fn f(a: f32) -> f32 {
    a
}

fn main() {}
