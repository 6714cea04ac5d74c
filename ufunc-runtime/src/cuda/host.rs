//! The `cuda` target on host operands (`f(..)`, `f::out(..)` with `Target::Cuda`): each input's
//! own elements copied in (broadcast on the device by stride-0 strides), the kernel launched on
//! the default queue, each output copied back into its host array (any strides).

use super::args::Buffer;
use super::kernel::CudaKernel;
use super::launch::{launch_elementwise, launch_gufunc, LaunchInput, LaunchOutput};
use super::queue::Queue;
use crate::error::Result;
use crate::gufunc::CoreBinding;
use crate::operand::{RawOperand, RawOutOperand};
use crate::shape::{byte_size, c_order_bytes, c_strides, element_count, scatter_c_order};

/// A host operand's own elements, in C order, copied to new device memory.
pub(crate) fn upload_host(queue: &Queue, op: &RawOperand<'_>, size: usize) -> Result<Buffer> {
    // SAFETY: a `RawOperand` describes live elements of `size` bytes.
    let bytes = unsafe { c_order_bytes(op.ptr, op.shape, op.strides, size) };
    queue.upload(&bytes)
}

/// Every operand copied in, in order.
fn upload_all(queue: &Queue, ops: &[RawOperand<'_>], sizes: &[usize]) -> Result<Vec<Buffer>> {
    ops.iter()
        .zip(sizes)
        .map(|(op, &size)| upload_host(queue, op, size))
        .collect()
}

/// The uploaded operands as launch inputs (C order, from each buffer's first byte).
fn launch_inputs<'a>(mems: &'a [Buffer], ops: &[RawOperand<'a>]) -> Vec<LaunchInput<'a>> {
    mems.iter()
        .zip(ops)
        .map(|(mem, op)| LaunchInput {
            mem,
            offset: 0,
            shape: op.shape,
            strides: c_strides(op.shape),
        })
        .collect()
}

/// Copies each output's device memory back into its host array (any strides).
fn download_all(
    queue: &Queue,
    outs: &[RawOutOperand<'_>],
    mems: &[Buffer],
    sizes: &[usize],
) -> Result<()> {
    for ((op, mem), &size) in outs.iter().zip(mems).zip(sizes) {
        if op.shape.contains(&0) {
            continue;
        }
        let bytes = queue.download(mem)?;
        let len = byte_size(op.shape, size)?;
        // SAFETY: a `RawOutOperand` describes live, writable elements of `size` bytes, `len`
        // bytes of them, which the device buffer holds in C order.
        unsafe { scatter_c_order(&bytes[..len], op.ptr, op.shape, op.strides, size) };
    }
    Ok(())
}

/// Runs `kernel` over the broadcast `shape` on host operands.
pub(crate) fn run_elementwise(
    function: &'static str,
    kernel: &CudaKernel,
    ins: &[RawOperand<'_>],
    in_sizes: &[usize],
    outs: &[RawOutOperand<'_>],
    out_sizes: &[usize],
    shape: &[usize],
) -> Result<()> {
    if element_count(shape)? == 0 {
        return Ok(());
    }
    let queue = Queue::default_queue()?;
    let in_mems = upload_all(queue, ins, in_sizes)?;
    let mut out_mems = out_sizes
        .iter()
        .map(|&size| queue.alloc_zeroed(byte_size(shape, size)?))
        .collect::<Result<Vec<_>>>()?;
    let mut outputs: Vec<&mut Buffer> = out_mems.iter_mut().collect();
    let inputs = launch_inputs(&in_mems, ins);
    launch_elementwise(queue, function, kernel, &inputs, &mut outputs, shape)?;
    download_all(queue, outs, &out_mems, out_sizes)
}

/// Runs a gufunc kernel on host operands: every operand (outputs too, which the core may read)
/// is copied to the device in C order, then the outputs are copied back.
pub(crate) fn run_gufunc(
    function: &'static str,
    kernel: &CudaKernel,
    ins: &[RawOperand<'_>],
    in_sizes: &[usize],
    outs: &[RawOutOperand<'_>],
    out_sizes: &[usize],
    binding: &CoreBinding,
) -> Result<()> {
    if element_count(&binding.loop_shape)? == 0 {
        return Ok(());
    }
    let queue = Queue::default_queue()?;
    let in_mems = upload_all(queue, ins, in_sizes)?;
    let outs_as_inputs: Vec<RawOperand<'_>> = outs.iter().map(RawOutOperand::as_input).collect();
    let mut out_mems = upload_all(queue, &outs_as_inputs, out_sizes)?;
    let mut outputs: Vec<LaunchOutput<'_>> = out_mems
        .iter_mut()
        .zip(outs)
        .map(|(mem, op)| LaunchOutput {
            mem,
            shape: op.shape,
        })
        .collect();
    let inputs = launch_inputs(&in_mems, ins);
    launch_gufunc(queue, function, kernel, &inputs, &mut outputs, binding)?;
    download_all(queue, outs, &out_mems, out_sizes)
}
