use ufunc::prelude::*;

#[kernel_fn]
fn h<T>(a: T) -> T {
    a
}

fn main() {}
