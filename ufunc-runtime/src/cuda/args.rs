//! What a launch is made of, independent of the backend that runs it: opaque handles to device
//! memory, streams and loaded modules, the kernel arguments, and the grid's extent. A leaf: it
//! imports nothing else of `cuda`.

use std::any::Any;
use std::sync::Arc;

/// Device memory of some backend (the GPU's `CudaSlice<u8>`, the simulator's host buffer).
/// Only the backend that made it looks inside.
pub(crate) struct Buffer(pub(crate) Box<dyn Any + Send + Sync>);

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

/// The extent of a grid-stride launch: `items` loop items, blocks of `threads`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaunchShape {
    pub items: usize,
    pub threads: u32,
}
