//! The `cuda` target's runtime. Layers, each importing only those below it:
//!
//! - `args` (leaf): opaque handles (memory, streams, modules), kernel arguments, grid extent.
//! - `kernel`: what generated code gives the runtime (`CudaKernel`, `DeviceKernel`), the
//!   panic codes, the prelude; `literal`: captured constants as exact C++ literals;
//!   `skeleton`: the `__global__` kernels around a translated body, one file per kind.
//! - `nvrtc`, `cache`: compiling sources, and compiled kernels kept on disk.
//! - `backend`: the `Backend` trait with its two implementations, the GPU (cudarc) and the
//!   host simulator (`UFUNC_CUDA_SIM=1`).
//! - `queue`: default and user streams, counted host/device copies, panic reports.
//! - `launch`: loaded modules by name and source hash; element-wise and gufunc launches.
//! - `host`: the target on host operands (copy in, launch, copy out); `methods`: `reduce` and
//!   `accumulate` of a binary function on device and host operands.
//! - `array`: device arrays and views; `operand`: what device calls accept and return;
//!   `stream`: the public `Stream`; `call`: the device calls generated code makes.
//! - `fft`: transforms on device memory (a host recipe run as batched backend plans), under
//!   `crate::fft::device`.

mod args;
mod array;
mod backend;
mod cache;
mod call;
mod fft;
mod host;
mod kernel;
mod launch;
mod literal;
mod methods;
mod nvrtc;
mod operand;
mod panics;
mod queue;
mod skeleton;
mod stream;

pub(crate) use args::{Arg, Buffer};
pub use array::{device_array, to_device, to_device_on, DeviceArray, DeviceView};
pub(crate) use array::{wrap, PinnedImage};
pub use backend::{cuda_simulated, device_memory, DeviceMemory};
pub use cache::{cached_cubin, kernel_cache_dir};
pub(crate) use call::queue_of;
pub use call::{call_device, call_out_device, gu_call_device, gu_call_out_device};
pub(crate) use fft::{contiguous, run_recipe};
pub(crate) use host::{run_elementwise, run_gufunc};
pub(crate) use kernel::support_kernels;
pub use kernel::{cuda_prelude, CudaKernel, DeviceKernel, KernelSource};
pub(crate) use launch::{launch_support, launch_support_block};
pub use literal::{cuda_const, CudaLiteral};
pub use methods::{
    accumulate_device, at_device, outer_device, reduce_device, reduce_out_device, DeviceBinaryOp,
};
pub(crate) use methods::{accumulate_host, reduce_host};
pub use nvrtc::{compile, nvrtc_available, Compiled, NvrtcOutput};
pub use operand::{
    DeviceOperand, DeviceOperands, DeviceOutOperands, DeviceOutputs, RawDeviceOperand,
};
pub use panics::{PanicSite, PanicTable, HELPER_SITE_CODE_BASE, SITE_CODE_BASE};
pub(crate) use queue::Queue;
pub use queue::{cuda_counters, CudaCounters, DeviceBuffer};
pub use skeleton::{kernel_source, GuOperand, KernelKind};
pub use stream::Stream;

/// Test support: `source` compiles with NVRTC for sm_90 as the runtime compiles it (skipped
/// without NVRTC unless `UFUNC_REQUIRE_NVRTC=1`).
#[cfg(test)]
pub(crate) fn assert_compiles(test: &str, source: &KernelSource) {
    if !nvrtc_available() {
        assert!(
            std::env::var("UFUNC_REQUIRE_NVRTC").map_or(true, |v| v != "1"),
            "NVRTC is required (UFUNC_REQUIRE_NVRTC=1) but libnvrtc cannot be loaded"
        );
        eprintln!("SKIPPED {test}: no NVRTC");
        return;
    }
    let compiled = compile(
        source.text(),
        "sm_90",
        &["--fmad=false"],
        NvrtcOutput::Cubin,
    );
    assert!(compiled.is_ok(), "{test}: {compiled:?}");
}

/// [`assert_compiles`] for the sources of `#[vectorize(target = "cuda")]` kernels
/// (their `cuda_source()`).
#[cfg(test)]
pub(crate) fn assert_all_compile(test: &str, sources: impl IntoIterator<Item = String>) {
    for source in sources {
        assert_compiles(test, &crate::KernelSource::new(source));
    }
}
