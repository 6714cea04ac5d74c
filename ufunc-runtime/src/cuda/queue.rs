//! Queues of device work: a stream of the backend, and, for a `Stream` the user holds, the
//! status words of the launches that `synchronize` must read. Each launch has a status word
//! (the passes of one reduction share one) reported exactly once, to its own call or stream. Every copy of operand data between
//! host and device goes through here and is counted.

use super::args::{
    Arg, Buffer, FftLayout, FftPlanHandle, HostBuffer, LaunchShape, ModuleHandle, StreamHandle,
};
use super::backend::{backend, Backend};
use super::cache::COMPILES;
use super::panics::{record_message, PanicTable, STATUS_BYTES};
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

static HOST_TO_DEVICE: AtomicUsize = AtomicUsize::new(0);
static DEVICE_TO_HOST: AtomicUsize = AtomicUsize::new(0);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static LAUNCHES: AtomicUsize = AtomicUsize::new(0);
static DEVICE_TO_HOST_BYTES: AtomicUsize = AtomicUsize::new(0);
static PAGE_LOCKED_ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

/// Counts of what the `cuda` target did in this process, for tests and diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CudaCounters {
    /// Host-to-device copies of operand data (shapes and strides passed to a launch are not
    /// counted).
    pub host_to_device: usize,
    /// Device-to-host copies.
    pub device_to_host: usize,
    /// Bytes of the device-to-host copies.
    pub device_to_host_bytes: usize,
    /// Kernel compilations: NVRTC (or, under the simulator, the host C++ compiler) runs that
    /// neither the in-memory nor the disk cache could spare.
    pub compiles: usize,
    /// Device allocations: outputs, uploads, scratch and status words (each a few driver
    /// calls on a GPU, so a pipeline that reuses its memory makes few).
    pub allocations: usize,
    /// Kernel launches and FFT executions queued.
    pub launches: usize,
    /// Page-locked host buffers allocated (for frames uploaded while the host reads the
    /// next; about 10 ms per 16 MB on an H100).
    pub page_locked_allocations: usize,
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
        device_to_host_bytes: DEVICE_TO_HOST_BYTES.load(Ordering::Relaxed),
        page_locked_allocations: PAGE_LOCKED_ALLOCATIONS.load(Ordering::Relaxed),
        compiles: COMPILES.load(Ordering::Relaxed),
        allocations: ALLOCATIONS.load(Ordering::Relaxed),
        launches: LAUNCHES.load(Ordering::Relaxed),
    }
}

/// How many FFT plans a queue keeps, as CuPy's plan cache: each cuFFT plan owns a device
/// work area, so a program of many shapes would otherwise fill the device with them. A plan
/// dropped here lives on while a call still holds it, and waits for its stream's work
/// before it frees its work area.
pub(crate) const FFT_PLANS_KEPT: usize = 16;

/// The `capacity` values last used, by key; the least recently used goes first.
pub(crate) struct RecentlyUsed<K, V> {
    /// Least recently used first.
    entries: Vec<(K, V)>,
    capacity: usize,
}

impl<K, V> Default for RecentlyUsed<K, V> {
    fn default() -> Self {
        RecentlyUsed {
            entries: Vec::new(),
            capacity: FFT_PLANS_KEPT,
        }
    }
}

impl<K: PartialEq, V: Clone> RecentlyUsed<K, V> {
    /// The value of `key`, now the most recently used.
    pub(crate) fn get(&mut self, key: &K) -> Option<V> {
        let at = self.entries.iter().position(|(k, _)| k == key)?;
        let entry = self.entries.remove(at);
        let value = entry.1.clone();
        self.entries.push(entry);
        Some(value)
    }

    /// Keeps `value` for `key` (absent); returns the least recently used beyond capacity.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        let evicted = (self.entries.len() >= self.capacity).then(|| self.entries.remove(0).1);
        self.entries.push((key, value));
        evicted
    }
}

/// Bytes of device memory (host memory under the simulator).
pub struct DeviceBuffer(pub(crate) Buffer);

/// A launch whose status word `synchronize` must read: the function, its panic sites, the word.
pub(crate) type Pending = (&'static str, &'static PanicTable, Buffer);

