use ufunc::prelude::*;

#[vectorize(target = "cpu", targets = ["parallel"])]
fn f(a: f32) -> f32 {
    a
}

fn main() {}
