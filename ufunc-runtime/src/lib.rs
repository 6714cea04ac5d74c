//! Runtime of the `ufunc` crate: NumPy broadcasting, the loop engine (`LoopPlan`, serial and
//! rayon runners), run-time instruction-set dispatch and vector math.
//!
//! Users depend on the `ufunc` facade; the items here are what `#[vectorize]` expands to.

// The macros' generated code names `::ufunc::...`: inside this crate, that is this crate.
extern crate self as ufunc;
// ... and `::ufunc::ndarray`, as the facade re-exports it.
#[doc(hidden)]
pub use ndarray;

mod alloc;
mod body;
mod call;
mod cuda;
mod element;
mod error;
mod exec;
pub mod fft;
mod gufunc;
mod isa;
mod math;
mod operand;
mod panic;
mod parallel;
mod reduce;
pub mod registration;
mod shape;
pub mod signal;
mod stream;
mod target;

pub use body::{
    first_reason, path_with_helpers, Body, Inputs, KernelPath, OutPtrs, Outputs, PlainHelper,
};
pub use call::{call, call_out, gu_call, gu_call_out, ArraysOf, DeviceArraysOf};
pub use cuda::{
    accumulate_device, at_device, cached_cubin, call_device, call_out_device, compile, cuda_const,
    cuda_counters, cuda_prelude, cuda_simulated, device_array, device_memory, gu_call_device,
    gu_call_out_device, kernel_cache_dir, kernel_source, nvrtc_available, outer_device,
    reduce_device, reduce_out_device, to_device, to_device_on, Compiled, CudaCounters, CudaKernel,
    CudaLiteral, DeviceArray, DeviceBinaryOp, DeviceBuffer, DeviceKernel, DeviceMemory,
    DeviceOperand, DeviceOperands, DeviceOutOperands, DeviceOutputs, DeviceView, GuOperand,
    KernelKind, KernelSource, NvrtcOutput, PanicSite, PanicTable, RawDeviceOperand, Stream,
};
pub use element::Element;
pub use error::{Error, Result};
pub use exec::{plan_loop, LoopPlan};
pub use gufunc::{
    store_scalar, CoreArg, CoreBinding, CoreDim, CoreParam, GuBody, Signature, ViewLayout,
};
pub use isa::{active_isa, set_active_isa, Isa, IsaLevel, NoFma, WithFma};
pub use math::{FusedMulAdd, LaneMath};
pub use operand::{DimFold, Operand, Operands, OutOperand, OutOperands, RawOperand, RawOutOperand};
pub use reduce::{
    accumulate, accumulate_out, at, outer, reduce, reduce_out, AtEntry, AtIndices, Axes, IndexInt,
    IndexList, MethodsNeedBinaryOp,
};
pub use shape::{broadcast_shapes, broadcast_strides, element_count};
pub use target::Target;

/// Re-exports for the code the macros generate (here and in the `ufunc` facade). Not a public
/// API.
#[doc(hidden)]
pub mod __private {
    pub use crate::cuda::{HELPER_SITE_CODE_BASE, SITE_CODE_BASE};
    pub use crate::{
        accumulate, accumulate_device, accumulate_out, at, at_device, call, call_device, call_out,
        call_out_device, cuda_const, cuda_prelude, first_reason, gu_call, gu_call_device,
        gu_call_out, gu_call_out_device, kernel_source, outer, outer_device, path_with_helpers,
        reduce, reduce_device, reduce_out, reduce_out_device, store_scalar, ArraysOf, AtIndices,
        Body, CoreArg, CoreDim, CoreParam, CudaKernel, CudaLiteral, DeviceArraysOf, DeviceKernel,
        DeviceOperand, DeviceOperands, DeviceOutOperands, DeviceOutputs, Element, FusedMulAdd,
        GuBody, GuOperand, Isa, KernelKind, KernelSource, LaneMath, MethodsNeedBinaryOp, Operand,
        Operands, OutOperand, OutOperands, Outputs, PanicSite, PanicTable, PlainHelper, Signature,
    };
}
