//! The contiguous loops of the ufunc methods, one copy per instruction set (as
//! [`exec`](crate::exec)'s row loop): a reduction of one contiguous run (several accumulators,
//! then a tree, blocks of them combined pairwise), an element-wise combine of a row into an
//! accumulator row, and a running scan.

use crate::body::Body;
use crate::element::Element;
use crate::isa::{Isa, IsaLevel, NoFma};
use crate::stream::{stream_fence, stream_out, STREAM_STORES};

/// Independent accumulators of the block loop: eight AVX-512 vectors of 4-byte lanes, so that
/// the loop is bound by loads rather than by the latency of the operation (two compares, a
/// mask-or and a blend for a NaN-propagating `maximum`: with four vectors in flight it ran at
/// half the speed on the Zen 4 CI machine; sixteen spill).
const LANES: usize = 128;
// `block`'s tree halves the accumulators from 128.
const _: () = assert!(LANES == 128);
/// Elements per block: each accumulator takes `BLOCK / LANES` = 16 elements in a running
/// combine, as NumPy's pairwise sum (8 accumulators over blocks of 128); blocks are then
/// combined pairwise, so a float sum's error grows as `log2(n)` rather than `n`.
const BLOCK: usize = 16 * LANES;

/// The loops of body `B` for one instruction set.
#[derive(Clone, Copy)]
pub(crate) struct Kernels<T> {
    /// `f` over `n >= 1` contiguous elements.
    pub reduce: unsafe fn(*const T, usize) -> T,
    /// `reduce` of four runs of `n` contiguous elements each, `1 <= n <` [`STREAMS_MIN`],
    /// read side by side (the same results as one at a time).
    pub reduce_four: unsafe fn([*const T; 4], usize) -> [T; 4],
    /// Whether reading several runs side by side (`reduce_four`, and the parts of a long
    /// `reduce`) keeps more of the memory busy than reading them one after another, on the
    /// machines this instruction set runs on (see [`side_by_side`]).
    pub side_by_side: bool,
    /// `acc[i] = f(..f(f(acc[i], x0[i]), x1[i]).., xk[i])` for `i < n`, over the rows `x`.
    pub combine: unsafe fn(*mut T, &[*const T], usize),
    /// `out[0] = x[0]`, `out[i] = f(out[i - 1], x[i])` along strided runs of `n >= 1`
    /// elements (strides in elements), in that order.
    pub scan: unsafe fn(*const T, isize, *mut T, isize, usize),
    /// `f(..f(f(x[0], x[1]), x[2]).., x[n - 1])` along a strided run of `n >= 1` elements, in
    /// that order: the last element of `scan`, bit for bit.
    pub fold: unsafe fn(*const T, isize, usize) -> T,
    /// `fold` of eight runs of `n >= 1` elements at one stride, side by side (eight
    /// independent chains hide the latency of `f`): each the same bits as alone.
    pub fold_eight: unsafe fn([*const T; 8], isize, usize) -> [T; 8],
    /// `out[i] = f(carry, x[0], .., x[i])` over `n >= 1` contiguous elements, regrouped (see
    /// [`scan_run`]); returns `out[n - 1]`. `x` and `out` may be the same run: each block is
    /// read before it is written. With `stream`, the output is written with non-temporal
    /// stores (for outputs far larger than the caches): whole blocks, or whole vectors after a
    /// head written in order.
    pub scan_run: unsafe fn(*const T, *mut T, usize, Option<T>, bool) -> T,
}

/// Independent running chains of [`scan_run`]: enough to hide the latency of `f` (a float
/// addition's 3-4 cycles) behind one load and one store an element.
const CHAINS: usize = 8;
/// Elements per chain in a block of [`scan_run`]: a block (8 KiB of f32) stays in L1 for the
/// second pass, and the chains' lines fall in different cache sets (not a power of two);
/// 264, 512 and 520 measured the same.
const SEGMENT: usize = 264;
/// Elements of one block of [`scan_run`]: shorter runs are scanned in order.
pub(crate) const SCAN_BLOCK: usize = CHAINS * SEGMENT;

/// `f(a, b)` of `B` outside the vector loops (combining partial results).
#[inline(always)]
pub(crate) fn call<B: Body<In = (T, T), Out = T>, T: Element>(a: T, b: T) -> T {
    B::call::<NoFma>((a, b))
}

/// A block of `n` elements (`1 <= n <= BLOCK`) at each of `p`, read side by side: short ones
/// in order; longer ones into [`LANES`] accumulators (a running combine each), then a tree.
#[inline(always)]
unsafe fn blocks<B: Body<In = (T, T), Out = T>, T: Element, M: Isa, const S: usize>(
    p: [*const T; S],
    n: usize,
) -> [T; S] {
    let f = |a: T, b: T| B::call::<M>((a, b));
    // SAFETY (whole body): the caller's contract, `n` elements from each pointer.
    unsafe {
        if n < 2 * LANES {
            return p.map(|p| {
                let mut acc = p.read();
                for i in 1..n {
                    acc = f(acc, p.add(i).read());
                }
                acc
            });
        }
        let mut r: [[T; LANES]; S] =
            std::array::from_fn(|s| std::array::from_fn(|k| p[s].add(k).read()));
        let mut i = LANES;
        while i + LANES <= n {
            for (r, p) in r.iter_mut().zip(p) {
                for (k, r) in r.iter_mut().enumerate() {
                    *r = f(*r, p.add(i + k).read());
                }
            }
            i += LANES;
        }
        // The tail folds into the accumulators it would have met, then a tree.
        for (r, p) in r.iter_mut().zip(p) {
            for (k, j) in (i..n).enumerate() {
                r[k] = f(r[k], p.add(j).read());
            }
        }
        // Fixed widths, so that the wide steps vectorize (a loop over a run-time width stays
        // scalar).
        r.map(|mut r| {
            halve::<64, T>(&mut r, f);
            halve::<32, T>(&mut r, f);
            halve::<16, T>(&mut r, f);
            halve::<8, T>(&mut r, f);
            halve::<4, T>(&mut r, f);
            halve::<2, T>(&mut r, f);
            halve::<1, T>(&mut r, f);
            r[0]
        })
    }
}

