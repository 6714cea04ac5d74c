use ufunc::prelude::*;

#[vectorize]
fn f(a: f32) -> f32 {
    let p = &a as *const f32;
    unsafe { *p }
}

fn main() {}
