//! Generalized ufuncs: a core function over sub-arrays, looped and broadcast over the outer
//! (loop) dimensions, as `#[guvectorize]` generates them.

mod run;
mod signature;
mod view;

pub use run::{gu_call, gu_call_out, GuBody};
pub use signature::{CoreBinding, CoreDim, Signature};
pub use view::{store_scalar, CoreArg, CoreParam, ViewLayout};