/// One level of the accumulators' tree: `r[k] = f(r[k], r[k + W])` for `k < W`.
#[inline(always)]
fn halve<const W: usize, T: Copy>(r: &mut [T; LANES], f: impl Fn(T, T) -> T) {
    let (low, high) = r.split_at_mut(W);
    for (a, &b) in low.iter_mut().zip(&high[..W]) {
        *a = f(*a, b);
    }
}

/// Partial results of whole blocks combined as a binary counter: after each block, partials
/// of equal rank merge, so the result is a balanced tree over the blocks without recursion.
struct Counter<T> {
    // 64 ranks cover any `usize` count of blocks.
    stack: [(T, u32); 64],
    depth: usize,
}

impl<T: Element> Counter<T> {
    fn new() -> Self {
        Counter {
            stack: [(T::default(), 0); 64],
            depth: 0,
        }
    }

    #[inline(always)]
    fn push(&mut self, v: T, f: impl Fn(T, T) -> T) {
        let mut v = (v, 0u32);
        while self.depth > 0 && self.stack[self.depth - 1].1 == v.1 {
            self.depth -= 1;
            v = (f(self.stack[self.depth].0, v.0), v.1 + 1);
        }
        self.stack[self.depth] = v;
        self.depth += 1;
    }

    /// The total, from the left; at least one block was pushed.
    #[inline(always)]
    fn total(&self, f: impl Fn(T, T) -> T) -> T {
        let mut acc = self.stack[self.depth - 1].0;
        for k in (0..self.depth - 1).rev() {
            acc = f(self.stack[k].0, acc);
        }
        acc
    }
}

/// Runs shorter than this are combined in order within a block ([`blocks`]): reading
/// several of them side by side gains nothing.
pub(crate) const SIDE_BY_SIDE_MIN: usize = 2 * LANES;

/// Runs this long or longer are reduced as [`STREAMS`] parts ([`reduce_parts`]).
pub(crate) const STREAMS_MIN: usize = 64 * BLOCK;
/// Parts of a long run, read side by side where that is faster ([`side_by_side`]).
const STREAMS: usize = 4;

/// Whether the loops of an instruction set read several runs side by side: four sequential
/// streams far apart kept more of an AVX2 AMD EPYC host's memory busy than one (a 64 MB read
/// on two cores: 2.8-3.2 ms from one stream a core, 1.9-2.1 from four), while on the Zen 4
/// host with AVX-512 one stream a core was faster with either instruction set (a 64 MB
/// `maximum.reduce` on two cores: 1.7-2.3 ms, against 1.7-3.5 from four). The results are
/// the same either way; only the order of the reads changes.
const fn side_by_side(level: IsaLevel) -> bool {
    !matches!(level, IsaLevel::Avx512)
}

/// `f` over `n >= 1` contiguous elements: blocks of [`BLOCK`] combined by a [`Counter`]; a run
/// of [`STREAMS_MIN`] or more as [`STREAMS`] parts, each reduced so (its blocks counted from
/// its own start), their totals combined pairwise; with `SIDE_BY_SIDE`, the parts are read in
/// step.
#[inline(always)]
unsafe fn reduce<B: Body<In = (T, T), Out = T>, T: Element, M: Isa, const SIDE_BY_SIDE: bool>(
    p: *const T,
    n: usize,
) -> T {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        if n >= STREAMS_MIN {
            reduce_parts::<B, T, M, SIDE_BY_SIDE>(p, n)
        } else {
            reduce_runs::<B, T, M, 1>([p], n)[0]
        }
    }
}

/// [`STREAMS`] parts of a long run (all but the last a whole number of blocks, equal; the
/// last the rest); with `SIDE_BY_SIDE` their blocks in step, a few lanes of each in turn, and
/// the last part's remaining blocks after. The same result as [`reduce_runs`] of each part,
/// combined pairwise.
#[inline(always)]
unsafe fn reduce_parts<
    B: Body<In = (T, T), Out = T>,
    T: Element,
    M: Isa,
    const SIDE_BY_SIDE: bool,
>(
    p: *const T,
    n: usize,
) -> T {
    const { assert!(STREAMS == 4) };
    let f = |a: T, b: T| B::call::<M>((a, b));
    let part = n / STREAMS / BLOCK * BLOCK;
    let mut counters: [Counter<T>; STREAMS] = std::array::from_fn(|_| Counter::new());
    // SAFETY (whole body): every address lies in the run of `n` elements.
    unsafe {
        let starts: [*const T; STREAMS] = std::array::from_fn(|s| p.add(s * part));
        if SIDE_BY_SIDE {
            count_runs::<B, T, M, STREAMS>(starts, part, &mut counters);
        } else {
            for (start, counter) in starts.into_iter().zip(&mut counters) {
                count_runs::<B, T, M, 1>([start], part, std::array::from_mut(counter));
            }
        }
        let last = std::array::from_mut(&mut counters[STREAMS - 1]);
        count_runs::<B, T, M, 1>([p.add(STREAMS * part)], n - STREAMS * part, last);
    }
    let [a, b, c, d] = counters.map(|c| c.total(f));
    f(f(a, b), f(c, d))
}

/// Runs of `n >= 1` elements at each of `p`, read side by side, each one block after another
/// (blocks combined by a [`Counter`]): the same result for each as alone.
#[inline(always)]
unsafe fn reduce_runs<B: Body<In = (T, T), Out = T>, T: Element, M: Isa, const S: usize>(
    p: [*const T; S],
    n: usize,
) -> [T; S] {
    let f = |a: T, b: T| B::call::<M>((a, b));
    let mut counters: [Counter<T>; S] = std::array::from_fn(|_| Counter::new());
    // SAFETY: the caller's contract, passed on.
    unsafe { count_runs::<B, T, M, S>(p, n, &mut counters) };
    counters.map(|c| c.total(f))
}

