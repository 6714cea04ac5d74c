use ufunc::prelude::*;

#[vectorize]
fn f(a: f32) -> f32 {
    std::future::ready(a).await
}

fn main() {}
