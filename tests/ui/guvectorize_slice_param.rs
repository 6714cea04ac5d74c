use ufunc::prelude::*;

#[guvectorize("(n)->()")]
fn f(a: &[f32]) -> f32 {
    a.iter().sum()
}

fn main() {}
