//! What a launch is made of, independent of the backend that runs it: opaque handles to device
//! memory, streams and loaded modules, the kernel arguments, and the grid's extent. A leaf: it
//! imports nothing else of `cuda`.

use std::any::Any;
use std::sync::Arc;

/// Device memory of some backend (the GPU backend's slice and its readers, the simulator's
/// host buffer).
/// Only the backend that made it looks inside.
pub(crate) struct Buffer(pub(crate) Box<dyn Any + Send + Sync>);

/// Page-locked host memory of some backend (the GPU's pinned allocation, the simulator's
/// host buffer), 8-byte aligned: the source of uploads that overlap other streams' kernels.
pub(crate) struct HostBuffer(pub(crate) Box<dyn Any + Send + Sync>);

/// A stream of some backend (none for the simulator, which runs each launch at once).
#[derive(Clone)]
pub(crate) struct StreamHandle(pub(crate) Option<Arc<dyn Any + Send + Sync>>);

/// A loaded module (the compiled kernels of one source) of some backend.
#[derive(Clone)]
pub(crate) struct ModuleHandle(pub(crate) Arc<dyn Any + Send + Sync>);

/// A kernel argument, in the order of the kernel's C++ parameters.
pub(crate) enum Arg<'a> {
    I64(i64),
    I32(i32),
    /// A read-only operand: its buffer and the byte offset of its first element.
    In(&'a Buffer, usize),
    Out(&'a mut Buffer),
}

/// The extent of a grid-stride launch: `items` loop items, blocks of `threads`; `cooperative`
/// where the threads of a block synchronise (`__syncthreads`, warp shuffles).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaunchShape {
    pub items: usize,
    pub threads: u32,
    pub cooperative: bool,
}

/// What one batched FFT plan computes (cuFFT's `cufftPlanMany` advanced layout): `batch`
/// transforms of rank `n.len()` (1 to 3), element `(b, x0, .., xr)` of the input at
/// `b * idist + (x0 * inembed[1] * .. + xr) * istride`, and likewise for the output.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FftLayout {
    pub kind: FftKind,
    /// `f64` (Z2Z, D2Z, Z2D) rather than `f32` (C2C, R2C, C2R).
    pub double: bool,
    /// The transform lengths (real points for the real transforms).
    pub n: Vec<i64>,
    pub inembed: Vec<i64>,
    pub istride: i64,
    pub idist: i64,
    pub onembed: Vec<i64>,
    pub ostride: i64,
    pub odist: i64,
    pub batch: i64,
}

/// The kind of a batched FFT: complex (either direction, chosen when run), real to half
/// spectrum, half spectrum to real. Inverses are not scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum FftKind {
    C2C,
    R2C,
    C2R,
}

/// A plan of some backend for one `FftLayout` (a cuFFT handle, or the layout itself for the
/// simulator).
#[derive(Clone)]
pub(crate) struct FftPlanHandle(pub(crate) Arc<dyn Any + Send + Sync>);
