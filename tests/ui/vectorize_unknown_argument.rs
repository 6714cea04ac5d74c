use ufunc::prelude::*;

#[vectorize(fastmath = true)]
fn f(a: f32) -> f32 {
    a
}

fn main() {}
