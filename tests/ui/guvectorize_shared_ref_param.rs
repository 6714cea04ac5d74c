use ufunc::prelude::*;

#[guvectorize("()->()")]
fn f(a: &f32) -> f32 {
    *a
}

fn main() {}
