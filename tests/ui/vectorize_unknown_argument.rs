use ufunc::prelude::*;

#[vectorize(nopython = true)]
fn f(a: f32) -> f32 {
    a
}

fn main() {}
