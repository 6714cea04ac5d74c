use ufunc::prelude::*;
use ndarray::ArrayView1;

#[guvectorize("(n),()")]
fn f(a: ArrayView1<f64>, b: f64) {
    let _ = (a, b);
}

fn main() {}
