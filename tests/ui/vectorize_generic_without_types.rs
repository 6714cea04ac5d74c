use ufunc::prelude::*;

#[vectorize]
fn f<T>(a: T) -> T {
    a
}

fn main() {}
