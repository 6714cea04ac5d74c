use ufunc::prelude::*;

#[vectorize]
async fn f(a: f32) -> f32 {
    a
}

fn main() {}
