use ufunc::prelude::*;
use ndarray::{ArrayView1, ArrayViewMut1};

#[guvectorize("(n)->(n)")]
fn f(a: ArrayView1<f32>, mut b: ArrayViewMut1<f32>, c: &mut f32) {
    b.assign(&a);
    *c = 0.0;
}

fn main() {}
