use ufunc::prelude::*;
use ndarray::ArrayView1;

#[guvectorize("(n)->()")]
fn f<T: Copy + std::iter::Sum<T>>(a: ArrayView1<T>) -> T {
    a.iter().copied().sum()
}

fn main() {}
