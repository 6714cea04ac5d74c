use ufunc::prelude::*;

#[kernel_fn]
fn h(a: &f32) -> f32 {
    *a
}

fn main() {}
