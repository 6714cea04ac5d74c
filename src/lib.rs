//! # ufunc: NumPy-style universal functions for Rust
//!
//! Write a scalar function, annotate it, and call it on `ndarray` arrays, views and scalars of
//! any dimension and strides, with NumPy broadcasting. The loops are vectorized for the CPU the
//! program runs on (AVX-512, AVX2+FMA or SSE2 on x86-64, NEON on aarch64, chosen at run time,
//! no `-C target-cpu` needed) and, with `target = "parallel"`, spread over all cores.
//!
//! ```
//! use ufunc::prelude::*;
//! use ndarray::array;
//!
//! const SQRT_2PI: f32 = 2.506_628_3;
//!
//! #[vectorize(target = "parallel")]
//! fn gaussian_pdf(x: f32, mean: f32, sigma: f32) -> f32 {
//!     (-0.5 * ((x - mean) / sigma).powi(2)).exp() / (sigma * SQRT_2PI)
//! }
//!
//! # fn main() -> Result<(), ufunc::Error> {
//! let x = array![[-1.0f32, 0.0], [1.0, 2.0]];
//! let y = gaussian_pdf(&x, 0.0f32, 1.0f32)?;            // scalars broadcast
//! assert!((y[[0, 1]] - gaussian_pdf::scalar(0.0, 0.0, 1.0)).abs() < 1e-6);
//!
//! let mut out = ndarray::Array2::<f32>::zeros((2, 2));
//! gaussian_pdf::out(&x, &array![0.0f32, 1.0], 1.0f32, &mut out)?;   // (2,2) with (2,)
//! gaussian_pdf::on(Target::Cpu, &x, 0.0f32, 1.0f32).unwrap_err();  // not compiled for cpu
//! # Ok(())
//! # }
//! ```
//!
//! What `#[vectorize]` generates for `fn foo(a: A, b: B) -> R`:
//!
//! | item | what it does |
//! | --- | --- |
//! | `foo(a, b)` | new arrays of the broadcast shape, on the default target |
//! | `foo::out(a, b, out)` | writes into arrays or `ArrayViewMut`s of exactly that shape |
//! | `foo::on(target, a, b)`, `foo::out_on(..)` | the same on a target chosen at call time |
//! | `foo::scalar(a, b)` | the original function |
//! | `foo::KERNEL_PATH` | whether the loops run SIMD lane code or the scalar function |
//! | `foo::TARGETS`, `foo::DEFAULT_TARGET` | the targets it was compiled for |
//!
//! Attribute arguments: `target = "cpu" | "parallel" | "cuda"`, or `targets = ["cpu", "parallel"]` (the
//! first is the default; others are reachable with `on`), `types = [f32, f64]` for a function
//! generic over one type parameter (`fn foo<T>(a: T, b: T) -> T`), which is compiled once per
//! listed type and dispatched on the element type of the arguments, and `fastmath = true`,
//! which lets the SIMD lane code contract `a * b + c` into fused multiply-adds (one rounding
//! instead of two) where the CPU has FMA. Without it, lane code gives the same bits as the
//! scalar function for every body without transcendental functions.
//!
//! With `"cuda"` among the targets, the body (and the `#[kernel_fn]` helpers it calls) is
//! translated to CUDA C++ at compile time, with Rust's semantics (wrapping integers, panicking
//! division reported as `Err`, saturating casts, unsuffixed literals typed by what they meet);
//! what cannot be translated is a compile error at its span. `f::cuda_source()` shows the
//! source; NVRTC compiles it for the device on first use, cached in memory and on disk.
//!
//! Several results: `-> (f32, f32)` returns a tuple of arrays and `out` takes one output each.
//!
//! [`guvectorize`] does the same for generalized ufuncs: the layout string (NumPy's grammar)
//! names each operand's core dimensions, the function receives core sub-arrays as ndarray views,
//! and the library loops, with broadcasting, over the remaining dimensions. Outputs it allocates
//! start zeroed; `f::out` writes into the caller's arrays as they are.
//! Helpers called from a body are marked [`kernel_fn`]. A panic in the body (integer division
//! by zero, say) becomes [`Error::KernelPanic`].

pub use ufunc_macros::{guvectorize, kernel_fn, vectorize};
pub use ufunc_runtime::registration;
pub use ufunc_runtime::{
    active_isa, broadcast_shapes, set_active_isa, AtEntry, AtIndices, Axes, Error, IndexInt,
    IndexList, IsaLevel, KernelPath, LoopPlan, Result, Target,
};
pub use ufunc_runtime::{fft, signal};

/// `use ufunc::prelude::*;` brings the attributes, `Target`, `Error` and `Result`.
pub mod prelude {
    pub use crate::{guvectorize, kernel_fn, vectorize, Error, KernelPath, Result, Target};
    pub use ndarray::{
        ArrayView1, ArrayView2, ArrayView3, ArrayViewD, ArrayViewMut1, ArrayViewMut2,
        ArrayViewMut3, ArrayViewMutD,
    };
    pub use num_complex::Complex;
}

/// The `cuda` target's tools: NVRTC compilation of generated sources, and counters of what the
/// target did (transfers, compiles). Generated sources are inspectable with
/// `f::cuda_source()` for every function compiled with `targets = [.., "cuda"]`.
pub mod cuda {
    pub use ufunc_runtime::{
        cached_cubin, compile, cuda_counters, cuda_simulated, device_array, device_memory,
        kernel_cache_dir, nvrtc_available, to_device, to_device_on, Compiled, CudaCounters,
        DeviceArray, DeviceMemory, DeviceView, NvrtcOutput, Stream,
    };
}

/// Re-exports for the code the macros generate. Not a public API.
#[doc(hidden)]
pub use ufunc_runtime::__private;

pub use ndarray;
pub use num_complex;
