use ufunc::prelude::*;

#[vectorize]
fn f(a: &f32) -> f32 {
    *a
}

fn main() {}
