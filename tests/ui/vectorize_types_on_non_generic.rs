use ufunc::prelude::*;

#[vectorize(types = [f32, f64])]
fn f(a: f32) -> f32 {
    a
}

fn main() {}
