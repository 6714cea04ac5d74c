use ufunc::prelude::*;

// Every node the CUDA translation cannot take is reported, each at its own span.
#[vectorize(targets = ["cpu", "cuda"])]
fn f(a: f32, n: u32) -> f32 {
    let scale = |x: f32| x * 2.0;
    let table = [1.0f32, 2.0];
    let mut s = 0.0;
    for k in (0..n).skip(1) {
        s += k as f32;
    }
    scale(a) + table[0] + s + format!("{a}").len() as f32
}

fn main() {}
