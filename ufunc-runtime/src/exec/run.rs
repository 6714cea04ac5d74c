//! Walking a [`LoopPlan`]: rows of the innermost axis go to the instruction-set entry function
//! directly when every operand is contiguous along it; otherwise in chunks through small
//! buffers (stride-0 operands splatted once per row, strided ones gathered, strided outputs
//! scattered), so the vector loop only ever sees contiguous data.

use super::entry::{row_fn, RowFn};
use super::plan::{plan_loop, LoopPlan};
use crate::body::{Body, Inputs, Outputs};
use crate::error::{Error, Result};
use crate::operand::{RawOperand, RawOutOperand};
use crate::shape::{broadcast_strides, element_count};
use crate::Target;
use rayon::prelude::*;
use smallvec::SmallVec;

/// Elements per chunk when operands go through buffers (16 KiB for the widest element).
const CHUNK: usize = 1024;
/// Below this many elements a `parallel` call runs on the calling thread.
const PARALLEL_MIN: usize = 1 << 15;
/// Parallel pieces are multiples of this many elements (whole cache lines, whole vectors).
const PIECE_ALIGN: usize = 64;

/// Runs `B` for every element of the broadcast `shape`: `ins` broadcast to it, `outs` exactly it.
pub(crate) fn execute<B: Body>(
    target: Target,
    ins: &[RawOperand<'_>],
    outs: &[RawOutOperand<'_>],
    shape: &[usize],
) -> Result<()> {
    if target == Target::Cuda {
        // The caller checked the target against the compiled ones.
        let kernel = crate::cuda::kernel_of(B::NAME, B::CUDA, &[])?;
        return crate::cuda::execute(
            B::NAME,
            &kernel,
            ins,
            B::In::SIZES,
            outs,
            B::Out::SIZES,
            shape,
        );
    }
    let total = element_count(shape)?;
    if total == 0 {
        return Ok(());
    }
    if total < PARALLEL_MIN || target == Target::Cpu {
        if let Some(result) = try_single_row::<B>(ins, outs, shape, total) {
            return result;
        }
    }
    let strides: Vec<Vec<isize>> = ins
        .iter()
        .map(|op| broadcast_strides(shape, op.shape, op.strides))
        .chain(outs.iter().map(|op| op.strides.to_vec()))
        .collect();
    let plan = plan_loop(shape, &strides, ins.len());
    let sizes: Vec<usize> = B::In::SIZES.iter().chain(B::Out::SIZES).copied().collect();
    let bases: Vec<*mut u8> = ins
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
            .map(|(s, &size)| s.iter().map(|&x| x * size as isize).collect())
            .collect(),
        plan,
        bases,
        sizes,
        n_in: ins.len(),
        row: row_fn::<B>(),
    };
    catching_panics(B::NAME, || match target {
        Target::Cpu => walk.run_range(0, total),
        Target::Parallel | Target::Cuda => walk.run_parallel(total),
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

fn is_c_contiguous(shape: &[usize], strides: &[isize]) -> bool {
    let mut expected = 1isize;
    for (&n, &s) in shape.iter().zip(strides).rev() {
        if n != 1 && s != expected {
            return false;
        }
        expected *= n as isize;
    }
    true
}

/// Runs `run`, turning a panic of the body into `Error::KernelPanic`.
pub(crate) fn catching_panics(function: &'static str, run: impl FnOnce()) -> Result<()> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".to_string());
        Error::KernelPanic { function, message }
    })
}

/// Everything needed to walk a plan, shared read-only between threads.
struct Walk {
    plan: LoopPlan,
    byte_strides: Vec<Vec<isize>>,
    bases: Vec<*mut u8>,
    sizes: Vec<usize>,
    n_in: usize,
    row: RowFn,
}

// SAFETY: the pointers address the caller's arrays, which outlive the call; threads write
// disjoint ranges of the outputs and only read the inputs.
unsafe impl Send for Walk {}
unsafe impl Sync for Walk {}

impl Walk {
    fn run_parallel(&self, total: usize) {
        let threads = rayon::current_num_threads();
        if total < PARALLEL_MIN || threads < 2 {
            return self.run_range(0, total);
        }
        let pieces = (threads * 4).min(total / (PARALLEL_MIN / 2)).max(2);
        let per = total.div_ceil(pieces).next_multiple_of(PIECE_ALIGN);
        (0..total.div_ceil(per)).into_par_iter().for_each(|p| {
            self.run_range(p * per, ((p + 1) * per).min(total));
        });
    }

    /// Visits elements `start..end` of the plan's C-order iteration space.
    fn run_range(&self, start: usize, end: usize) {
        if start >= end {
            return;
        }
        let shape = &self.plan.shape;
        let nd = shape.len();
        let inner = shape[nd - 1];
        let mut ptrs = self.bases.clone();
        let mut idx = vec![0usize; nd - 1];
        let mut rest = start / inner;
        for a in (0..nd - 1).rev() {
            idx[a] = rest % shape[a];
            rest /= shape[a];
            for (k, p) in ptrs.iter_mut().enumerate() {
                *p = p.wrapping_offset(idx[a] as isize * self.byte_strides[k][a]);
            }
        }
        let mut j = start % inner;
        let mut remaining = end - start;
        let mut scratch = Scratch::default();
        loop {
            let len = (inner - j).min(remaining);
            // SAFETY: the plan keeps every visited element inside its operand.
            unsafe { self.run_row(&ptrs, j, len, &mut scratch) };
            remaining -= len;
            if remaining == 0 {
                break;
            }
            j = 0;
            for a in (0..nd - 1).rev() {
                idx[a] += 1;
                for (p, s) in ptrs.iter_mut().zip(&self.byte_strides) {
                    *p = p.wrapping_offset(s[a]);
                }
                if idx[a] < shape[a] {
                    break;
                }
                for (p, s) in ptrs.iter_mut().zip(&self.byte_strides) {
                    *p = p.wrapping_offset(-(shape[a] as isize) * s[a]);
                }
                idx[a] = 0;
            }
        }
    }

    /// Runs elements `j..j+len` of the row whose first element each operand has at `ptrs`.
    unsafe fn run_row(&self, ptrs: &[*mut u8], j: usize, len: usize, scratch: &mut Scratch) {
        let nd = self.plan.shape.len();
        let nops = ptrs.len();
        let inner_stride = |k: usize| self.byte_strides[k][nd - 1];
        let start: Ptrs = (0..nops)
            .map(|k| ptrs[k].wrapping_offset(j as isize * inner_stride(k)))
            .collect();
        // A single element is contiguous whatever its stride.
        let contiguous = |k: usize| len == 1 || inner_stride(k) == self.sizes[k] as isize;
        if (0..nops).all(contiguous) {
            let (ins, outs) = split_ptrs(&start, self.n_in);
            return (self.row)(len, &ins, outs);
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
                chunk_ptrs[k] = if contiguous(k) {
                    src
                } else if is_input && inner_stride(k) == 0 {
                    if c == 0 {
                        copy_strided(buffers[k], size as isize, src, 0, size, chunk.min(len));
                    }
                    buffers[k]
                } else if is_input {
                    copy_strided(buffers[k], size as isize, src, inner_stride(k), size, n);
                    buffers[k]
                } else {
                    buffers[k]
                };
            }
            let (ins, outs) = split_ptrs(&chunk_ptrs, self.n_in);
            (self.row)(n, &ins, outs);
            for k in self.n_in..nops {
                if !contiguous(k) {
                    let dst = start[k].wrapping_offset(c as isize * inner_stride(k));
                    let size = self.sizes[k];
                    copy_strided(dst, inner_stride(k), buffers[k], size as isize, size, n);
                }
            }
        }
    }
}

/// Operand pointers of one row or chunk, on the stack.
type Ptrs = SmallVec<[*mut u8; 16]>;

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
    fn buffers(&mut self, nops: usize, chunk: usize) -> Ptrs {
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

/// Copies `n` elements of `size` bytes between strided locations (strides in bytes).
unsafe fn copy_strided(
    dst: *mut u8,
    dst_stride: isize,
    src: *const u8,
    src_stride: isize,
    size: usize,
    n: usize,
) {
    unsafe fn copy<T: Copy>(dst: *mut u8, ds: isize, src: *const u8, ss: isize, n: usize) {
        for i in 0..n as isize {
            let v = (src.offset(i * ss) as *const T).read_unaligned();
            (dst.offset(i * ds) as *mut T).write_unaligned(v);
        }
    }
    match size {
        1 => copy::<u8>(dst, dst_stride, src, src_stride, n),
        2 => copy::<u16>(dst, dst_stride, src, src_stride, n),
        4 => copy::<u32>(dst, dst_stride, src, src_stride, n),
        8 => copy::<u64>(dst, dst_stride, src, src_stride, n),
        16 => copy::<[u64; 2]>(dst, dst_stride, src, src_stride, n),
        _ => {
            for i in 0..n as isize {
                std::ptr::copy_nonoverlapping(
                    src.offset(i * src_stride),
                    dst.offset(i * dst_stride),
                    size,
                );
            }
        }
    }
}
