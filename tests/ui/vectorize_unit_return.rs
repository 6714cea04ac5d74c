use ufunc::prelude::*;

#[vectorize]
fn f(a: f32) -> () {
    let _ = a;
}

fn main() {}
