//! A body that panics (integer division by zero, an explicit `panic!`) becomes an `Err` of
//! the call, on every CPU thread that runs it, and prints nothing: the panic hook this module
//! installs (once, chaining to the hook that was set before it) stays quiet while the thread is
//! running a ufunc body whose panics the call catches, and passes every other panic to the
//! previous hook, so a user's own hook and the default report of their other panics are
//! untouched.

use crate::error::{Error, Result};
use std::cell::Cell;
use std::sync::Once;

thread_local! {
    /// How many calls that catch panics this thread is inside.
    static QUIET: Cell<u32> = const { Cell::new(0) };
}

/// Installs the quiet-while-caught hook in front of the current one, once per process.
fn install_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(Cell::get) == 0 {
                previous(info);
            }
        }));
    });
}

/// Whether this thread is inside a call that catches panics (for the threads it hands work to).
pub(crate) fn is_quiet() -> bool {
    QUIET.with(Cell::get) > 0
}

/// Runs `run` with this thread's panics reported by the call, not the hook, if `quiet`.
pub(crate) fn quiet_if<R>(quiet: bool, run: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            QUIET.with(|q| q.set(q.get() - 1));
        }
    }
    if !quiet {
        return run();
    }
    QUIET.with(|q| q.set(q.get() + 1));
    let _reset = Reset;
    run()
}

/// Runs `run`, turning a panic of the body into `Error::KernelPanic`, without printing it.
pub(crate) fn catching_panics(function: &'static str, run: impl FnOnce()) -> Result<()> {
    install_hook();
    quiet_if(true, || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
    })
    .map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".to_string());
        Error::KernelPanic { function, message }
    })
}
