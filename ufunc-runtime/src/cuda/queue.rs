//! Queues of device work: a stream of the backend, and, for a `Stream` the user holds, the
//! modules whose panic flags `synchronize` must read. Every copy between host and device goes
//! through here and is counted.

use super::args::{Buffer, ModuleHandle, StreamHandle};
use super::backend::{backend, Backend};
use super::cache::COMPILES;
use super::kernel::panic_message;
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

static HOST_TO_DEVICE: AtomicUsize = AtomicUsize::new(0);
static DEVICE_TO_HOST: AtomicUsize = AtomicUsize::new(0);

/// Counts of what the `cuda` target did in this process, for tests and diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CudaCounters {
    /// Host-to-device copies of operand data (shapes and strides passed to a launch are not
    /// counted).
    pub host_to_device: usize,
    /// Device-to-host copies.
    pub device_to_host: usize,
    /// Kernel compilations: NVRTC (or, under the simulator, the host C++ compiler) runs that
    /// neither the in-memory nor the disk cache could spare.
    pub compiles: usize,
}

/// The counters so far.
///
/// ```
/// let c = ufunc_runtime::cuda_counters();
/// assert!(c.host_to_device >= c.compiles.min(c.host_to_device));
/// ```
pub fn cuda_counters() -> CudaCounters {
    CudaCounters {
        host_to_device: HOST_TO_DEVICE.load(Ordering::Relaxed),
        device_to_host: DEVICE_TO_HOST.load(Ordering::Relaxed),
        compiles: COMPILES.load(Ordering::Relaxed),
    }
}

/// Bytes of device memory (host memory under the simulator).
pub struct DeviceBuffer(pub(crate) Buffer);

/// Where work is queued, and whether each call waits for its kernels.
pub(crate) struct Queue {
    pub(crate) backend: &'static dyn Backend,
    pub(crate) stream: StreamHandle,
    /// `None`: every call waits and reports its panics. `Some`: launches return at once and
    /// their modules wait here until `synchronize` reads their panic flags.
    pub(crate) deferred: Option<Mutex<Vec<(&'static str, ModuleHandle)>>>,
}

impl Queue {
    /// The device's default queue, which waits for every call.
    pub(crate) fn default_queue() -> Result<&'static Queue> {
        static DEFAULT: OnceLock<Queue> = OnceLock::new();
        let backend = backend()?;
        Ok(DEFAULT.get_or_init(|| Queue {
            backend,
            stream: backend.default_stream(),
            deferred: None,
        }))
    }

    /// A new queue on a stream of its own, whose calls return without waiting.
    pub(crate) fn deferred() -> Result<Queue> {
        let backend = backend()?;
        Ok(Queue {
            backend,
            stream: backend.new_stream()?,
            deferred: Some(Mutex::new(Vec::new())),
        })
    }

    /// Copies `bytes` to new device memory (one counted transfer).
    pub(crate) fn upload(&self, bytes: &[u8]) -> Result<Buffer> {
        HOST_TO_DEVICE.fetch_add(1, Ordering::Relaxed);
        self.backend.upload(&self.stream, bytes)
    }

    /// Copies shapes or strides to the device (uncounted: the counters are for operand data).
    pub(crate) fn upload_i64(&self, values: &[i64]) -> Result<Buffer> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        self.backend.upload(&self.stream, &bytes)
    }

    /// Zeroed device memory of `bytes` bytes.
    pub(crate) fn alloc_zeroed(&self, bytes: usize) -> Result<Buffer> {
        self.backend.alloc_zeroed(&self.stream, bytes)
    }

    /// Copies `src` over `dst` on the device (not counted as a transfer).
    pub(crate) fn copy_within(&self, src: &Buffer, dst: &mut Buffer) -> Result<()> {
        self.backend.copy(&self.stream, src, dst)
    }

    /// Copies device memory back to the host (one counted transfer), after the work queued
    /// before it.
    pub(crate) fn download(&self, mem: &Buffer) -> Result<Vec<u8>> {
        DEVICE_TO_HOST.fetch_add(1, Ordering::Relaxed);
        self.backend.download(&self.stream, mem)
    }

    /// Waits for the work queued here.
    pub(crate) fn wait(&self) -> Result<()> {
        self.backend.synchronize(&self.stream)
    }

    /// After a launch of `module`: a waiting queue waits and reports a panic of the body; a
    /// deferred one remembers the module for `synchronize`.
    pub(crate) fn finish_launch(&self, function: &'static str, module: ModuleHandle) -> Result<()> {
        match &self.deferred {
            None => {
                self.wait()?;
                self.check_panic(function, &module)
            }
            Some(pending) => {
                let mut pending = pending.lock().unwrap_or_else(|e| e.into_inner());
                if !pending.iter().any(|(_, m)| m.same(&module)) {
                    pending.push((function, module));
                }
                Ok(())
            }
        }
    }

    /// Waits for the queue, then reports the first panic of any kernel launched on it since
    /// the last synchronisation.
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.wait()?;
        let pending = match &self.deferred {
            Some(p) => std::mem::take(&mut *p.lock().unwrap_or_else(|e| e.into_inner())),
            None => Vec::new(),
        };
        let mut first = Ok(());
        for (function, module) in pending {
            let status = self.check_panic(function, &module);
            if first.is_ok() {
                first = status;
            }
        }
        first
    }

    /// Reads and clears the module's panic flag: a body that panicked is an `Err`.
    fn check_panic(&self, function: &'static str, module: &ModuleHandle) -> Result<()> {
        match self.backend.take_status(&self.stream, module)? {
            0 => Ok(()),
            code => Err(Error::KernelPanic {
                function,
                message: panic_message(code).into(),
            }),
        }
    }
}
