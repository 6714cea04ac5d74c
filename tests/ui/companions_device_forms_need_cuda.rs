use ndarray::array;
use ufunc::prelude::*;

// #[vectorize] and #[guvectorize] get their call forms from one generator: without the cuda
// target neither has the device forms, and both say so the same way.
#[vectorize]
fn add(a: f32, b: f32) -> f32 {
    a + b
}

#[guvectorize("(),()->()")]
fn gu_add(a: f32, b: f32) -> f32 {
    a + b
}

fn main() {
    let x = array![1.0f32, 2.0];
    let _ = add::on_device(&x, &x);
    let _ = gu_add::on_device(&x, &x);
    let _ = add::out_stream(&x, &x, &mut x.clone());
    let _ = gu_add::out_stream(&x, &x, &mut x.clone());
}
