//! A body that panics (integer division by zero, an explicit `panic!`) becomes an `Err` of
//! the call, on every CPU thread that runs it.

use crate::error::{Error, Result};

/// Runs `run`, turning a panic of the body into `Error::KernelPanic`.
pub(crate) fn catching_panics(function: &'static str, run: impl FnOnce()) -> Result<()> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".to_string());
        Error::KernelPanic { function, message }
    })
}
