use ufunc::prelude::*;

#[vectorize]
struct S(f32);

fn main() {}
