//! The device calls a cuda function's generated code makes: `f::on_device` and `f::on_stream`
//! (results left on the device), `f::out_device` and `f::out_stream` (into device arrays), for
//! ufuncs and gufuncs. Device operands are used in place; host operands are copied in.

use super::args::Buffer;
use super::host::upload_host;
use super::kernel::{CudaKernel, DeviceKernel};
use super::launch::{launch_elementwise, launch_gufunc, LaunchInput, LaunchOutput};
use super::operand::{DeviceOperands, DeviceOutOperands, DeviceOutputs, RawDeviceOperand};
use super::queue::{DeviceBuffer, Queue};
use super::stream::Stream;
use crate::body::{Body, Inputs, Outputs};
use crate::error::{Error, Result};
use crate::gufunc::GuBody;
use crate::shape::{broadcast_shape, byte_size, c_strides, check_output_shapes, Shape};
use crate::target::{ensure_compiled, Target};
use ndarray::{Dimension, IxDyn};

/// The kernel of a function compiled for `cuda`, else `TargetNotCompiled` listing `compiled`.
pub(super) fn kernel_of<B: DeviceKernel>(
    function: &'static str,
    compiled: &'static [Target],
) -> Result<CudaKernel> {
    ensure_compiled(function, Target::Cuda, compiled)?;
    B::CUDA.ok_or(Error::TargetNotCompiled {
        function,
        target: Target::Cuda,
        compiled,
    })
}

/// The queue a call runs on: the stream's, or the device's default queue, which waits.
pub(crate) fn queue_of(stream: Option<&Stream>) -> Result<&Queue> {
    match stream {
        Some(s) => Ok(&s.queue),
        None => Queue::default_queue(),
    }
}

/// Launch inputs of one call's inputs: device memory in place, host values copied in (into
/// `uploads`, which must outlive the operands).
pub(super) fn launch_inputs<'a>(
    queue: &Queue,
    function: &'static str,
    inputs: &'a [RawDeviceOperand<'a>],
    sizes: &[usize],
    uploads: &'a mut Vec<Buffer>,
) -> Result<Vec<LaunchInput<'a>>> {
    for (input, &size) in inputs.iter().zip(sizes) {
        if let RawDeviceOperand::Host(raw) = input {
            uploads.push(upload_host(queue, raw, size)?);
        }
    }
    let mut uploaded = uploads.iter();
    inputs
        .iter()
        .map(|input| match input {
            RawDeviceOperand::Device {
                mem,
                offset,
                shape,
                strides,
            } => Ok(LaunchInput {
                mem: &mem.0,
                offset: *offset,
                shape,
                strides: strides.clone(),
            }),
            RawDeviceOperand::Host(raw) => Ok(LaunchInput {
                mem: uploaded.next().ok_or_else(|| Error::Cuda {
                    what: format!("preparing the inputs of `{function}`"),
                })?,
                offset: 0,
                shape: raw.shape,
                strides: c_strides(raw.shape),
            }),
        })
        .collect()
}