/// Pushes the whole and partial blocks of the run of `n` elements at each of `p` onto its
/// [`Counter`] (`n = 0`: nothing pushed).
#[inline(always)]
unsafe fn count_runs<B: Body<In = (T, T), Out = T>, T: Element, M: Isa, const S: usize>(
    p: [*const T; S],
    n: usize,
    counters: &mut [Counter<T>; S],
) {
    let f = |a: T, b: T| B::call::<M>((a, b));
    let mut start = 0;
    while start < n {
        let len = BLOCK.min(n - start);
        // SAFETY: the caller's contract; `start + len <= n`.
        let totals = unsafe { blocks::<B, T, M, S>(p.map(|q| q.add(start)), len) };
        for (counter, total) in counters.iter_mut().zip(totals) {
            counter.push(total, f);
        }
        start += len;
    }
}

/// Rows are combined four at a time: one pass over the accumulators per four input rows, four
/// input streams in flight (the same order of operations per element as one row at a time).
#[inline(always)]
unsafe fn combine<B: Body<In = (T, T), Out = T>, T: Element, M: Isa>(
    acc: *mut T,
    rows: &[*const T],
    n: usize,
) {
    let f = |a: T, b: T| B::call::<M>((a, b));
    let mut quads = rows.chunks_exact(4);
    for q in &mut quads {
        let (x0, x1, x2, x3) = (q[0], q[1], q[2], q[3]);
        for i in 0..n {
            // SAFETY: the caller's contract, `n` elements behind every pointer.
            unsafe {
                let v = f(*acc.add(i), x0.add(i).read());
                let v = f(f(v, x1.add(i).read()), x2.add(i).read());
                *acc.add(i) = f(v, x3.add(i).read());
            }
        }
    }
    for &x in quads.remainder() {
        for i in 0..n {
            // SAFETY: as above.
            unsafe { *acc.add(i) = f(*acc.add(i), x.add(i).read()) };
        }
    }
}

#[inline(always)]
unsafe fn scan<B: Body<In = (T, T), Out = T>, T: Element, M: Isa>(
    x: *const T,
    xs: isize,
    out: *mut T,
    os: isize,
    n: usize,
) {
    // SAFETY: the caller's contract, `n` elements at those strides.
    unsafe {
        let mut acc = x.read();
        out.write(acc);
        for i in 1..n as isize {
            acc = B::call::<M>((acc, x.offset(i * xs).read()));
            out.offset(i * os).write(acc);
        }
    }
}

#[inline(always)]
unsafe fn fold<B: Body<In = (T, T), Out = T>, T: Element, M: Isa>(
    x: *const T,
    xs: isize,
    n: usize,
) -> T {
    // SAFETY: the caller's contract, `n` elements at that stride.
    unsafe {
        let mut acc = x.read();
        for i in 1..n as isize {
            acc = B::call::<M>((acc, x.offset(i * xs).read()));
        }
        acc
    }
}

#[inline(always)]
unsafe fn fold_eight<B: Body<In = (T, T), Out = T>, T: Element, M: Isa>(
    x: [*const T; 8],
    xs: isize,
    n: usize,
) -> [T; 8] {
    // SAFETY: the caller's contract, `n` elements at that stride behind every pointer.
    unsafe {
        let mut acc: [T; 8] = std::array::from_fn(|k| x[k].read());
        for i in 1..n as isize {
            for k in 0..8 {
                acc[k] = B::call::<M>((acc[k], x[k].offset(i * xs).read()));
            }
        }
        acc
    }
}

/// The running `f` of a contiguous run without a chain through every element: each block is
/// copied into a buffer in L1, cut into [`CHAINS`] segments scanned side by side (independent
/// chains), then written out in order, each segment with the total before it combined in from
/// the left (`f(carry, local)`), one vectorized sequential pass (eight scattered store streams
/// to memory ran at a third of the speed). This regroups `f` as `reduce` does: exact for
/// integers, `min`, `max`; for floats a sum whose error grows no faster than the running one.
#[inline(always)]
unsafe fn scan_run<B: Body<In = (T, T), Out = T>, T: Element, M: Isa>(
    x: *const T,
    out: *mut T,
    n: usize,
    mut carry: Option<T>,
    stream: bool,
) -> T {
    let f = |a: T, b: T| B::call::<M>((a, b));
    let stream = stream && STREAM_STORES;
    let mut buf = [T::default(); CHAINS * SEGMENT];
    let mut start = 0;
    // SAFETY (whole body): the caller's contract, `n` elements from `x` and from `out`.
    unsafe {
        while n - start >= CHAINS * SEGMENT {
            let (xb, ob) = (x.add(start), out.add(start));
            // One sequential read stream from memory (eight streams a segment apart defeat the
            // prefetcher and ran slower than the running scan), then the chains in L1.
            std::ptr::copy_nonoverlapping(xb, buf.as_mut_ptr(), CHAINS * SEGMENT);
            let mut acc: [T; CHAINS] = std::array::from_fn(|k| buf[k * SEGMENT]);
            // The next block's input and output lines are fetched while the chains compute,
            // so that memory is busy all the time (without, the copy, the chains and the
            // write-out took turns: no faster than the running scan).
            let (next_x, next_out) = (
                xb.add(CHAINS * SEGMENT) as *const u8,
                ob.add(CHAINS * SEGMENT) as *const u8,
            );
            let ahead =
                n * size_of::<T>() >= PREFETCH_MIN_BYTES && start + 2 * CHAINS * SEGMENT <= n;
            // One line of each every `every` steps, spread over the loop: a burst of
            // prefetches overflows the line fill buffers and most of it is dropped.
            let every = (64 / (CHAINS * size_of::<T>()).max(1)).max(1);
            for j in 1..SEGMENT {
                if ahead && j % every == 0 {
                    let at = (j / every - 1) * 64;
                    prefetch(next_x.add(at));
                    if !stream {
                        prefetch(next_out.add(at));
                    }
                }
                for (k, acc) in acc.iter_mut().enumerate() {
                    *acc = f(*acc, buf[k * SEGMENT + j]);
                    buf[k * SEGMENT + j] = *acc;
                }
            }
            for (k, &total) in acc.iter().enumerate() {
                let seg = &mut buf[k * SEGMENT..(k + 1) * SEGMENT];
                let o = ob.add(k * SEGMENT);
                match carry {
                    Some(c) if stream => seg.iter_mut().for_each(|v| *v = f(c, *v)),
                    Some(c) => {
                        for (j, &v) in seg.iter().enumerate() {
                            o.add(j).write(f(c, v));
                        }
                    }
                    None if stream => {}
                    None => std::ptr::copy_nonoverlapping(seg.as_ptr(), o, SEGMENT),
                }
                // The same expression as the segment's last element just written.
                carry = Some(carry.map_or(total, |c| f(c, total)));
            }
            if stream {
                stream_out(ob, buf.as_ptr(), SCAN_BLOCK);
            }
            start += CHAINS * SEGMENT;
        }
        if stream {
            stream_fence();
        }
        scan_tail::<B, T, M>(x, out, start..n, carry)
    }
}

