use ufunc::prelude::*;

// Every argument is read on its own: a bad value does not hide the arguments after it.
#[vectorize(target = cpu, threads = 4, fastmath = yes, types = [f32])]
fn f(a: f32) -> f32 {
    a
}

fn main() {}