/// The broadcast shape of a device call's inputs.
fn broadcast_inputs(inputs: &[RawDeviceOperand<'_>]) -> Result<Shape> {
    broadcast_shape(inputs.len(), |i| inputs[i].shape())
}

/// `f::on_device` (and `f::on_stream`): runs `B` on the GPU and leaves the results there.
pub fn call_device<B: Body + DeviceKernel, Ops: DeviceOperands<B::In>>(
    compiled: &'static [Target],
    stream: Option<&Stream>,
    ops: Ops,
) -> Result<<B::Out as DeviceOutputs>::DeviceArrays<Ops::Dim>>
where
    B::Out: DeviceOutputs,
{
    let kernel = kernel_of::<B>(B::NAME, compiled)?;
    let inputs = ops.raw_devices();
    let shape = broadcast_inputs(&inputs)?;
    let queue = queue_of(stream)?;
    let mut bufs = B::Out::SIZES
        .iter()
        .map(|&size| queue.alloc_zeroed(byte_size(&shape, size)?))
        .collect::<Result<Vec<_>>>()?;
    let mut uploads = Vec::new();
    let ins = launch_inputs(queue, B::NAME, &inputs, B::In::SIZES, &mut uploads)?;
    let mut outs: Vec<&mut Buffer> = bufs.iter_mut().collect();
    launch_elementwise(queue, B::NAME, &kernel, &ins, &mut outs, &shape)?;
    let mut dim = <Ops::Dim as Dimension>::zeros(shape.len());
    dim.slice_mut().copy_from_slice(&shape);
    let dims = vec![dim; bufs.len()];
    Ok(B::Out::wrap_device(
        bufs.into_iter().map(DeviceBuffer).collect(),
        &dims,
    ))
}

/// A gufunc's `f::on_device` (and `f::on_stream`): binds the layout to the operands' shapes,
/// runs the kernel with device operands in place, and leaves zero-initialised outputs (loop
/// shape, then core shape) on the device.
pub fn gu_call_device<B: GuBody + DeviceKernel, Ops: DeviceOperands<B::In>>(
    compiled: &'static [Target],
    stream: Option<&Stream>,
    ops: Ops,
) -> Result<<B::Out as DeviceOutputs>::DeviceArrays<IxDyn>>
where
    B::Out: DeviceOutputs,
{
    let kernel = kernel_of::<B>(B::NAME, compiled)?;
    let inputs = ops.raw_devices();
    let shapes: Vec<&[usize]> = inputs.iter().map(|i| i.shape()).collect();
    let binding = B::SIGNATURE.bind(&shapes, None)?;
    let queue = queue_of(stream)?;
    let mut bufs = binding
        .output_shapes
        .iter()
        .zip(B::Out::SIZES)
        .map(|(shape, &size)| queue.alloc_zeroed(byte_size(shape, size)?))
        .collect::<Result<Vec<_>>>()?;
    let mut uploads = Vec::new();
    let ins = launch_inputs(queue, B::NAME, &inputs, B::In::SIZES, &mut uploads)?;
    let mut outs: Vec<LaunchOutput<'_>> = bufs
        .iter_mut()
        .zip(&binding.output_shapes)
        .map(|(mem, shape)| LaunchOutput { mem, shape })
        .collect();
    launch_gufunc(queue, B::NAME, &kernel, &ins, &mut outs, &binding)?;
    let dims: Vec<IxDyn> = binding.output_shapes.iter().map(|s| IxDyn(s)).collect();
    Ok(B::Out::wrap_device(
        bufs.into_iter().map(DeviceBuffer).collect(),
        &dims,
    ))
}

/// A gufunc's `f::out_device` (and `f::out_stream`): into existing device arrays of the loop
/// shape plus core shape (output-only dimensions take their sizes from them).
pub fn gu_call_out_device<
    B: GuBody + DeviceKernel,
    Ops: DeviceOperands<B::In>,
    Outs: DeviceOutOperands<B::Out>,
>(
    compiled: &'static [Target],
    stream: Option<&Stream>,
    ops: Ops,
    mut outs: Outs,
) -> Result<()> {
    let kernel = kernel_of::<B>(B::NAME, compiled)?;
    let inputs = ops.raw_devices();
    let shapes: Vec<&[usize]> = inputs.iter().map(|i| i.shape()).collect();
    let mut outputs = outs.device_outputs();
    let out_shapes: Vec<&[usize]> = outputs.iter().map(|(_, s)| *s).collect();
    let binding = B::SIGNATURE.bind(&shapes, Some(&out_shapes))?;
    check_output_shapes(
        out_shapes.iter().copied(),
        binding.output_shapes.iter().map(|s| s.as_slice()),
    )?;
    let queue = queue_of(stream)?;
    let mut uploads = Vec::new();
    let ins = launch_inputs(queue, B::NAME, &inputs, B::In::SIZES, &mut uploads)?;
    let mut outs: Vec<LaunchOutput<'_>> = outputs
        .iter_mut()
        .map(|(b, shape)| LaunchOutput {
            mem: &mut b.0,
            shape,
        })
        .collect();
    launch_gufunc(queue, B::NAME, &kernel, &ins, &mut outs, &binding)
}

/// `f::out_device` (and `f::out_stream`): runs `B` on the GPU into existing device arrays of
/// the broadcast shape.
pub fn call_out_device<
    B: Body + DeviceKernel,
    Ops: DeviceOperands<B::In>,
    Outs: DeviceOutOperands<B::Out>,
>(
    compiled: &'static [Target],
    stream: Option<&Stream>,
    ops: Ops,
    mut outs: Outs,
) -> Result<()> {
    let kernel = kernel_of::<B>(B::NAME, compiled)?;
    let inputs = ops.raw_devices();
    let shape = broadcast_inputs(&inputs)?;
    let mut outputs = outs.device_outputs();
    check_output_shapes(
        outputs.iter().map(|(_, s)| *s),
        std::iter::repeat(shape.as_slice()),
    )?;
    let queue = queue_of(stream)?;
    let mut uploads = Vec::new();
    let ins = launch_inputs(queue, B::NAME, &inputs, B::In::SIZES, &mut uploads)?;
    let mut mems: Vec<&mut Buffer> = outputs.iter_mut().map(|(b, _)| &mut b.0).collect();
    launch_elementwise(queue, B::NAME, &kernel, &ins, &mut mems, &shape)
}