/// The elements `range` of a regrouped scan after its whole blocks, in order from `carry`;
/// returns the last.
///
/// # Safety
/// `x` and `out` address the range.
#[inline(always)]
unsafe fn scan_tail<B: Body<In = (T, T), Out = T>, T: Element, M: Isa>(
    x: *const T,
    out: *mut T,
    range: std::ops::Range<usize>,
    mut carry: Option<T>,
) -> T {
    for i in range {
        // SAFETY: the caller's contract.
        unsafe {
            let v = x.add(i).read();
            let v = carry.map_or(v, |c| B::call::<M>((c, v)));
            out.add(i).write(v);
            carry = Some(v);
        }
    }
    carry.expect("a run of at least one element")
}

/// [`scan_run`] for 4-byte elements with AVX2: the same chains and the same results, but each
/// block is transposed into the buffer eight rows at a time (an 8x8 tile of 32-bit lanes by
/// shuffles), so that the eight chains are the eight lanes of one vector and `f` runs on whole
/// vectors; the write-out transposes back. The scalar chains cost a load, `f` and a store an
/// element (~0.55 ns on one core); this ~0.28, so two cores outrun memory.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn scan_run_tiles<B: Body<In = (T, T), Out = T>, T: Element, M: Isa>(
    x: *const T,
    out: *mut T,
    n: usize,
    mut carry: Option<T>,
    stream: bool,
) -> T {
    use std::arch::x86_64::{__m256, _mm256_loadu_ps, _mm256_storeu_ps};
    const { assert!(CHAINS == 8 && SEGMENT % 8 == 0) };
    assert_eq!(size_of::<T>(), 4, "tiles of 32-bit lanes");
    let f = |a: T, b: T| B::call::<M>((a, b));
    // The same bits, as the vector's lanes or as elements (shuffles only move bits).
    // SAFETY: `T` is 4 bytes, so `[T; 8]` and `__m256` have the same size.
    let lanes = |v: __m256| -> [T; CHAINS] { unsafe { std::mem::transmute_copy(&v) } };
    // SAFETY: as above.
    let vector = |a: [T; CHAINS]| -> __m256 { unsafe { std::mem::transmute_copy(&a) } };
    // `buf[j][k]`: element `j` of segment `k`, scanned.
    let mut buf = [[T::default(); CHAINS]; SEGMENT];
    // The block in order, when streamed: one sequential store stream rather than eight.
    // Uninitialised (zeroing 8 KiB a call would cost short runs): each block writes it whole
    // before it is read.
    let mut streamed = [const { std::mem::MaybeUninit::<T>::uninit() }; SCAN_BLOCK];
    // Lines of the next block's input (and output) to prefetch per tile.
    let lines_per_tile = (SCAN_BLOCK * size_of::<T>())
        .div_ceil(64)
        .div_ceil(SEGMENT / 8);
    let mut start = 0;
    // SAFETY (whole body): the caller's contract, `n` elements from `x` and from `out`; AVX2
    // is enabled in the callers (the AVX2 and AVX-512 entries).
    unsafe {
        while n - start >= SCAN_BLOCK {
            let (xb, ob) = (x.add(start), out.add(start));
            let (next_x, next_out) = (
                xb.add(SCAN_BLOCK) as *const u8,
                ob.add(SCAN_BLOCK) as *const u8,
            );
            let ahead = n * size_of::<T>() >= PREFETCH_MIN_BYTES && start + 2 * SCAN_BLOCK <= n;
            let mut acc = [T::default(); CHAINS];
            // The next block's lines, a few each tile over both halves (a burst of prefetches
            // overflows the line fill buffers): its input in the first half, where the tiles
            // read, and its output in the second, where they write.
            let fetch = |next: *const u8, tile: usize| {
                for l in tile * lines_per_tile..(tile + 1) * lines_per_tile {
                    prefetch(next.add(l * 64));
                }
            };
            for (tile, j0) in (0..SEGMENT).step_by(8).enumerate() {
                if ahead {
                    fetch(next_x, tile);
                }
                let rows: [__m256; 8] =
                    std::array::from_fn(
                        |k| _mm256_loadu_ps(xb.add(k * SEGMENT + j0) as *const f32),
                    );
                for (jj, v) in transpose8x8(rows).into_iter().enumerate() {
                    let v = lanes(v);
                    acc = if j0 + jj == 0 {
                        v
                    } else {
                        std::array::from_fn(|k| f(acc[k], v[k]))
                    };
                    buf[j0 + jj] = acc;
                }
            }
            // Each segment's carry: everything before it, combined from the left.
            let mut carries = [None; CHAINS];
            for (c, &total) in carries.iter_mut().zip(&acc) {
                *c = carry;
                // The same expression as the segment's last element written below.
                carry = Some(carry.map_or(total, |c| f(c, total)));
            }
            let dst = if stream {
                streamed.as_mut_ptr() as *mut T
            } else {
                ob
            };
            for (tile, j0) in (0..SEGMENT).step_by(8).enumerate() {
                if ahead && !stream {
                    fetch(next_out, tile);
                }
                let rows: [__m256; 8] = std::array::from_fn(|jj| vector(buf[j0 + jj]));
                for (k, v) in transpose8x8(rows).into_iter().enumerate() {
                    let v = lanes(v);
                    let v = match carries[k] {
                        Some(c) => std::array::from_fn(|jj| f(c, v[jj])),
                        None => v,
                    };
                    _mm256_storeu_ps(dst.add(k * SEGMENT + j0) as *mut f32, vector(v));
                }
            }
            if stream {
                stream_out(ob, streamed.as_ptr() as *const T, SCAN_BLOCK);
            }
            start += SCAN_BLOCK;
        }
        if stream {
            stream_fence();
        }
        scan_tail::<B, T, M>(x, out, start..n, carry)
    }
}

