//! Walking a [`LoopPlan`]: rows of the innermost axis go to the instruction-set entry function
//! directly when every operand is contiguous along it; otherwise in chunks through small
//! buffers (stride-0 operands splatted once per row, strided ones gathered, strided outputs
//! scattered), so the vector loop only ever sees contiguous data.

use super::entry::{row_fn, RowFn};
use super::plan::{plan_loop, LoopPlan};
use crate::body::{Body, Inputs, Outputs};
use crate::error::Result;
use crate::operand::{RawOperand, RawOutOperand};
use crate::panic::catching_panics;
use crate::parallel::{Split, Threads};
use crate::shape::{
    broadcast_strides_to, byte_strides, copy_strided, element_count, is_c_contiguous, walk_rows,
    RowPtrs, Strides,
};
use smallvec::SmallVec;

/// Elements per chunk when operands go through buffers (16 KiB for the widest element).
const CHUNK: usize = 1024;
/// How element-wise work is spread over threads: at least 2^15 elements per call, pieces of
/// whole cache lines and vectors.
const SPLIT: Split = Split {
    min_work: 1 << 15,
    min_items: 1,
    pieces_per_thread: 4,
    align: 64,
};

/// Runs `B` for every element of the broadcast `shape`: `ins` broadcast to it, `outs` exactly it.
pub(crate) fn execute<B: Body>(
    threads: Threads,
    ins: &[RawOperand<'_>],
    outs: &[RawOutOperand<'_>],
    shape: &[usize],
) -> Result<()> {
    let total = element_count(shape)?;
    if total == 0 {
        return Ok(());
    }
    if total < SPLIT.min_work || threads == Threads::One {
        if let Some(result) = try_single_row::<B>(ins, outs, shape, total) {
            return result;
        }
    }
    let mut strides: Vec<Strides> = Vec::with_capacity(ins.len() + outs.len());
    for op in ins {
        strides.push(broadcast_strides_to(shape, op.shape, op.strides)?);
    }
    strides.extend(outs.iter().map(|op| Strides::from_slice(op.strides)));
    let plan = plan_loop(shape, &strides, ins.len());
    let sizes: Vec<usize> = B::In::SIZES.iter().chain(B::Out::SIZES).copied().collect();
    let bases: RowPtrs = ins
        .iter()
        .map(|op| op.ptr as *mut u8)
        .chain(outs.iter().map(|op| op.ptr))
        .enumerate()
        .map(|(k, p)| p.wrapping_offset(plan.offsets[k] * sizes[k] as isize))
        .collect();
    let walk = Walk {
        byte_strides: plan
            .strides
            .iter()
            .zip(&sizes)
            .map(|(s, &size)| byte_strides(s, size))
            .collect(),
        plan,
        bases,
        sizes,
        n_in: ins.len(),
        row: row_fn::<B>(),
    };
    catching_panics(B::NAME, || {
        SPLIT.run(threads, total, 1, |range| {
            let mut scratch = Scratch::default();
            walk_rows(
                &walk.plan.shape,
                &walk.byte_strides,
                &walk.bases,
                range,
                // SAFETY: the plan keeps every visited element inside its operand.
                |ptrs, j, len| unsafe { walk.run_row(ptrs, j, len, &mut scratch) },
            );
        })
    })
}

/// The fast path of small and simple calls: when every operand is C-contiguous with the full
/// shape (or the call has one element), the whole call is one contiguous row, with no plan and
/// no allocation. `None` when the call is not of that kind.
fn try_single_row<B: Body>(
    ins: &[RawOperand<'_>],
    outs: &[RawOutOperand<'_>],
    shape: &[usize],
    total: usize,
) -> Option<Result<()>> {
    const MAX_IN: usize = 12;
    const MAX_OUT: usize = 4;
    let simple = |s: &[usize], st: &[isize]| total == 1 || (s == shape && is_c_contiguous(s, st));
    if ins.len() > MAX_IN
        || outs.len() > MAX_OUT
        || !ins.iter().all(|o| simple(o.shape, o.strides))
        || !outs.iter().all(|o| simple(o.shape, o.strides))
    {
        return None;
    }
    let mut in_ptrs = [std::ptr::null::<u8>(); MAX_IN];
    let mut out_ptrs = [std::ptr::null_mut::<u8>(); MAX_OUT];
    for (p, o) in in_ptrs.iter_mut().zip(ins) {
        *p = o.ptr;
    }
    for (p, o) in out_ptrs.iter_mut().zip(outs) {
        *p = o.ptr;
    }
    let row = row_fn::<B>();
    // SAFETY: every operand holds `total` contiguous elements from its pointer.
    Some(catching_panics(B::NAME, || unsafe {
        row(total, &in_ptrs[..ins.len()], &out_ptrs[..outs.len()])
    }))
}

/// Everything needed to walk a plan, shared read-only between threads.
struct Walk {
    plan: LoopPlan,
    byte_strides: Vec<Strides>,
    bases: RowPtrs,
    sizes: Vec<usize>,
    n_in: usize,
    row: RowFn,
}

// SAFETY: the pointers address the caller's arrays, which outlive the call; threads write
// disjoint ranges of the outputs and only read the inputs.
unsafe impl Send for Walk {}
unsafe impl Sync for Walk {}

impl Walk {
    /// Runs elements `j..j+len` of the row whose first element each operand has at `ptrs`.
    ///
    /// # Safety
    /// The row's elements lie inside their operands.
    unsafe fn run_row(&self, ptrs: &[*mut u8], j: usize, len: usize, scratch: &mut Scratch) {
        let nd = self.plan.shape.len();
        let nops = ptrs.len();
        let inner_stride = |k: usize| self.byte_strides[k][nd - 1];
        let start: RowPtrs = (0..nops)
            .map(|k| ptrs[k].wrapping_offset(j as isize * inner_stride(k)))
            .collect();
        // A single element is contiguous whatever its stride.
        let contiguous = |k: usize| len == 1 || inner_stride(k) == self.sizes[k] as isize;
        if (0..nops).all(contiguous) {
            let (ins, outs) = split_ptrs(&start, self.n_in);
            // SAFETY: every operand holds `len` contiguous elements from `start`.
            return unsafe { (self.row)(len, &ins, outs) };
        }
        let chunk = CHUNK.min(self.plan.shape[nd - 1]);
        let buffers = scratch.buffers(nops, chunk);
        let mut chunk_ptrs = start.clone();
        for c in (0..len).step_by(chunk) {
            let n = chunk.min(len - c);
            for k in 0..nops {
                let size = self.sizes[k];
                let src = start[k].wrapping_offset(c as isize * inner_stride(k));
                let is_input = k < self.n_in;
                // SAFETY (copies): strided elements of the row into this thread's buffers.
                chunk_ptrs[k] = if contiguous(k) {
                    src
                } else if is_input && inner_stride(k) == 0 {
                    if c == 0 {
                        let splat = chunk.min(len);
                        unsafe { copy_strided(buffers[k], size as isize, src, 0, size, splat) };
                    }
                    buffers[k]
                } else if is_input {
                    let st = inner_stride(k);
                    unsafe { copy_strided(buffers[k], size as isize, src, st, size, n) };
                    buffers[k]
                } else {
                    buffers[k]
                };
            }
            let (ins, outs) = split_ptrs(&chunk_ptrs, self.n_in);
            // SAFETY: every pointer now addresses `n` contiguous elements.
            unsafe { (self.row)(n, &ins, outs) };
            for k in self.n_in..nops {
                if !contiguous(k) {
                    let dst = start[k].wrapping_offset(c as isize * inner_stride(k));
                    let (st, size) = (inner_stride(k), self.sizes[k]);
                    // SAFETY: the chunk's results back into the strided output row.
                    unsafe { copy_strided(dst, st, buffers[k], size as isize, size, n) };
                }
            }
        }
    }
}

fn split_ptrs(ptrs: &[*mut u8], n_in: usize) -> (SmallVec<[*const u8; 16]>, &[*mut u8]) {
    let ins = ptrs[..n_in].iter().map(|&p| p as *const u8).collect();
    (ins, &ptrs[n_in..])
}

/// Per-thread chunk buffers, `chunk` elements of up to 16 bytes per operand, 16-byte aligned.
#[derive(Default)]
struct Scratch {
    storage: Vec<u128>,
}

impl Scratch {
    fn buffers(&mut self, nops: usize, chunk: usize) -> RowPtrs {
        let per = chunk; // in u128 units: `chunk` elements of up to 16 bytes
        if self.storage.len() < per * nops {
            self.storage = vec![0u128; per * nops];
        }
        let base = self.storage.as_mut_ptr();
        (0..nops)
            .map(|k| base.wrapping_add(k * per) as *mut u8)
            .collect()
    }
}
