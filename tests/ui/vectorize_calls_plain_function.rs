use ufunc::prelude::*;

fn halve(x: f32) -> f32 {
    x * 0.5
}

#[vectorize]
fn f(a: f32) -> f32 {
    halve(a) + 1.0
}

fn main() {}