/// [`scan_run`] of a streamed run (from memory to memory) with AVX2, one vector of `N`
/// elements at a time (`N` = 8 of 4 bytes or 4 of 8 bytes): the running `f` within the vector
/// in shift-and-combine steps ([`Lanes::prefix`]), then the carry combined in from the left,
/// and the result stored at once with a non-temporal store, so that reads and writes to
/// memory interleave vector by vector (a block computed and then streamed out cost a third
/// more: `bench/probes/scan_bandwidth.c`). `out` is aligned to the element size.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn scan_run_streamed<B: Body<In = (T, T), Out = T>, T: Element, M: Isa, const N: usize>(
    x: *const T,
    out: *mut T,
    n: usize,
    carry: Option<T>,
) -> T {
    use std::arch::x86_64::{_mm256_loadu_ps, _mm256_stream_ps};
    assert_eq!(N * size_of::<T>(), 32, "whole AVX vectors");
    // SAFETY (whole body): the caller's contract, `n` elements from `x` and from `out`; AVX2
    // is enabled in the callers.
    unsafe {
        let l = Lanes::new::<N>();
        // The stores need 32-byte aligned addresses: the elements before the first one are
        // scanned in order.
        let head = ((32 - out as usize % 32) % 32 / size_of::<T>()).min(n);
        let mut carry = match head {
            0 => carry,
            _ => Some(scan_tail::<B, T, M>(x, out, 0..head, carry)),
        };
        let vectors = (n - head) / N;
        let (xv, ov) = (x.add(head), out.add(head));
        if vectors > 0 {
            let mut i = 0;
            let mut c = match carry {
                Some(c) => splat::<T, N>(c),
                // The first vector has no carry to combine.
                None => {
                    let w = l.prefix::<B, T, M, N>(_mm256_loadu_ps(xv as *const f32));
                    _mm256_stream_ps(ov as *mut f32, w);
                    i = 1;
                    l.last::<N>(w)
                }
            };
            while i < vectors {
                let w = l.prefix::<B, T, M, N>(_mm256_loadu_ps(xv.add(N * i) as *const f32));
                _mm256_stream_ps(ov.add(N * i) as *mut f32, apply::<B, T, M, N>(c, w));
                // The carry's chain is one `f` a vector: it combines the last lane of the
                // vector's own prefix, not of its result (the same value as the result's).
                c = apply::<B, T, M, N>(c, l.last::<N>(w));
                i += 1;
            }
            stream_fence();
            carry = Some(std::mem::transmute_copy::<_, [T; N]>(&c)[0]);
        }
        scan_tail::<B, T, M>(x, out, head + N * vectors..n, carry)
    }
}

/// `f` lane by lane on two vectors of `N` elements (`N * size_of::<T>() == 32`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn apply<B: Body<In = (T, T), Out = T>, T: Element, M: Isa, const N: usize>(
    a: std::arch::x86_64::__m256,
    b: std::arch::x86_64::__m256,
) -> std::arch::x86_64::__m256 {
    // SAFETY: `[T; N]` and `__m256` have the same size (the callers' assertion), and
    // shuffles only move bits.
    unsafe {
        let (a, b): ([T; N], [T; N]) = (std::mem::transmute_copy(&a), std::mem::transmute_copy(&b));
        let r: [T; N] = std::array::from_fn(|k| B::call::<M>((a[k], b[k])));
        std::mem::transmute_copy(&r)
    }
}

/// One step of [`Lanes::prefix`]: `f(moved, v)` lane by lane where `keep` is clear, `v` where
/// it is set. A function, not a closure: closures do not inherit the callers' `avx2`.
///
/// # Safety
/// AVX is enabled in the caller; as [`apply`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn step<B: Body<In = (T, T), Out = T>, T: Element, M: Isa, const N: usize>(
    moved: std::arch::x86_64::__m256,
    v: std::arch::x86_64::__m256,
    keep: std::arch::x86_64::__m256,
) -> std::arch::x86_64::__m256 {
    // SAFETY: the caller's contract.
    unsafe { std::arch::x86_64::_mm256_blendv_ps(apply::<B, T, M, N>(moved, v), v, keep) }
}

/// `v` in every lane.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn splat<T: Element, const N: usize>(v: T) -> std::arch::x86_64::__m256 {
    // SAFETY: as in `apply`.
    unsafe { std::mem::transmute_copy(&[v; N]) }
}

/// The lane moves of [`scan_run_streamed`]. The blends take their masks from vectors that the
/// compiler cannot see: with constant masks, LLVM followed each lane through `f` and the
/// blends and rewrote a vector's dozen instructions into some thirty, with repeated loads.
#[cfg(target_arch = "x86_64")]
struct Lanes {
    /// The 32-bit lanes to keep after each step of [`Lanes::prefix`] (sign bit set).
    keep: [std::arch::x86_64::__m256; 3],
}

#[cfg(target_arch = "x86_64")]
impl Lanes {
    /// The masks for vectors of `N` elements (8 or 4).
    #[inline(always)]
    fn new<const N: usize>() -> Self {
        let mask = |lanes: u8| -> std::arch::x86_64::__m256 {
            let m: [f32; 8] = std::array::from_fn(|k| if lanes >> k & 1 == 1 { -0.0 } else { 0.0 });
            // SAFETY: plain bits.
            unsafe { std::mem::transmute(m) }
        };
        // Eight elements: keep element 0 of each half, then 0-1 of each half, then the low
        // half. Four (two 32-bit lanes each): element 0 of each half, then the low half.
        let keep = if N == 8 {
            [mask(0x11), mask(0x33), mask(0x0F)]
        } else {
            [mask(0x33), mask(0x0F), mask(0)]
        };
        std::hint::black_box(Lanes { keep })
    }

