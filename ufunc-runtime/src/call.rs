//! The call layer: what a `#[vectorize]` or `#[guvectorize]` function's generated code calls.
//! It broadcasts or binds the operands, allocates or checks the outputs, and picks the target
//! once: `cpu` and `parallel` run the CPU engine (`exec`, `gufunc`), `cuda` the device's host
//! path (`cuda`). Nothing below this layer knows about the other side.

use crate::body::{Body, Inputs, OutPtrs, Outputs};
use crate::cuda::{self, DeviceKernel, DeviceOperands, DeviceOutputs};
use crate::error::{Error, Result};
use crate::gufunc::GuBody;
use crate::operand::{Operands, OutOperands, RawOperand, RawOutOperand, RawOutOperands};
use crate::parallel::Threads;
use crate::shape::{
    broadcast_shape, byte_size, c_strides, check_output_shapes, InputCopies, Shape,
};
use crate::target::Target;
use ndarray::{Dimension, IxDyn};
use smallvec::SmallVec;

/// The arrays a call of body `B` on operands `Ops` returns.
pub type ArraysOf<B, Ops> =
    <<B as Body>::Out as Outputs>::Arrays<<Ops as Operands<<B as Body>::In>>::Dim>;

/// The device arrays a device call of body `B` on operands `Ops` returns.
pub type DeviceArraysOf<B, Ops> = <<B as Body>::Out as DeviceOutputs>::DeviceArrays<
    <Ops as DeviceOperands<<B as Body>::In>>::Dim,
>;

/// Where one call runs, decided once from the target asked for and the targets compiled.
pub(crate) enum Route {
    Cpu(Threads),
    Cuda(cuda::CudaKernel),
}

pub(crate) fn route(
    function: &'static str,
    target: Target,
    compiled: &'static [Target],
    kernel: Option<cuda::CudaKernel>,
) -> Result<Route> {
    let not_compiled = || Error::TargetNotCompiled {
        function,
        target,
        compiled,
    };
    if !compiled.contains(&target) {
        return Err(not_compiled());
    }
    match target {
        Target::Cpu => Ok(Route::Cpu(Threads::One)),
        Target::Parallel => Ok(Route::Cpu(Threads::All)),
        Target::Cuda => kernel.map(Route::Cuda).ok_or_else(not_compiled),
    }
}

