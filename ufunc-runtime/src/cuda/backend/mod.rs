//! The device behind the `cuda` target, as one trait with two implementations: the real GPU
//! (`gpu`, every cudarc call) and the host simulator (`sim`, `UFUNC_CUDA_SIM=1`). Everything
//! above this module works on opaque handles (`args`) and never asks which backend runs.

mod cufft;
mod gpu;
mod sim;
mod sim_fft;

use super::args::{
    Arg, Buffer, FftLayout, FftPlanHandle, HostBuffer, LaunchShape, ModuleHandle, StreamHandle,
};
use super::kernel::CudaKernel;
use crate::error::{Error, Result};
use std::sync::OnceLock;

/// What the runtime needs of a device: memory, streams, modules and launches.
pub(crate) trait Backend: Send + Sync {
    /// The stream that calls without a `Stream` use.
    fn default_stream(&self) -> StreamHandle;
    /// A new stream.
    fn new_stream(&self) -> Result<StreamHandle>;
    /// Zeroed memory of `bytes` bytes (at least one, so that it has an address).
    fn alloc_zeroed(&self, stream: &StreamHandle, bytes: usize) -> Result<Buffer>;
    /// Memory of `bytes` bytes (at least one) whose contents are unspecified: for outputs
    /// that are written whole before anything reads them.
    fn alloc(&self, stream: &StreamHandle, bytes: usize) -> Result<Buffer>;
    /// New memory holding `bytes`, copied after the work queued on `stream`.
    fn upload(&self, stream: &StreamHandle, bytes: &[u8]) -> Result<Buffer>;
    /// Page-locked host memory of `bytes` bytes (at least one, 8-byte aligned).
    fn alloc_host(&self, bytes: usize) -> Result<HostBuffer>;
    /// The bytes of `host`, once the copies queued from it are done.
    fn host_bytes<'a>(&self, host: &'a mut HostBuffer) -> Result<&'a mut [u8]>;
    /// New device memory holding the bytes of `host`, copied on `stream` without waiting.
    fn upload_host(&self, stream: &StreamHandle, host: &HostBuffer) -> Result<Buffer>;
    /// The size of `buf` in bytes.
    fn byte_len(&self, buf: &Buffer) -> Result<usize>;
    /// Copies `dst.len()` bytes of `buf` from byte `offset` into `dst`, after the work queued
    /// on `stream`.
    fn download_into(
        &self,
        stream: &StreamHandle,
        buf: &Buffer,
        offset: usize,
        dst: &mut [u8],
    ) -> Result<()>;
    /// Copies `src` over `dst` (of the same size) on the device.
    fn copy(&self, stream: &StreamHandle, src: &Buffer, dst: &mut Buffer) -> Result<()>;
    /// Compiles (or finds in the disk cache) and loads `source`, the source of `kernel`.
    fn load(&self, kernel: &CudaKernel, source: &str) -> Result<ModuleHandle>;
    /// Queues `entry` of `module` on `stream` over `shape`, with `args` then the launch's
    /// `status` word as the kernel's parameters.
    fn launch(
        &self,
        stream: &StreamHandle,
        module: &ModuleHandle,
        entry: &str,
        shape: LaunchShape,
        args: &mut [Arg<'_>],
        status: &mut Buffer,
    ) -> Result<()>;
    /// A batched FFT plan for `layout`, run on `stream`. A missing FFT library is an `Err`.
    fn fft_plan(&self, stream: &StreamHandle, layout: &FftLayout) -> Result<FftPlanHandle>;
    /// Queues `plan` on `stream`, reading `input` (a buffer and the byte offset of the first
    /// element; `None`: in place, from `output`) and writing `output` from byte `out_offset`.
    /// `inverse` chooses the direction of a complex plan. A complex-to-real plan may overwrite
    /// its input.
    fn fft_exec(
        &self,
        stream: &StreamHandle,
        plan: &FftPlanHandle,
        input: Option<(&Buffer, usize)>,
        output: (&mut Buffer, usize),
        inverse: bool,
    ) -> Result<()>;
    /// Waits for the work queued on `stream`.
    fn synchronize(&self, stream: &StreamHandle) -> Result<()>;
    /// The device's free and total memory, in bytes.
    fn memory(&self) -> Result<DeviceMemory>;
}

/// The memory of the device behind the `cuda` target, in bytes ([`device_memory`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceMemory {
    /// What this process could still allocate (the driver's `cuMemGetInfo`).
    pub free: usize,
    /// All the device has.
    pub total: usize,
}

/// The free and total memory of the device that `cuda` calls run on: GPU 0's, after waiting
/// for the work queued on it (memory its streams freed then counts as free), or on the
/// simulator the host's (its available and total memory). No device is an `Err`.
///
/// ```
/// use ufunc_runtime::{device_memory, Error};
/// match device_memory() {
///     Ok(memory) => assert!(memory.free <= memory.total),
///     Err(e) => assert!(matches!(e, Error::NoCudaDevice { .. } | Error::Cuda { .. }), "{e}"),
/// }
/// ```
pub fn device_memory() -> Result<DeviceMemory> {
    backend()?.memory()
}

/// Whether the `cuda` target runs on the host simulator: `UFUNC_CUDA_SIM=1`, read once. The
/// simulator compiles the same generated CUDA C++ with the host's C++ compiler (`CXX`, else
/// `c++`) and runs every kernel's threads one after another on the CPU, with device memory in
/// host memory: for debugging and testing where there is no GPU, as Numba's `NUMBA_ENABLE_CUDASIM`.
///
/// ```
/// if ufunc_runtime::cuda_simulated() {
///     println!("cuda calls run on the host simulator");
/// }
/// ```
pub fn cuda_simulated() -> bool {
    static SIM: OnceLock<bool> = OnceLock::new();
    *SIM.get_or_init(|| std::env::var("UFUNC_CUDA_SIM").is_ok_and(|v| v == "1"))
}

/// The device of this process: the simulator under `UFUNC_CUDA_SIM=1`, else GPU 0, or why there
/// is none (checked before any cudarc call that would panic).
pub(crate) fn backend() -> Result<&'static dyn Backend> {
    static BACKEND: OnceLock<std::result::Result<Box<dyn Backend>, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            if cuda_simulated() {
                Ok(Box::new(sim::Sim))
            } else {
                gpu::Gpu::open().map(|g| Box::new(g) as Box<dyn Backend>)
            }
        })
        .as_ref()
        .map(|b| b.as_ref())
        .map_err(|reason| Error::NoCudaDevice {
            reason: reason.clone(),
        })
}

/// The error of a handle given to a backend that did not make it (a bug, never user input).
pub(crate) fn foreign(what: &str) -> Error {
    Error::Cuda {
        what: format!("{what}: a handle of another device backend"),
    }
}

/// Bytes `offset..offset + len` of device memory of `size` bytes, or the error of a read
/// past its end (a bug, never user input).
pub(crate) fn byte_range(offset: usize, len: usize, size: usize) -> Result<std::ops::Range<usize>> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(offset..end),
        _ => Err(Error::Cuda {
            what: format!(
                "reading {len} bytes at byte {offset} of device memory of {size} bytes: out of range"
            ),
        }),
    }
}