    /// Lane `i`: `f(v[0], .., v[i])`. Lanes that would take an element from before the
    /// vector keep their value (the blends); `f` still runs on them, on zeros or on partial
    /// results counted twice, and those results are dropped (a function that panics on such
    /// values, a checked overflow say, can fail here where the in-order scan would not).
    ///
    /// # Safety
    /// AVX2 is enabled in the caller.
    #[inline(always)]
    unsafe fn prefix<B: Body<In = (T, T), Out = T>, T: Element, M: Isa, const N: usize>(
        &self,
        v: std::arch::x86_64::__m256,
    ) -> std::arch::x86_64::__m256 {
        use std::arch::x86_64::{
            _mm256_castps_si256 as bits, _mm256_castsi256_ps as floats,
            _mm256_permute2f128_ps as across, _mm256_permute_ps as within, _mm256_slli_si256 as up,
        };
        // SAFETY: AVX2, per the contract.
        unsafe {
            let step = step::<B, T, M, N>;
            if N == 8 {
                let v = step(floats(up::<4>(bits(v))), v, self.keep[0]);
                let v = step(floats(up::<8>(bits(v))), v, self.keep[1]);
                let low = within::<0xFF>(v);
                step(across::<0x00>(low, low), v, self.keep[2])
            } else {
                let v = step(floats(up::<8>(bits(v))), v, self.keep[0]);
                // Element 1 of each half (32-bit lanes 2 and 3) in both places of the half.
                let low = within::<0xEE>(v);
                step(across::<0x00>(low, low), v, self.keep[1])
            }
        }
    }

    /// The last element in every lane.
    ///
    /// # Safety
    /// AVX is enabled in the caller.
    #[inline(always)]
    unsafe fn last<const N: usize>(
        &self,
        v: std::arch::x86_64::__m256,
    ) -> std::arch::x86_64::__m256 {
        use std::arch::x86_64::{_mm256_permute2f128_ps as across, _mm256_permute_ps as within};
        // SAFETY: AVX, per the contract.
        unsafe {
            let high = if N == 8 {
                within::<0xFF>(v)
            } else {
                within::<0xEE>(v)
            };
            across::<0x11>(high, high)
        }
    }
}

/// The transpose of an 8x8 tile of 32-bit lanes (row `i` of the result holds lane `i` of
/// every input row).
///
/// # Safety
/// AVX is enabled in the caller.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn transpose8x8(r: [std::arch::x86_64::__m256; 8]) -> [std::arch::x86_64::__m256; 8] {
    use std::arch::x86_64::{
        _mm256_permute2f128_ps as across, _mm256_shuffle_ps as pick, _mm256_unpackhi_ps as high,
        _mm256_unpacklo_ps as low,
    };
    // SAFETY: AVX, per the contract.
    unsafe {
        let (t0, t1, t2, t3) = (
            low(r[0], r[1]),
            high(r[0], r[1]),
            low(r[2], r[3]),
            high(r[2], r[3]),
        );
        let (t4, t5, t6, t7) = (
            low(r[4], r[5]),
            high(r[4], r[5]),
            low(r[6], r[7]),
            high(r[6], r[7]),
        );
        let (s0, s1) = (pick::<0x44>(t0, t2), pick::<0xEE>(t0, t2));
        let (s2, s3) = (pick::<0x44>(t1, t3), pick::<0xEE>(t1, t3));
        let (s4, s5) = (pick::<0x44>(t4, t6), pick::<0xEE>(t4, t6));
        let (s6, s7) = (pick::<0x44>(t5, t7), pick::<0xEE>(t5, t7));
        [
            across::<0x20>(s0, s4),
            across::<0x20>(s1, s5),
            across::<0x20>(s2, s6),
            across::<0x20>(s3, s7),
            across::<0x31>(s0, s4),
            across::<0x31>(s1, s5),
            across::<0x31>(s2, s6),
            across::<0x31>(s3, s7),
        ]
    }
}

/// The regrouped scan of the AVX2 and AVX-512 entries: a streamed run of 4- or 8-byte
/// elements one vector at a time, each stored as it is made; a run of 4-byte elements in
/// cache in tiles, which compute faster there (64K float32 in L2: 0.015-0.016 ms in tiles,
/// 0.021-0.022 in whole vectors; 16M into `out`, `parallel`: 8.2-8.7 ms in tiles, 6.0-6.8 in
/// vectors).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn scan_run_x86<B: Body<In = (T, T), Out = T>, T: Element, M: Isa>(
    x: *const T,
    out: *mut T,
    n: usize,
    carry: Option<T>,
    stream: bool,
) -> T {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        let aligned = out as usize % size_of::<T>() == 0;
        if size_of::<T>() == 4 && stream && aligned {
            scan_run_streamed::<B, T, M, 8>(x, out, n, carry)
        } else if size_of::<T>() == 8 && stream && aligned {
            scan_run_streamed::<B, T, M, 4>(x, out, n, carry)
        } else if size_of::<T>() == 4 {
            scan_run_tiles::<B, T, M>(x, out, n, carry, stream)
        } else {
            scan_run::<B, T, M>(x, out, n, carry, stream)
        }
    }
}

/// Runs shorter than this are taken to be in cache already, and [`scan_run`] does not
/// prefetch (in L1 the hints cost a third more time).
const PREFETCH_MIN_BYTES: usize = 256 << 10;

/// A hint to bring the cache line at `p` into L1 (no effect where there is no such hint).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

