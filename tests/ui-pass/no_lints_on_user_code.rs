//! Generated code raises no lint on the user's spans: every form below builds with warnings
//! denied (issue 13, item 12: a one-line body used to trigger `unused_braces`).
#![deny(warnings)]

use ndarray::array;
use ufunc::prelude::*;

#[vectorize(target = "cpu")]
fn g(a: f32) -> f32 { a + 1.0 }

#[vectorize(targets = ["cpu", "parallel", "cuda"])]
fn g_all(a: f32) -> f32 { a + 1.0 }

#[vectorize(targets = ["cpu", "cuda"], types = [f32, f64], fastmath = true)]
fn h<T>(a: T, b: T) -> T { a * b + a }

#[vectorize(target = "cpu")]
fn two(a: i32, mut b: i32) -> (i32, i32) { b += 1; (a, b) }

#[kernel_fn]
fn helper(a: f64) -> f64 { a * 2.0 }

#[vectorize(targets = ["cpu", "cuda"])]
fn uses_helper(a: f64) -> f64 { helper(a) }

#[guvectorize("(n)->()", targets = ["cpu", "parallel", "cuda"])]
fn total(a: ArrayView1<f64>) -> f64 { a[0] + a[a.len() - 1] }

#[guvectorize("()->()", target = "cpu")]
fn twice(inp: i32, out: &mut i32) { *out = inp * 2; }

#[guvectorize("(n)->(n)", targets = ["cpu", "cuda"], fastmath = true)]
fn copy(a: ArrayView1<f32>, mut out: ArrayViewMut1<f32>) { for i in 0..a.len() { out[i] = a[i]; } }

fn main() {
    let x = array![1.0f32, 2.0];
    assert_eq!(g(&x).unwrap(), array![2.0f32, 3.0]);
    let _ = (g_all(&x), h(&x, &x), two(&array![1], 2), uses_helper(&array![1.0]));
    let _ = (total(&array![1.0, 2.0]), twice(&array![1]), copy(&x));
}
