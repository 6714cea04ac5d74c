//! Calling a gufunc: bind the layout, allocate (zeroed) or check outputs, then call the core
//! function once per loop index, on one thread or spread over rayon's pool.

use super::signature::{CoreBinding, Signature};
use super::view::CoreArg;
use crate::body::{Inputs, OutPtrs, Outputs};
use crate::error::{Error, Result};
use crate::exec::catching_panics;
use crate::operand::{Operands, OutOperands, RawOperand, RawOutOperand};
use crate::shape::{broadcast_strides, c_strides, check_output_shapes, element_count};
use crate::target::{ensure_compiled, Target};
use ndarray::IxDyn;
use rayon::prelude::*;
use smallvec::SmallVec;

/// A function lifted by `#[guvectorize]`.
pub trait GuBody: 'static {
    /// Element types of the inputs, as a tuple.
    type In: Inputs;
    /// Element type(s) of the outputs.
    type Out: Outputs;
    /// The function's name, for messages.
    const NAME: &'static str;
    /// Its layout.
    const SIGNATURE: Signature;
    /// The CUDA translation, for gufuncs compiled for the `cuda` target.
    const CUDA: Option<crate::cuda::CudaKernel> = None;
    /// Calls the core function on `n` loop items: `args` holds the inputs then the outputs at
    /// the first item, and operand `k` of item `i` starts `i * steps[k]` bytes further.
    ///
    /// # Safety
    /// Every `CoreArg` describes live elements of its operand's type with the core shape of the
    /// signature, for all `n` items; outputs do not overlap anything else.
    unsafe fn call(args: &[CoreArg<'_>], n: usize, steps: &[isize]);
}

/// Calls `B` on `ops`, returning new zero-initialised outputs of the loop shape plus core shape.
pub fn gu_call<B: GuBody, Ops: Operands<B::In>>(
    target: Target,
    compiled: &'static [Target],
    ops: Ops,
) -> Result<<B::Out as Outputs>::Arrays<IxDyn>> {
    ensure_compiled(B::NAME, target, compiled)?;
    let raws = ops.raws();
    let shapes: SmallVec<[&[usize]; 8]> = raws.iter().map(|r| r.shape).collect();
    let binding = B::SIGNATURE.bind(&shapes, None)?;
    for s in &binding.output_shapes {
        let bytes = element_count(s)?.checked_mul(16);
        if bytes.is_none_or(|b| b > isize::MAX as usize) {
            return Err(Error::TooLarge { shape: s.clone() });
        }
    }
    let mut ptrs = OutPtrs::new();
    let arrays = B::Out::alloc_default(&binding.output_shapes, &mut ptrs);
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
    execute::<B>(target, &raws, &outs, &binding)?;
    Ok(arrays)
}

/// Calls `B` on `ops`, writing into `outs`, which must have the loop shape plus core shape.
pub fn gu_call_out<B: GuBody, Ops: Operands<B::In>, Outs: OutOperands<B::Out>>(
    target: Target,
    compiled: &'static [Target],
    ops: Ops,
    mut outs: Outs,
) -> Result<()> {
    ensure_compiled(B::NAME, target, compiled)?;
    let raws = ops.raws();
    let outs = outs.raws_mut();
    let in_shapes: SmallVec<[&[usize]; 8]> = raws.iter().map(|r| r.shape).collect();
    let out_shapes: SmallVec<[&[usize]; 4]> = outs.iter().map(|r| r.shape).collect();
    let binding = B::SIGNATURE.bind(&in_shapes, Some(&out_shapes))?;
    check_output_shapes(
        outs.iter().map(|o| o.shape),
        binding.output_shapes.iter().map(|s| s.as_slice()),
    )?;
    execute::<B>(target, &raws, &outs, &binding)
}

/// Per operand: base pointer, element size, loop strides in bytes, core strides in elements.
struct Operand {
    base: *mut u8,
    loop_strides: Vec<isize>,
    core_strides: Vec<isize>,
}

struct Loop<'b> {
    operands: Vec<Operand>,
    binding: &'b CoreBinding,
}

// SAFETY: the pointers address the caller's arrays for the duration of the call; each loop
// index writes its own output elements.
unsafe impl Send for Loop<'_> {}
unsafe impl Sync for Loop<'_> {}

/// A `parallel` call stays on the calling thread unless it has at least this many loop items and
/// this many core elements in all (a rough measure of work: rayon costs some microseconds).
const PARALLEL_MIN_ITEMS: usize = 64;
const PARALLEL_MIN_ELEMENTS: usize = 1 << 16;

