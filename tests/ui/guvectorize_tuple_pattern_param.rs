use ufunc::prelude::*;

#[guvectorize("(),()->()")]
fn f((a, b): (f32, f32)) -> f32 {
    a + b
}

fn main() {}
