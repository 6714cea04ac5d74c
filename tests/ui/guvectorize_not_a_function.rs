use ufunc::prelude::*;

#[guvectorize("(n)->()")]
struct S(f32);

fn main() {}
