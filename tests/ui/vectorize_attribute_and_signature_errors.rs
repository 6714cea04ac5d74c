use ufunc::prelude::*;

// The attribute's errors and the function's are reported in one compile.
#[vectorize(target = "gpu", types = f32)]
fn f(x: &f32, out: f32) -> Vec<f32> {
    vec![*x + out]
}

fn main() {}
