use ufunc::prelude::*;

#[vectorize(types = [f32, String])]
fn f<T>(a: T) -> T {
    a
}

fn main() {}
