use ufunc::prelude::*;

#[vectorize(target = "cuda")]
fn f(a: f32) -> f32 {
    assert!(a > 0.0, "got {:>8}", a);
    a
}

fn main() {}
