//! Procedural macros of `ufunc`: `#[vectorize]` lifts a scalar function to a NumPy-style ufunc,
//! `#[kernel_fn]` makes a helper callable from ufunc bodies. Each entry point parses into a
//! `model`, validates it (`check`), then generates code (`expand`); on invalid input it
//! emits the errors plus the user's function unchanged, so no follow-on errors appear.

mod attr;
mod check;
mod errors;
mod expand;
mod lane;
mod model;
mod types;

use proc_macro::TokenStream;

/// Turns `fn f(a: f32, b: f32) -> f32` into a ufunc over arrays, views and scalars with NumPy
/// broadcasting. See the `ufunc` crate's documentation for the generated API.
#[proc_macro_attribute]
pub fn vectorize(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::vectorize(attr.into(), item.into()).into()
}

/// Marks a helper function as callable from `#[vectorize]` bodies (Numba's device functions).
#[proc_macro_attribute]
pub fn kernel_fn(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::kernel_fn(attr.into(), item.into()).into()
}
