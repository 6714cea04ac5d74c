use ufunc::prelude::*;

#[vectorize]
fn f<'a>(a: f32) -> f32 {
    a
}

fn main() {}
