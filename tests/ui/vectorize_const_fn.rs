use ufunc::prelude::*;

#[vectorize]
const fn f(a: f32) -> f32 {
    a
}

fn main() {}