macro_rules! entry {
    ($reduce:ident, $reduce_four:ident, $combine:ident, $scan:ident, $fold:ident, $fold_eight:ident, $scan_run:ident, $run:ident, $m:ty, $level:expr $(, $feat:literal)?) => {
        $(#[target_feature(enable = $feat)])?
        unsafe fn $reduce<B: Body<In = (T, T), Out = T>, T: Element>(p: *const T, n: usize) -> T {
            // SAFETY: the caller's contract, passed on.
            unsafe { reduce::<B, T, $m, { side_by_side($level) }>(p, n) }
        }
        $(#[target_feature(enable = $feat)])?
        unsafe fn $reduce_four<B: Body<In = (T, T), Out = T>, T: Element>(
            p: [*const T; 4],
            n: usize,
        ) -> [T; 4] {
            // SAFETY: the caller's contract, passed on.
            unsafe { reduce_runs::<B, T, $m, 4>(p, n) }
        }
        $(#[target_feature(enable = $feat)])?
        unsafe fn $combine<B: Body<In = (T, T), Out = T>, T: Element>(
            acc: *mut T,
            rows: &[*const T],
            n: usize,
        ) {
            // SAFETY: the caller's contract, passed on.
            unsafe { combine::<B, T, $m>(acc, rows, n) }
        }
        $(#[target_feature(enable = $feat)])?
        unsafe fn $scan<B: Body<In = (T, T), Out = T>, T: Element>(
            x: *const T,
            xs: isize,
            out: *mut T,
            os: isize,
            n: usize,
        ) {
            // SAFETY: the caller's contract, passed on.
            unsafe { scan::<B, T, $m>(x, xs, out, os, n) }
        }
        $(#[target_feature(enable = $feat)])?
        unsafe fn $fold<B: Body<In = (T, T), Out = T>, T: Element>(
            x: *const T,
            xs: isize,
            n: usize,
        ) -> T {
            // SAFETY: the caller's contract, passed on.
            unsafe { fold::<B, T, $m>(x, xs, n) }
        }
        $(#[target_feature(enable = $feat)])?
        unsafe fn $fold_eight<B: Body<In = (T, T), Out = T>, T: Element>(
            x: [*const T; 8],
            xs: isize,
            n: usize,
        ) -> [T; 8] {
            // SAFETY: the caller's contract, passed on.
            unsafe { fold_eight::<B, T, $m>(x, xs, n) }
        }
        $(#[target_feature(enable = $feat)])?
        unsafe fn $scan_run<B: Body<In = (T, T), Out = T>, T: Element>(
            x: *const T,
            out: *mut T,
            n: usize,
            carry: Option<T>,
            stream: bool,
        ) -> T {
            // SAFETY: the caller's contract, passed on.
            unsafe { $run::<B, T, $m>(x, out, n, carry, stream) }
        }
    };
}

entry!(
    reduce_base,
    reduce_four_base,
    combine_base,
    scan_base,
    fold_base,
    fold_eight_base,
    scan_run_base,
    scan_run,
    NoFma,
    IsaLevel::Baseline
);
#[cfg(target_arch = "x86_64")]
entry!(
    reduce_avx2,
    reduce_four_avx2,
    combine_avx2,
    scan_avx2,
    fold_avx2,
    fold_eight_avx2,
    scan_run_avx2,
    scan_run_x86,
    crate::isa::WithFma,
    IsaLevel::Avx2,
    "avx2,fma"
);
#[cfg(target_arch = "x86_64")]
entry!(
    reduce_avx512,
    reduce_four_avx512,
    combine_avx512,
    scan_avx512,
    fold_avx512,
    fold_eight_avx512,
    scan_run_avx512,
    scan_run_x86,
    crate::isa::WithFma,
    IsaLevel::Avx512,
    "avx2,fma,avx512f,avx512bw,avx512cd,avx512dq,avx512vl"
);
#[cfg(target_arch = "aarch64")]
entry!(
    reduce_neon,
    reduce_four_neon,
    combine_neon,
    scan_neon,
    fold_neon,
    fold_eight_neon,
    scan_run_neon,
    scan_run,
    crate::isa::WithFma,
    IsaLevel::Neon,
    "neon"
);

/// The loops of `B` for the active instruction set.
pub(crate) fn kernels<B: Body<In = (T, T), Out = T>, T: Element>() -> Kernels<T> {
    match crate::isa::active_isa() {
        #[cfg(target_arch = "x86_64")]
        IsaLevel::Avx512 => Kernels {
            reduce: reduce_avx512::<B, T>,
            reduce_four: reduce_four_avx512::<B, T>,
            side_by_side: side_by_side(IsaLevel::Avx512),
            combine: combine_avx512::<B, T>,
            scan: scan_avx512::<B, T>,
            fold: fold_avx512::<B, T>,
            fold_eight: fold_eight_avx512::<B, T>,
            scan_run: scan_run_avx512::<B, T>,
        },
        #[cfg(target_arch = "x86_64")]
        IsaLevel::Avx2 => Kernels {
            reduce: reduce_avx2::<B, T>,
            reduce_four: reduce_four_avx2::<B, T>,
            side_by_side: side_by_side(IsaLevel::Avx2),
            combine: combine_avx2::<B, T>,
            scan: scan_avx2::<B, T>,
            fold: fold_avx2::<B, T>,
            fold_eight: fold_eight_avx2::<B, T>,
            scan_run: scan_run_avx2::<B, T>,
        },
        #[cfg(target_arch = "aarch64")]
        IsaLevel::Neon => Kernels {
            reduce: reduce_neon::<B, T>,
            reduce_four: reduce_four_neon::<B, T>,
            side_by_side: side_by_side(IsaLevel::Neon),
            combine: combine_neon::<B, T>,
            scan: scan_neon::<B, T>,
            fold: fold_neon::<B, T>,
            fold_eight: fold_eight_neon::<B, T>,
            scan_run: scan_run_neon::<B, T>,
        },
        _ => Kernels {
            reduce: reduce_base::<B, T>,
            reduce_four: reduce_four_base::<B, T>,
            side_by_side: side_by_side(IsaLevel::Baseline),
            combine: combine_base::<B, T>,
            scan: scan_base::<B, T>,
            fold: fold_base::<B, T>,
            fold_eight: fold_eight_base::<B, T>,
            scan_run: scan_run_base::<B, T>,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::KernelPath;

    struct AddF32;
    impl Body for AddF32 {
        type In = (f32, f32);
        type Out = f32;
        const NAME: &'static str = "add_f32";
        const PATH: KernelPath = KernelPath::Simd;
        fn call<M: Isa>((a, b): (f32, f32)) -> f32 {
            a + b
        }
    }

    fn data(n: usize) -> Vec<f32> {
        (0..n)
            .map(|i| 1.0 + ((i * 7919) % 1000) as f32 * 1e-3)
            .collect()
    }

    #[test]
    fn long_runs_give_the_same_bits_read_side_by_side_or_one_part_after_another() {
        for n in [
            STREAMS_MIN,
            STREAMS_MIN + 1,
            4 * STREAMS_MIN + 3 * BLOCK + 17,
        ] {
            let x = data(n);
            // SAFETY: `n` elements at `x`.
            let (side, apart, alone) = unsafe {
                (
                    reduce::<AddF32, f32, NoFma, true>(x.as_ptr(), n),
                    reduce::<AddF32, f32, NoFma, false>(x.as_ptr(), n),
                    reduce_runs::<AddF32, f32, NoFma, 1>([x.as_ptr()], n)[0],
                )
            };
            assert_eq!(side.to_bits(), apart.to_bits(), "{n}");
            // The parts regroup the sum: a run read as one is a different (equally good) sum.
            assert!(
                (side - alone).abs() <= 1e-6 * alone.abs(),
                "{n}: {side} vs {alone}"
            );
        }
    }

    #[test]
    fn every_instruction_sets_entries_agree_with_the_portable_loops() {
        // The entries of the instruction sets this CPU has, whether or not the engine calls
        // them here (on AVX-512 the rows are read one after another, not four side by side).
        type Entries = (
            unsafe fn(*const f32, usize) -> f32,
            unsafe fn([*const f32; 4], usize) -> [f32; 4],
        );
        let mut entries: Vec<Entries> =
            vec![(reduce_base::<AddF32, f32>, reduce_four_base::<AddF32, f32>)];
        #[cfg(target_arch = "x86_64")]
        {
            if IsaLevel::Avx2.is_supported() {
                entries.push((reduce_avx2::<AddF32, f32>, reduce_four_avx2::<AddF32, f32>));
            }
            if IsaLevel::Avx512.is_supported() {
                entries.push((
                    reduce_avx512::<AddF32, f32>,
                    reduce_four_avx512::<AddF32, f32>,
                ));
            }
        }
        for n in [1, 2 * LANES + 3, BLOCK + 5, 3 * BLOCK, STREAMS_MIN + 1] {
            let x = data(4 * n + 3);
            let starts: [*const f32; 4] = std::array::from_fn(|s| x[s * n + s..].as_ptr());
            // SAFETY: `n` elements at each start, inside `x`.
            let want = unsafe { reduce::<AddF32, f32, NoFma, true>(x.as_ptr(), n) };
            for &(reduce, reduce_four) in &entries {
                // SAFETY: as above; each entry's instruction set is supported.
                unsafe {
                    assert_eq!(reduce(x.as_ptr(), n).to_bits(), want.to_bits(), "{n}");
                    if n < STREAMS_MIN {
                        let each = starts.map(|p| reduce(p, n).to_bits());
                        assert_eq!(reduce_four(starts, n).map(f32::to_bits), each, "{n}");
                    }
                }
            }
        }
    }

    #[test]
    fn eight_folds_side_by_side_give_each_run_its_own_bits_on_this_machines_instruction_sets() {
        type Entries = (
            unsafe fn(*const f32, isize, usize) -> f32,
            unsafe fn([*const f32; 8], isize, usize) -> [f32; 8],
        );
        let mut entries: Vec<Entries> =
            vec![(fold_base::<AddF32, f32>, fold_eight_base::<AddF32, f32>)];
        #[cfg(target_arch = "x86_64")]
        {
            if IsaLevel::Avx2.is_supported() {
                entries.push((fold_avx2::<AddF32, f32>, fold_eight_avx2::<AddF32, f32>));
            }
            if IsaLevel::Avx512.is_supported() {
                entries.push((fold_avx512::<AddF32, f32>, fold_eight_avx512::<AddF32, f32>));
            }
        }
        for (n, stride) in [(1usize, 1isize), (7, 1), (1000, 1), (300, 3), (300, -2)] {
            let len = 8 * n * stride.unsigned_abs() + 8;
            let x = data(len);
            // Eight runs, each `n` elements at `stride`, starting far enough in for a negative one.
            let span = n * stride.unsigned_abs();
            let starts: [*const f32; 8] = std::array::from_fn(|s| {
                let first = if stride < 0 {
                    (s + 1) * span - 1
                } else {
                    s * span
                };
                // From the whole buffer's pointer: a negative stride reads below `first`.
                x.as_ptr().wrapping_add(first)
            });
            for &(fold, fold_eight) in &entries {
                // SAFETY: `n` elements at `stride` from each start, inside `x`; the entry's
                // instruction set is supported.
                unsafe {
                    // The plain in-order sum, as the scalar loop computes it.
                    let want = starts.map(|p| {
                        let mut acc = p.read();
                        for i in 1..n as isize {
                            acc += p.offset(i * stride).read();
                        }
                        acc.to_bits()
                    });
                    assert_eq!(starts.map(|p| fold(p, stride, n).to_bits()), want, "{n}");
                    assert_eq!(fold_eight(starts, stride, n).map(f32::to_bits), want, "{n}");
                }
            }
        }
    }

    #[test]
    fn four_runs_side_by_side_give_each_run_its_own_bits() {
        for n in [1, 2 * LANES - 1, 2 * LANES, BLOCK + 5, 3 * BLOCK] {
            let x = data(4 * n + 3);
            let starts: [*const f32; 4] = std::array::from_fn(|s| x[s * n + s..].as_ptr());
            // SAFETY: `n` elements at each start, inside `x`.
            let (four, each) = unsafe {
                (
                    reduce_runs::<AddF32, f32, NoFma, 4>(starts, n),
                    starts.map(|p| reduce_runs::<AddF32, f32, NoFma, 1>([p], n)[0]),
                )
            };
            assert_eq!(four.map(f32::to_bits), each.map(f32::to_bits), "{n}");
        }
    }
}
