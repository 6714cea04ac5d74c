//! The functions a `#[vectorize]` function's generated code calls: broadcast the inputs,
//! allocate or check the outputs, and execute.

use crate::body::{Body, OutPtrs, Outputs};
use crate::error::{Error, Result};
use crate::exec::execute;
use crate::operand::{Operands, OutOperands, RawOperand, RawOutOperand, RawOutOperands};
use crate::shape::{broadcast_shape, c_strides, check_output_shapes, element_count, Shape};
use crate::target::{ensure_compiled, Target};
use ndarray::Dimension;

/// The device arrays a device call of body `B` on operands `Ops` returns.
pub type DeviceArraysOf<B, Ops> = <<B as Body>::Out as Outputs>::DeviceArrays<
    <Ops as crate::cuda::DeviceOperands<<B as Body>::In>>::Dim,
>;

/// The arrays a call of body `B` on operands `Ops` returns.
pub type ArraysOf<B, Ops> =
    <<B as Body>::Out as Outputs>::Arrays<<Ops as Operands<<B as Body>::In>>::Dim>;

fn input_shape(raws: &[RawOperand<'_>]) -> Result<Shape> {
    broadcast_shape(raws.len(), |i| raws[i].shape)
}

/// Calls `B` on `ops`, returning new standard-layout arrays of the broadcast shape.
pub fn call<B: Body, Ops: Operands<B::In>>(
    target: Target,
    compiled: &'static [Target],
    ops: Ops,
) -> Result<ArraysOf<B, Ops>> {
    ensure_compiled(B::NAME, target, compiled)?;
    let raws = ops.raws();
    let shape = input_shape(&raws)?;
    let bytes = B::Out::SIZES.iter().max().copied().unwrap_or(1);
    if element_count(&shape)?
        .checked_mul(bytes)
        .is_none_or(|b| b > isize::MAX as usize)
    {
        return Err(Error::TooLarge {
            shape: shape.to_vec(),
        });
    }
    let mut dim = <Ops::Dim as Dimension>::zeros(shape.len());
    dim.slice_mut().copy_from_slice(&shape);
    let mut ptrs = OutPtrs::new();
    let uninit = B::Out::alloc(&dim, &mut ptrs);
    let strides = c_strides(&shape);
    let outs: RawOutOperands<'_> = ptrs
        .iter()
        .map(|&ptr| RawOutOperand {
            ptr,
            shape: &shape,
            strides: &strides,
        })
        .collect();
    execute::<B>(target, &raws, &outs, &shape)?;
    // SAFETY: execute wrote every element of every output (it returned Ok).
    Ok(unsafe { B::Out::assume_init(uninit) })
}

/// Calls `B` on `ops`, writing into `outs`, which must have exactly the broadcast shape.
pub fn call_out<B: Body, Ops: Operands<B::In>, Outs: OutOperands<B::Out>>(
    target: Target,
    compiled: &'static [Target],
    ops: Ops,
    mut outs: Outs,
) -> Result<()> {
    ensure_compiled(B::NAME, target, compiled)?;
    let raws = ops.raws();
    let shape = input_shape(&raws)?;
    let outs = outs.raws_mut();
    check_output_shapes(outs.iter().map(|o| o.shape), std::iter::repeat(&shape[..]))?;
    execute::<B>(target, &raws, &outs, &shape)
}
