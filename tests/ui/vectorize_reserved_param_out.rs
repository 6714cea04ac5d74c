use ufunc::prelude::*;

#[vectorize]
fn f(out: f32) -> f32 {
    out
}

fn main() {}
