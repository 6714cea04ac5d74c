use ufunc::prelude::*;

#[vectorize]
fn f(a: Vec<f32>) -> f32 {
    a[0]
}

fn main() {}
