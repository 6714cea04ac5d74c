//! Writing outputs far larger than the caches: non-temporal stores, which neither read a
//! line before writing it nor keep it in cache.

/// Outputs this large (bytes) or larger are written with [`stream_out`] where a loop can: they
/// would not stay in cache anyway (half of a 32 MiB L3), and the stores then skip reading each
/// line first.
pub(crate) const STREAM_MIN_BYTES: usize = 16 << 20;

/// Whether [`stream_out`] has non-temporal stores here (elsewhere the streamed path would
/// only add a copy).
pub(crate) const STREAM_STORES: bool = cfg!(target_arch = "x86_64");

/// `n` elements from `src` to `dst` with non-temporal stores, whole 64-byte lines of `dst`
/// at a time (the partial lines at either end with plain stores): the lines are not read
/// first nor kept in cache, which saves a third of the traffic of a scan from memory to
/// memory. Visible to other threads after [`stream_fence`].
///
/// # Safety
/// `src` and `dst` address `n` elements each and do not overlap.
#[inline(always)]
pub(crate) unsafe fn stream_out<T: Copy>(dst: *mut T, src: *const T, n: usize) {
    // SAFETY (whole body): the caller's contract; `dst` is aligned for `T`, whose size
    // divides 64, so the head is whole elements.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
            let size = size_of::<T>();
            let head = ((64 - dst as usize % 64) % 64 / size).min(n);
            std::ptr::copy_nonoverlapping(src, dst, head);
            let (mut s, mut d) = (src.add(head) as *const u8, dst.add(head) as *mut u8);
            let lines = (n - head) * size / 64;
            for _ in 0..lines {
                for q in 0..4 {
                    let v = _mm_loadu_si128(s.add(16 * q) as *const __m128i);
                    _mm_stream_si128(d.add(16 * q) as *mut __m128i, v);
                }
                (s, d) = (s.add(64), d.add(64));
            }
            let done = head + lines * 64 / size;
            std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), n - done);
        }
        #[cfg(not(target_arch = "x86_64"))]
        std::ptr::copy_nonoverlapping(src, dst, n);
    }
}

/// Orders the non-temporal stores of [`stream_out`] before this thread's later stores (the
/// pool's signal that the job is done), so that other threads see them.
#[inline(always)]
pub(crate) fn stream_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86-64.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}
