//! Streams: GPU work queued without waiting, as Numba's `cuda.stream()`. A call made with a
//! stream returns once its kernel is queued; `synchronize` waits for everything queued and
//! reports the first panic of any of those kernels. Device memory records which stream last
//! wrote it, so a later use on another stream (or a copy back to the host) waits for it, and
//! the last read queued on each stream, so that dropping it frees it only after every one of
//! them.

use super::queue::Queue;
use crate::error::Result;

/// A queue of GPU work (a CUDA stream; under the simulator, work runs at once but panics are
/// still reported by `synchronize`).
///
/// ```
/// use ndarray::array;
/// use ufunc_runtime::{Error, Stream};
/// match Stream::new() {
///     Ok(stream) => stream.synchronize().unwrap(),
///     Err(e) => assert!(matches!(e, Error::NoCudaDevice { .. }), "{e}"),
/// }
/// ```
pub struct Stream {
    pub(crate) queue: Queue,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Stream")
    }
}

impl Stream {
    /// A new stream on the device.
    pub fn new() -> Result<Stream> {
        Ok(Stream {
            queue: Queue::deferred()?,
        })
    }

    /// Waits for the work queued on this stream; `Err(KernelPanic)` if a kernel's body
    /// panicked for some element.
    pub fn synchronize(&self) -> Result<()> {
        self.queue.synchronize()
    }

    /// Runs `work`, which queues calls on this stream, then synchronises (Numba's
    /// `with stream.auto_synchronize():`). The first error wins: `work`'s, else the sync's.
    pub fn auto_synchronize<R>(&self, work: impl FnOnce(&Stream) -> Result<R>) -> Result<R> {
        let result = work(self);
        let synced = self.synchronize();
        let value = result?;
        synced.map(|()| value)
    }
}

/// Dropping a stream waits for its queued work (a panic not yet reported is then lost: call
/// `synchronize` to see it). cudarc orders memory between streams only while one exists, so
/// work left running by the last stream would otherwise go unordered with later work.
impl Drop for Stream {
    fn drop(&mut self) {
        // Nowhere to report a failure from a drop; `synchronize` is the call that reports.
        let _ = self.queue.wait();
    }
}
