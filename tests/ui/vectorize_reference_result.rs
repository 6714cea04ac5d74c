use ufunc::prelude::*;

#[vectorize]
fn f(a: f32) -> &'static str {
    if a > 0.0 { "positive" } else { "not positive" }
}

fn main() {}
