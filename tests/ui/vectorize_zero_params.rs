use ufunc::prelude::*;

#[vectorize]
fn f() -> f32 {
    1.0
}

fn main() {}
