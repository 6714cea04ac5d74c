use ufunc::prelude::*;

#[vectorize]
fn f(a: f32) -> f32 {
    let _later = async { a };
    a
}

fn main() {}
