//! The `#[target_feature]` entry functions: one copy of the contiguous row loop per instruction
//! set, picked once per call from [`active_isa`](crate::active_isa).

use crate::body::{run_contiguous, Body};
use crate::isa::{IsaLevel, NoFma};

/// Runs a body over `n` contiguous elements of every operand.
pub(crate) type RowFn = unsafe fn(usize, &[*const u8], &[*mut u8]);

unsafe fn row_baseline<B: Body>(n: usize, ins: &[*const u8], outs: &[*mut u8]) {
    // SAFETY: the caller\'s contract, passed on.
    unsafe { run_contiguous::<B, NoFma>(n, ins, outs) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn row_avx2<B: Body>(n: usize, ins: &[*const u8], outs: &[*mut u8]) {
    // SAFETY: the caller\'s contract, passed on.
    unsafe { run_contiguous::<B, crate::isa::WithFma>(n, ins, outs) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,avx512f,avx512bw,avx512cd,avx512dq,avx512vl")]
unsafe fn row_avx512<B: Body>(n: usize, ins: &[*const u8], outs: &[*mut u8]) {
    // SAFETY: the caller\'s contract, passed on.
    unsafe { run_contiguous::<B, crate::isa::WithFma>(n, ins, outs) }
}

#[cfg(target_arch = "aarch64")]
#[target_feature(enable = "neon")]
unsafe fn row_neon<B: Body>(n: usize, ins: &[*const u8], outs: &[*mut u8]) {
    // SAFETY: the caller\'s contract, passed on.
    unsafe { run_contiguous::<B, crate::isa::WithFma>(n, ins, outs) }
}

/// The row loop of `B` for the active instruction set.
pub(crate) fn row_fn<B: Body>() -> RowFn {
    match crate::isa::active_isa() {
        #[cfg(target_arch = "x86_64")]
        IsaLevel::Avx512 => row_avx512::<B>,
        #[cfg(target_arch = "x86_64")]
        IsaLevel::Avx2 => row_avx2::<B>,
        #[cfg(target_arch = "aarch64")]
        IsaLevel::Neon => row_neon::<B>,
        _ => row_baseline::<B>,
    }
}
