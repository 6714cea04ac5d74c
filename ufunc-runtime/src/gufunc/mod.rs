//! Generalized ufuncs on the CPU: the layout as data and its binding to one call's shapes
//! (`signature`), the core views the function receives (`view`), and the runner that calls the
//! core function once per loop index, looped and broadcast over the outer (loop) dimensions
//! (`run`). The call layer (`crate::call`) allocates outputs and picks the target.

mod run;
mod signature;
mod view;

pub(crate) use run::execute;
pub use run::GuBody;
pub use signature::{CoreBinding, CoreDim, Signature};
pub use view::{store_scalar, CoreArg, CoreParam, ViewLayout};
