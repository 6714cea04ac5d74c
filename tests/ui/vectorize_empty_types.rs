use ufunc::prelude::*;

#[vectorize(types = [])]
fn f<T>(a: T) -> T {
    a
}

fn main() {}
