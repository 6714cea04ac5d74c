//! Procedural macros of `ufunc`: `#[vectorize]` lifts a scalar function to a NumPy-style ufunc,
//! `#[guvectorize]` lifts a function over core sub-arrays to a generalized ufunc, and
//! `#[kernel_fn]` makes a helper callable from ufunc bodies.
//!
//! The three entry points run the same passes (`expand::expand`), as serde_derive does, with
//! one error context (`errors::Errors`) that every pass records into and that must be checked
//! before it is dropped:
//!
//! 1. `attr` reads the attribute's arguments, going on after a bad one;
//! 2. `model` reads the function into the one model the three share (`model::Ufunc`: the
//!    parameters with the part each takes, the returned values, the type parameter), never
//!    failing;
//! 3. `check` judges the model, one function per rule (`layout` parses gufunc layouts);
//! 4. with the `cuda` target, `cuda` translates the body to CUDA C++, recording every node it
//!    cannot translate;
//! 5. if nothing was recorded, `expand` generates the code and cannot fail: `companions`
//!    writes the array function and the call forms both ufunc kinds share, `vectorize`,
//!    `guvectorize` and `kernel_fn` what only they have, and `lane` the SIMD form of a body.
//!    Otherwise the output is every error plus the function unchanged, so that no follow-on
//!    errors appear.

mod attr;
mod check;
mod cuda;
mod errors;
mod expand;
mod lane;
mod layout;
mod model;
mod types;

use attr::Macro;
use proc_macro::TokenStream;

/// Turns `fn f(a: f32, b: f32) -> f32` into a ufunc over arrays, views and scalars with NumPy
/// broadcasting. See the `ufunc` crate's documentation for the generated API.
///
/// Arguments: `target = "cpu" | "parallel" | "cuda"` or `targets = [...]` (the first is the
/// default, the others are reachable with `f::on`), `types = [..]` for a function generic over
/// one type, and `fastmath = true`. For a function `f(T, T) -> T`, which gets the ufunc
/// methods (`f::reduce`, `f::accumulate`, `f::outer`, `f::at`): `identity = ...`, the result of
/// reducing nothing, and `associative = true`, which declares `f` associative and commutative.
/// As in NumPy, `f::reduce` regroups (SIMD accumulators, pairwise blocks, split over threads)
/// only a *reorderable* function, one with an identity or declared associative; any other
/// (`a - b`, a recurrence such as `0.5 * acc + x`) is folded strictly in order along its one
/// reduced axis, and reducing several axes of it is an error. `associative = true` also lets
/// `f::accumulate` regroup `f` (a blocked scan, split over threads on `parallel`; 1.5-2x faster
/// a core, exact for integers, `min` and `max`) instead of applying it strictly in order as
/// NumPy does. The regrouped loops evaluate `f` on other groupings of the elements, and on
/// vector lanes whose results they drop, so a function that panics on some values (a checked
/// overflow) may fail where the in-order loops would not.
///
/// `fastmath = true`, per target: on `cpu` and `parallel` the SIMD lane code contracts
/// `a * b + c` into fused multiply-adds where the CPU has FMA (the scalar path is unchanged); on
/// `cuda` the kernel is compiled with `--use_fast_math` (approximate division, square root and
/// transcendentals, contracted multiply-adds) instead of `--fmad=false`. On `#[guvectorize]` it
/// has the `cuda` meaning only: a core is plain Rust on the CPU targets.
///
/// With the `cuda` target the body is translated to CUDA C++: `let` (shadowing too), arithmetic
/// (complex with real operands too), comparisons, `as` casts, `if`/`else`, `match` on integers,
/// `for` over ranges, `while`, `loop`, `break`/`continue`/`return`, tuples, math methods of
/// f32/f64/Complex, `#[kernel_fn]` helpers, constants and `panic!`/`assert!`, plus indexing,
/// `dim`, `nrows`, `ncols`, `len`, `is_empty` and `shape()[k]` of views in a gufunc core.
/// Anything else is a compile error at its span that names it. A panic's message reaches the
/// host as on the CPU targets, with up to four integer, float or bool format arguments.
///
/// ```
/// use ufunc::prelude::*;
/// use ndarray::array;
///
/// #[vectorize(types = [f32, f64], targets = ["cpu", "parallel"])]
/// fn lerp<T>(a: T, b: T, t: T) -> T {
///     a + (b - a) * t
/// }
///
/// let a = array![[0.0f64, 1.0], [2.0, 3.0]];
/// assert_eq!(lerp(&a, 10.0, 0.5).unwrap(), array![[5.0, 5.5], [6.0, 6.5]]);
/// assert_eq!(lerp(&array![1.0f32], 3.0f32, 0.25f32).unwrap()[0], 1.5);
/// assert_eq!(lerp::scalar(0.0f32, 2.0, 0.5), 1.0);
/// let on_all_cores = lerp::on(Target::Parallel, &a, 0.0, 0.0).unwrap();
/// assert_eq!(on_all_cores, a);
/// assert!(lerp::KERNEL_PATH.is_simd());
/// ```
#[proc_macro_attribute]
pub fn vectorize(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(Macro::Vectorize, attr.into(), item.into()).into()
}

/// Turns a function over core sub-arrays into a generalized ufunc (NumPy's gufunc): the layout
/// string names the core dimensions of each operand, and the library loops and broadcasts over
/// the remaining (loop) dimensions. It takes the arguments of `#[vectorize]` after the layout
/// (`target`/`targets`, `types = [..]` for a function generic over one element type, and
/// `fastmath`), except `identity` and `associative`.
///
/// ```
/// use ufunc::prelude::*;
/// use ndarray::{array, Array3, ArrayView1};
///
/// #[guvectorize("(n),(n)->()", target = "parallel")]
/// fn dot(a: ArrayView1<f64>, b: ArrayView1<f64>) -> f64 {
///     a.dot(&b)
/// }
///
/// let a = Array3::<f64>::ones((4, 3, 5));
/// let d = dot(&a, &array![1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();   // loop dims (4,3), core n = 5
/// assert_eq!(d.shape(), &[4, 3]);
/// assert_eq!(d[[0, 0]], 15.0);
/// assert_eq!(dot::core(array![1.0, 2.0].view(), array![3.0, 4.0].view()), 11.0);
/// ```
#[proc_macro_attribute]
pub fn guvectorize(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(Macro::Guvectorize, attr.into(), item.into()).into()
}

/// Marks a helper function as callable from `#[vectorize]` bodies (Numba's device functions).
///
/// The function stays as it is; a lane version is generated beside it, which vectorized bodies
/// call, with the vector versions of its math methods. A function without the attribute can be
/// called too, by name or by path: the CPU targets call it as written, and `cuda` rejects it at
/// compile time, asking for `#[kernel_fn]` (a kernel needs the function's body to translate it).
///
/// ```
/// use ufunc::prelude::*;
/// use ndarray::array;
///
/// #[kernel_fn]
/// fn polar_to_cartesian(rho: f32, theta: f32) -> (f32, f32) {
///     (rho * theta.cos(), rho * theta.sin())
/// }
///
/// #[vectorize]
/// fn to_x(rho: f32, theta: f32) -> f32 {
///     polar_to_cartesian(rho, theta).0
/// }
///
/// assert_eq!(to_x(&array![2.0f32], 0.0f32).unwrap()[0], 2.0);
/// assert_eq!(polar_to_cartesian(1.0, 0.0), (1.0, 0.0));
/// ```
#[proc_macro_attribute]
pub fn kernel_fn(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(Macro::KernelFn, attr.into(), item.into()).into()
}
