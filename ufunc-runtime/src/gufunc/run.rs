//! The CPU runner of a gufunc: the core function called once per loop index, a row of the
//! innermost loop dimension at a time, on one thread or spread over rayon's pool.

use super::signature::CoreBinding;
use super::view::CoreArg;
use crate::body::{Inputs, Outputs};
use crate::error::Result;
use crate::operand::{RawOperand, RawOutOperand};
use crate::panic::catching_panics;
use crate::parallel::{Split, Threads};
use crate::shape::{
    broadcast_strides_to, byte_strides, element_count, walk_rows, RowPtrs, Strides,
};
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
    const SIGNATURE: super::Signature;
    /// Calls the core function on `n` loop items: `args` holds the inputs then the outputs at
    /// the first item, and operand `k` of item `i` starts `i * steps[k]` bytes further.
    ///
    /// # Safety
    /// Every `CoreArg` describes live elements of its operand's type with the core shape of the
    /// signature, for all `n` items; outputs do not overlap anything else.
    unsafe fn call(args: &[CoreArg<'_>], n: usize, steps: &[isize]);
}

/// How gufunc loop items are spread over threads: at least 64 items and 2^16 core elements in
/// all (a rough measure of work).
const SPLIT: Split = Split {
    min_work: 1 << 16,
    min_items: 64,
    pieces_per_thread: 8,
    align: 1,
};

/// One operand as the loop sees it: base pointer, loop strides in bytes, core strides in
/// elements.
struct CoreOperand {
    base: *mut u8,
    loop_strides: Strides,
    core_strides: Strides,
}

/// Calls `B`'s core function for every loop index of `binding`: `ins` broadcast over the loop
/// shape, `outs` of exactly the loop shape plus their core shapes.
pub(crate) fn execute<B: GuBody>(
    threads: Threads,
    ins: &[RawOperand<'_>],
    outs: &[RawOutOperand<'_>],
    binding: &CoreBinding,
) -> Result<()> {
    let total = element_count(&binding.loop_shape)?;
    if total == 0 {
        return Ok(());
    }
    let sizes = B::In::SIZES.iter().chain(B::Out::SIZES);
    let raw = ins
        .iter()
        .map(|r| (r.ptr as *mut u8, r.shape, r.strides))
        .chain(outs.iter().map(|r| (r.ptr, r.shape, r.strides)));
    let operands: Vec<CoreOperand> = raw
        .zip(sizes)
        .enumerate()
        .map(|(k, ((base, shape, strides), &size))| {
            let axes = &binding.core_axes[k];
            let n_loop = shape.len() - axes.iter().filter(|a| a.is_some()).count();
            let loop_strides =
                broadcast_strides_to(&binding.loop_shape, &shape[..n_loop], &strides[..n_loop])?;
            Ok(CoreOperand {
                base,
                loop_strides: byte_strides(&loop_strides, size),
                core_strides: axes.iter().map(|a| a.map_or(0, |a| strides[a])).collect(),
            })
        })
        .collect::<Result<_>>()?;
    let lp = Loop {
        bases: operands.iter().map(|op| op.base).collect(),
        loop_strides: operands.iter().map(|op| op.loop_strides.clone()).collect(),
        steps: operands
            .iter()
            .map(|op| op.loop_strides.last().copied().unwrap_or(0))
            .collect(),
        operands,
        binding,
    };
    let per_item: usize = binding
        .core_shapes
        .iter()
        .map(|s| s.iter().product::<usize>())
        .sum();
    catching_panics(B::NAME, || {
        SPLIT.run(threads, total, per_item, |range| lp.run_range::<B>(range))
    })
}

struct Loop<'b> {
    operands: Vec<CoreOperand>,
    bases: RowPtrs,
    loop_strides: Vec<Strides>,
    /// Each operand's byte step along the innermost loop dimension.
    steps: SmallVec<[isize; 8]>,
    binding: &'b CoreBinding,
}

// SAFETY: the pointers address the caller's arrays for the duration of the call; each loop
// index writes its own output elements.
unsafe impl Send for Loop<'_> {}
unsafe impl Sync for Loop<'_> {}

impl Loop<'_> {
    /// Calls the core function for loop items `range` (C order over the loop shape), a row of
    /// the innermost loop dimension at a time.
    fn run_range<B: GuBody>(&self, range: std::ops::Range<usize>) {
        let shape = &self.binding.loop_shape;
        walk_rows(
            shape,
            &self.loop_strides,
            &self.bases,
            range,
            |ptrs, j, n| {
                let args: SmallVec<[CoreArg<'_>; 8]> = self
                    .operands
                    .iter()
                    .zip(&self.binding.core_shapes)
                    .zip(ptrs.iter().zip(&self.steps))
                    .map(|((op, shape), (&ptr, &step))| CoreArg {
                        ptr: ptr.wrapping_offset(j as isize * step),
                        shape,
                        strides: &op.core_strides,
                    })
                    .collect();
                // SAFETY: the binding keeps every core sub-array of these items inside its operand.
                unsafe { B::call(&args, n, &self.steps) };
            },
        );
    }
}
