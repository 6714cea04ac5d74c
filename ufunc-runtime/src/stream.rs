//! Moving data far larger than the caches: non-temporal stores, which neither read a line
//! before writing it nor keep it in cache, and prefetches for reads the hardware prefetchers
//! do not foresee.

/// Outputs this large (bytes) or larger are written with [`stream_out`] where a loop can: they
/// would not stay in cache anyway (half of a 32 MiB L3), and the stores then skip reading each
/// line first.
pub(crate) const STREAM_MIN_BYTES: usize = 16 << 20;

/// Whether [`stream_out`] has non-temporal stores here (elsewhere the streamed path would
/// only add a copy).
pub(crate) const STREAM_STORES: bool = cfg!(target_arch = "x86_64");

/// `n` elements from `src` to `dst` with non-temporal stores, whole 64-byte lines of `dst`
/// at a time (the bytes of partial lines at either end with plain stores, which may split an
/// element: nothing reads it before [`stream_fence`]): the lines are not read first nor kept
/// in cache, which saves a third of the traffic of a scan from memory to memory.
///
/// # Safety
/// `src` and `dst` address `n` elements each and do not overlap.
#[inline(always)]
pub(crate) unsafe fn stream_out<T: Copy>(dst: *mut T, src: *const T, n: usize) {
    // SAFETY (whole body): the caller's contract, byte for byte; the streamed lines start at
    // a multiple of 64 bytes, as the stores need (16).
    unsafe {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
            let bytes = n * size_of::<T>();
            let (src, dst) = (src as *const u8, dst as *mut u8);
            let head = ((64 - dst as usize % 64) % 64).min(bytes);
            std::ptr::copy_nonoverlapping(src, dst, head);
            let lines = (bytes - head) / 64;
            for l in 0..lines {
                let (s, d) = (src.add(head + 64 * l), dst.add(head + 64 * l));
                for q in 0..4 {
                    let v = _mm_loadu_si128(s.add(16 * q) as *const __m128i);
                    _mm_stream_si128(d.add(16 * q) as *mut __m128i, v);
                }
            }
            let done = head + 64 * lines;
            std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), bytes - done);
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

/// How many rows ahead a walk down the columns of a large array prefetches: its rows are pages
/// apart, which the hardware prefetchers do not follow, so without it every row costs a full
/// memory latency.
pub(crate) const PREFETCH_ROWS: usize = 8;

/// Asks for the cache lines from `from` to `to` (inclusive, either order) to be loaded.
///
/// # Safety
/// Both pointers are derived from one allocation (the lines need not be readable).
#[inline(always)]
pub(crate) unsafe fn prefetch_span<T>(from: *const T, to: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let (lo, hi) = if from <= to { (from, to) } else { (to, from) };
        let (mut p, end) = (
            lo as *const i8,
            (hi as *const i8).wrapping_add(size_of::<T>()),
        );
        while p < end {
            // SAFETY: a prefetch is a hint: it never faults, whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p) };
            p = p.wrapping_add(64);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (from, to);
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex;

    /// Every start of `dst` that `T`'s alignment allows within a line, and lengths around a
    /// few lines: the copy is exact, and nothing beyond it is written.
    fn copies_exactly<T: Copy + PartialEq + std::fmt::Debug>(make: impl Fn(usize) -> T) {
        let (size, align) = (size_of::<T>(), align_of::<T>());
        let src: Vec<T> = (0..300).map(&make).collect();
        for offset in (0..64).step_by(align) {
            for n in [0, 1, 3, 7, 8, 16, 17, 63, 64, 65, 130, 299] {
                // A byte buffer with room for the offset, aligned for `T` via `u64` storage.
                let mut storage = vec![0u64; (offset + (n + 2) * size) / 8 + 16];
                let base = storage.as_mut_ptr() as *mut u8;
                let pad = (64 - base as usize % 64) % 64;
                // SAFETY: `pad + offset + (n + 1) * size` lies inside `storage`, and the start
                // is aligned for `T` (a multiple of `align` from a 64-byte boundary).
                unsafe {
                    let dst = base.add(pad + offset) as *mut T;
                    let guard = make(999);
                    dst.add(n).write(guard);
                    stream_out(dst, src.as_ptr(), n);
                    stream_fence();
                    let got = std::slice::from_raw_parts(dst, n);
                    assert_eq!(got, &src[..n], "offset {offset}, n {n}");
                    assert_eq!(
                        dst.add(n).read(),
                        guard,
                        "offset {offset}, n {n}: past the end"
                    );
                }
            }
        }
    }

    #[test]
    fn stream_out_copies_any_element_at_any_allowed_offset() {
        copies_exactly(|i| i as f32);
        copies_exactly(|i| i as f64);
        copies_exactly(|i| Complex::new(i as f32, -(i as f32)));
        // 16 bytes aligned to 8: a line can start inside an element.
        copies_exactly(|i| Complex::new(i as f64, 0.5 * i as f64));
    }
}
