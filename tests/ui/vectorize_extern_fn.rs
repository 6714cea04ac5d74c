use ufunc::prelude::*;

#[vectorize]
extern "C" fn f(a: f32) -> f32 {
    a
}

fn main() {}
