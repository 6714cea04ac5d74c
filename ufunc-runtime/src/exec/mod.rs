//! Execution: plan the loop, then walk it on one thread or on rayon's pool.

mod entry;
mod plan;
mod run;

pub use plan::{plan_loop, LoopPlan};
pub(crate) use run::execute;
