use ufunc::prelude::*;

#[vectorize]
unsafe fn f(a: f32) -> f32 {
    a
}

fn main() {}
