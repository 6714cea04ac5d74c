use ufunc::prelude::*;
use ndarray::ArrayView1;

#[guvectorize("(n)->()", types = [f32, String])]
fn total<T>(a: ArrayView1<T>) -> T {
    a.sum()
}

fn main() {}