/// Where work is queued, and whether each call waits for its kernels.
pub(crate) struct Queue {
    pub(crate) backend: &'static dyn Backend,
    pub(crate) stream: StreamHandle,
    /// `None`: every call waits and reports its panics. `Some`: launches return at once and
    /// their status words (with the function's panic sites) wait here until `synchronize`
    /// reads them.
    pub(crate) deferred: Option<Mutex<Vec<Pending>>>,
    /// The FFT plans made for this stream, by layout (a cuFFT plan owns a work area, so
    /// streams do not share plans); dropped with the stream.
    fft_plans: Mutex<RecentlyUsed<FftLayout, FftPlanHandle>>,
    /// The status word of the support kernels, which never write it: made once, not per
    /// launch (an allocation and a clear fewer on every launch).
    support_status: Mutex<Option<Buffer>>,
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
            fft_plans: Mutex::default(),
            support_status: Mutex::default(),
        }))
    }

    /// A new queue on a stream of its own, whose calls return without waiting.
    pub(crate) fn deferred() -> Result<Queue> {
        let backend = backend()?;
        Ok(Queue {
            backend,
            stream: backend.new_stream()?,
            deferred: Some(Mutex::new(Vec::new())),
            fft_plans: Mutex::default(),
            support_status: Mutex::default(),
        })
    }

    /// Copies `bytes` to new device memory (one counted transfer).
    pub(crate) fn upload(&self, bytes: &[u8]) -> Result<Buffer> {
        HOST_TO_DEVICE.fetch_add(1, Ordering::Relaxed);
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        self.backend.upload(&self.stream, bytes)
    }

    /// Page-locked host memory of `bytes` bytes, for `upload_pinned`.
    pub(crate) fn alloc_host(&self, bytes: usize) -> Result<HostBuffer> {
        PAGE_LOCKED_ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        self.backend.alloc_host(bytes)
    }

    /// The bytes of `host`, once the uploads queued from it are done.
    pub(crate) fn host_bytes<'a>(&self, host: &'a mut HostBuffer) -> Result<&'a mut [u8]> {
        self.backend.host_bytes(host)
    }

    /// Copies page-locked `host` to new device memory on this queue's stream, without
    /// waiting (one counted transfer).
    pub(crate) fn upload_pinned(&self, host: &HostBuffer) -> Result<Buffer> {
        HOST_TO_DEVICE.fetch_add(1, Ordering::Relaxed);
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        self.backend.upload_host(&self.stream, host)
    }

    /// Copies shapes or strides to the device (uncounted: the counters are for operand data).
    pub(crate) fn upload_i64(&self, values: &[i64]) -> Result<Buffer> {
        // SAFETY: `i64` has no padding, so its values are `size_of_val(values)` plain bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(values.as_ptr() as *const u8, size_of_val(values))
        };
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        self.backend.upload(&self.stream, bytes)
    }

    /// Zeroed device memory of `bytes` bytes.
    pub(crate) fn alloc_zeroed(&self, bytes: usize) -> Result<Buffer> {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        self.backend.alloc_zeroed(&self.stream, bytes)
    }

    /// Device memory of `bytes` bytes, for an output written whole before it is read.
    pub(crate) fn alloc(&self, bytes: usize) -> Result<Buffer> {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        self.backend.alloc(&self.stream, bytes)
    }

    /// The plan of `layout` on this queue's stream: made once, then reused while it is one
    /// of the [`FFT_PLANS_KEPT`] most recently used.
    pub(crate) fn fft_plan(&self, layout: &FftLayout) -> Result<FftPlanHandle> {
        let mut plans = self.fft_plans.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = plans.get(layout) {
            return Ok(p);
        }
        let plan = self.backend.fft_plan(&self.stream, layout)?;
        let evicted = plans.insert(layout.clone(), plan.clone());
        // Dropping a plan waits for its stream: not while other threads wait for the cache.
        drop(plans);
        drop(evicted);
        Ok(plan)
    }

    /// Queues `entry` of `module` over `shape` with `args` and the status word `status`.
    pub(crate) fn launch(
        &self,
        module: &ModuleHandle,
        entry: &str,
        shape: LaunchShape,
        args: &mut [Arg<'_>],
        status: &mut Buffer,
    ) -> Result<()> {
        LAUNCHES.fetch_add(1, Ordering::Relaxed);
        self.backend
            .launch(&self.stream, module, entry, shape, args, status)
    }

    /// Queues the FFT `plan` from `input` (in place without one) into `output`.
    pub(crate) fn fft_exec(
        &self,
        plan: &FftPlanHandle,
        input: Option<(&Buffer, usize)>,
        output: (&mut Buffer, usize),
        inverse: bool,
    ) -> Result<()> {
        LAUNCHES.fetch_add(1, Ordering::Relaxed);
        self.backend
            .fft_exec(&self.stream, plan, input, output, inverse)
    }

    /// Copies `src` over `dst` on the device (not counted as a transfer).
    pub(crate) fn copy_within(&self, src: &Buffer, dst: &mut Buffer) -> Result<()> {
        self.backend.copy(&self.stream, src, dst)
    }

    /// Copies device memory back to the host (one counted transfer), after the work queued
    /// before it.
    pub(crate) fn download(&self, mem: &Buffer) -> Result<Vec<u8>> {
        let mut bytes = vec![0; self.backend.byte_len(mem)?];
        self.download_into(mem, 0, &mut bytes)?;
        Ok(bytes)
    }

    /// Copies `dst.len()` bytes of device memory from byte `offset` into `dst` (one counted
    /// transfer), after the work queued before it.
    pub(crate) fn download_into(&self, mem: &Buffer, offset: usize, dst: &mut [u8]) -> Result<()> {
        DEVICE_TO_HOST.fetch_add(1, Ordering::Relaxed);
        DEVICE_TO_HOST_BYTES.fetch_add(dst.len(), Ordering::Relaxed);
        self.backend.download_into(&self.stream, mem, offset, dst)
    }

    /// Waits for the work queued here.
    pub(crate) fn wait(&self) -> Result<()> {
        self.backend.synchronize(&self.stream)
    }

    /// Runs `launch` with the status word of kernels that never write theirs.
    pub(crate) fn with_support_status<R>(
        &self,
        launch: impl FnOnce(&mut Buffer) -> Result<R>,
    ) -> Result<R> {
        let mut word = self
            .support_status
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let word = match &mut *word {
            Some(word) => word,
            empty => empty.insert(self.status_word()?),
        };
        launch(word)
    }

    /// A zeroed status word for one launch (see the prelude's `__ufunc_panic` and `panics`).
    pub(crate) fn status_word(&self) -> Result<Buffer> {
        self.alloc_zeroed(STATUS_BYTES)
    }

    /// After a launch with `status`: a waiting queue waits and reports a panic of the body; a
    /// deferred one keeps the word for `synchronize`. `sites` words the body's own panics.
    pub(crate) fn finish_launch(
        &self,
        function: &'static str,
        sites: &'static PanicTable,
        status: Buffer,
    ) -> Result<()> {
        match &self.deferred {
            None => {
                self.wait()?;
                self.check_panic(function, sites, &status)
            }
            Some(pending) => {
                let mut pending = pending.lock().unwrap_or_else(|e| e.into_inner());
                pending.push((function, sites, status));
                Ok(())
            }
        }
    }

    /// Waits for the queue, then reports the first panic of any kernel launched on it since
    /// the last synchronisation (each launch's word is read once, then dropped).
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.wait()?;
        let pending = match &self.deferred {
            Some(p) => std::mem::take(&mut *p.lock().unwrap_or_else(|e| e.into_inner())),
            None => Vec::new(),
        };
        let mut first = Ok(());
        for (function, sites, status) in pending {
            let checked = self.check_panic(function, sites, &status);
            if first.is_ok() {
                first = checked;
            }
        }
        first
    }

    /// Reads a launch's status word (not counted as a transfer): a body that panicked is an
    /// `Err`.
    fn check_panic(
        &self,
        function: &'static str,
        sites: &'static PanicTable,
        status: &Buffer,
    ) -> Result<()> {
        let mut bytes = vec![0; self.backend.byte_len(status)?];
        self.backend
            .download_into(&self.stream, status, 0, &mut bytes)?;
        match bytes
            .get(..4)
            .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        {
            Some(0) => Ok(()),
            Some(_) => Err(Error::KernelPanic {
                function,
                message: record_message(&bytes, sites),
            }),
            None => Err(Error::Cuda {
                what: format!("reading the status of `{function}`: {} bytes", bytes.len()),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_plan_goes_first() {
        let mut plans = RecentlyUsed::<u32, &str> {
            entries: Vec::new(),
            capacity: 3,
        };
        assert_eq!(plans.insert(1, "one"), None);
        plans.insert(2, "two");
        plans.insert(3, "three");
        assert_eq!(plans.get(&1), Some("one"));
        // 2 is now the least recently used.
        assert_eq!(plans.insert(4, "four"), Some("two"));
        assert_eq!(plans.get(&2), None);
        assert_eq!(plans.get(&3), Some("three"));
        assert_eq!(plans.get(&1), Some("one"));
        assert_eq!(plans.get(&4), Some("four"));
        assert_eq!(plans.entries.len(), 3);
    }
}
