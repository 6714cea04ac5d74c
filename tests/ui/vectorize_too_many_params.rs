use ufunc::prelude::*;

#[vectorize]
fn f(
    a0: f32, a1: f32, a2: f32, a3: f32, a4: f32, a5: f32, a6: f32,
    a7: f32, a8: f32, a9: f32, a10: f32, a11: f32, a12: f32,
) -> f32 {
    a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12
}

fn main() {}
