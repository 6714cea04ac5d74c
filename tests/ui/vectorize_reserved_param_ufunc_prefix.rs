use ufunc::prelude::*;

#[vectorize]
fn f(__ufunc_a: f32) -> f32 {
    __ufunc_a
}

fn main() {}
