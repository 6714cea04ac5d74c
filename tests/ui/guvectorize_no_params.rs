use ufunc::prelude::*;

#[guvectorize("()->()")]
fn f() -> f32 {
    1.0
}

fn main() {}
