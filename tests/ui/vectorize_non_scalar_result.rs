use ufunc::prelude::*;

#[vectorize]
fn f(a: f32) -> String {
    a.to_string()
}

fn main() {}
