use ufunc::prelude::*;

#[kernel_fn(inline)]
fn h(a: f32) -> f32 {
    a * 2.0
}

fn main() {}