fn execute<B: GuBody>(
    target: Target,
    ins: &[RawOperand<'_>],
    outs: &[RawOutOperand<'_>],
    binding: &CoreBinding,
) -> Result<()> {
    if target == Target::Cuda {
        // The caller checked the target against the compiled ones.
        let kernel = crate::cuda::kernel_of(B::NAME, B::CUDA, &[])?;
        return crate::cuda::execute_gufunc(
            B::NAME,
            &kernel,
            ins,
            B::In::SIZES,
            outs,
            B::Out::SIZES,
            binding,
        );
    }
    let total = element_count(&binding.loop_shape)?;
    if total == 0 {
        return Ok(());
    }
    let sizes: Vec<usize> = B::In::SIZES.iter().chain(B::Out::SIZES).copied().collect();
    let raw = ins
        .iter()
        .map(|r| (r.ptr as *mut u8, r.shape, r.strides))
        .chain(outs.iter().map(|r| (r.ptr, r.shape, r.strides)));
    let operands = raw
        .enumerate()
        .map(|(k, (base, shape, strides))| {
            let axes = &binding.core_axes[k];
            let n_core = axes.iter().filter(|a| a.is_some()).count();
            let n_loop = shape.len() - n_core;
            let loop_strides =
                broadcast_strides(&binding.loop_shape, &shape[..n_loop], &strides[..n_loop])
                    .into_iter()
                    .map(|s| s * sizes[k] as isize)
                    .collect();
            let core_strides = axes.iter().map(|a| a.map_or(0, |a| strides[a])).collect();
            Operand {
                base,
                loop_strides,
                core_strides,
            }
        })
        .collect();
    let lp = Loop { operands, binding };
    let per_item: usize = binding
        .core_shapes
        .iter()
        .map(|s| s.iter().product::<usize>())
        .sum();
    let run = || {
        if target == Target::Parallel
            && total >= PARALLEL_MIN_ITEMS
            && total.saturating_mul(per_item.max(1)) >= PARALLEL_MIN_ELEMENTS
            && rayon::current_num_threads() > 1
        {
            let pieces = (rayon::current_num_threads() * 8).min(total);
            let per = total.div_ceil(pieces);
            (0..total.div_ceil(per))
                .into_par_iter()
                .for_each(|p| lp.run_range::<B>(p * per, ((p + 1) * per).min(total)));
        } else {
            lp.run_range::<B>(0, total);
        }
    };
    catching_panics(B::NAME, run)
}

impl Loop<'_> {
    /// Calls the core function for loop items `start..end` (C order over the loop shape), a row
    /// of the innermost loop dimension at a time.
    fn run_range<B: GuBody>(&self, start: usize, end: usize) {
        let shape = &self.binding.loop_shape;
        let nd = shape.len();
        let inner = shape.last().copied().unwrap_or(1);
        let mut idx: SmallVec<[usize; 8]> = smallvec::smallvec![0; nd];
        let mut rest = start;
        for a in (0..nd).rev() {
            idx[a] = rest % shape[a];
            rest /= shape[a];
        }
        let steps: SmallVec<[isize; 8]> = self
            .operands
            .iter()
            .map(|op| op.loop_strides.last().copied().unwrap_or(0))
            .collect();
        let mut args: SmallVec<[CoreArg<'_>; 8]> = self
            .operands
            .iter()
            .zip(&self.binding.core_shapes)
            .map(|(op, shape)| {
                let off: isize = idx
                    .iter()
                    .zip(&op.loop_strides)
                    .map(|(&i, &s)| i as isize * s)
                    .sum();
                CoreArg {
                    ptr: op.base.wrapping_offset(off),
                    shape,
                    strides: &op.core_strides,
                }
            })
            .collect();
        let mut done = start;
        while done < end {
            let j = if nd == 0 { 0 } else { idx[nd - 1] };
            let n = (inner - j).min(end - done);
            // SAFETY: the binding keeps every core sub-array of these items inside its operand.
            unsafe { B::call(&args, n, &steps) };
            done += n;
            if done == end || nd == 0 {
                break;
            }
            // Back to the row's start, then one step along the outer loop dimensions.
            for (arg, &st) in args.iter_mut().zip(&steps) {
                arg.ptr = arg.ptr.wrapping_offset(-(j as isize) * st);
            }
            idx[nd - 1] = 0;
            for a in (0..nd - 1).rev() {
                idx[a] += 1;
                for (arg, op) in args.iter_mut().zip(&self.operands) {
                    arg.ptr = arg.ptr.wrapping_offset(op.loop_strides[a]);
                }
                if idx[a] < shape[a] {
                    break;
                }
                for (arg, op) in args.iter_mut().zip(&self.operands) {
                    arg.ptr = arg
                        .ptr
                        .wrapping_offset(-(shape[a] as isize) * op.loop_strides[a]);
                }
                idx[a] = 0;
            }
        }
    }
}