fn input_shape(raws: &[RawOperand<'_>]) -> Result<Shape> {
    broadcast_shape(raws.len(), |i| raws[i].shape)
}

/// Runs `B` over the broadcast `shape` on the chosen route.
fn run<B: Body>(
    route: Route,
    ins: &[RawOperand<'_>],
    outs: &[RawOutOperand<'_>],
    shape: &[usize],
) -> Result<()> {
    match route {
        Route::Cpu(threads) => crate::exec::execute::<B>(threads, ins, outs, shape),
        Route::Cuda(kernel) => cuda::run_elementwise(
            B::NAME,
            &kernel,
            ins,
            B::In::SIZES,
            outs,
            B::Out::SIZES,
            shape,
        ),
    }
}

/// Calls `B` on `ops`, returning new standard-layout arrays of the broadcast shape.
pub fn call<B: Body + DeviceKernel, Ops: Operands<B::In>>(
    target: Target,
    compiled: &'static [Target],
    ops: Ops,
) -> Result<ArraysOf<B, Ops>> {
    let route = route(B::NAME, target, compiled, B::CUDA)?;
    let raws = ops.raws();
    let shape = input_shape(&raws)?;
    byte_size(&shape, B::Out::SIZES.iter().max().copied().unwrap_or(1))?;
    let mut dim = <Ops::Dim as Dimension>::zeros(shape.len());
    dim.slice_mut().copy_from_slice(&shape);
    let mut ptrs = OutPtrs::new();
    let uninit = B::Out::alloc(&dim, &mut ptrs)?;
    let strides = c_strides(&shape);
    let outs: RawOutOperands<'_> = ptrs
        .iter()
        .map(|&ptr| RawOutOperand {
            ptr,
            shape: &shape,
            strides: &strides,
        })
        .collect();
    run::<B>(route, &raws, &outs, &shape)?;
    // SAFETY: the run wrote every element of every output (it returned Ok).
    Ok(unsafe { B::Out::assume_init(uninit) })
}

/// Calls `B` on `ops`, writing into `outs`, which must have exactly the broadcast shape.
pub fn call_out<B: Body + DeviceKernel, Ops: Operands<B::In>, Outs: OutOperands<B::Out>>(
    target: Target,
    compiled: &'static [Target],
    ops: Ops,
    mut outs: Outs,
) -> Result<()> {
    let route = route(B::NAME, target, compiled, B::CUDA)?;
    let raws = ops.raws();
    let shape = input_shape(&raws)?;
    let outs = outs.raws_mut();
    check_output_shapes(outs.iter().map(|o| o.shape), std::iter::repeat(&shape[..]))?;
    let copies = InputCopies::of(&raws, B::In::SIZES, &outs, B::Out::SIZES, Some(&shape));
    let raws = copies.apply(&raws);
    run::<B>(route, &raws, &outs, &shape)
}

/// Runs the gufunc `B` over the loop items of `binding` on the chosen route.
fn gu_run<B: GuBody>(
    route: Route,
    ins: &[RawOperand<'_>],
    outs: &[RawOutOperand<'_>],
    binding: &crate::gufunc::CoreBinding,
) -> Result<()> {
    match route {
        Route::Cpu(threads) => crate::gufunc::execute::<B>(threads, ins, outs, binding),
        Route::Cuda(kernel) => cuda::run_gufunc(
            B::NAME,
            &kernel,
            ins,
            B::In::SIZES,
            outs,
            B::Out::SIZES,
            binding,
        ),
    }
}

/// Calls the gufunc `B` on `ops`, returning new zero-initialised outputs of the loop shape plus
/// core shape.
pub fn gu_call<B: GuBody + DeviceKernel, Ops: Operands<B::In>>(
    target: Target,
    compiled: &'static [Target],
    ops: Ops,
) -> Result<<B::Out as Outputs>::Arrays<IxDyn>> {
    let route = route(B::NAME, target, compiled, B::CUDA)?;
    let raws = ops.raws();
    let shapes: SmallVec<[&[usize]; 8]> = raws.iter().map(|r| r.shape).collect();
    let binding = B::SIGNATURE.bind(&shapes, None)?;
    for (s, &size) in binding.output_shapes.iter().zip(B::Out::SIZES) {
        byte_size(s, size)?;
    }
    let mut ptrs = OutPtrs::new();
    let arrays = B::Out::alloc_default(&binding.output_shapes, &mut ptrs)?;
    let strides: Vec<_> = binding.output_shapes.iter().map(|s| c_strides(s)).collect();
    let outs: Vec<RawOutOperand<'_>> = ptrs
        .iter()
        .zip(&binding.output_shapes)
        .zip(&strides)
        .map(|((&ptr, shape), strides)| RawOutOperand {
            ptr,
            shape,
            strides,
        })
        .collect();
    gu_run::<B>(route, &raws, &outs, &binding)?;
    Ok(arrays)
}

/// Calls the gufunc `B` on `ops`, writing into `outs`, which must have the loop shape plus core
/// shape.
pub fn gu_call_out<B: GuBody + DeviceKernel, Ops: Operands<B::In>, Outs: OutOperands<B::Out>>(
    target: Target,
    compiled: &'static [Target],
    ops: Ops,
    mut outs: Outs,
) -> Result<()> {
    let route = route(B::NAME, target, compiled, B::CUDA)?;
    let raws = ops.raws();
    let outs = outs.raws_mut();
    let in_shapes: SmallVec<[&[usize]; 8]> = raws.iter().map(|r| r.shape).collect();
    let out_shapes: SmallVec<[&[usize]; 4]> = outs.iter().map(|r| r.shape).collect();
    let binding = B::SIGNATURE.bind(&in_shapes, Some(&out_shapes))?;
    check_output_shapes(
        outs.iter().map(|o| o.shape),
        binding.output_shapes.iter().map(|s| s.as_slice()),
    )?;
    let copies = InputCopies::of(&raws, B::In::SIZES, &outs, B::Out::SIZES, None);
    let raws = copies.apply(&raws);
    gu_run::<B>(route, &raws, &outs, &binding)
}
