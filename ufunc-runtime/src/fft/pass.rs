//! One 1-D pass over every lane of an array along one axis: gather the lane (cropped or
//! zero-padded, converted to complex), transform it, scale it, scatter it. Where the
//! destination lanes are contiguous (the last axis of a standard-layout array) each lane is
//! transformed in place in the destination; otherwise a block of lanes is gathered into
//! contiguous scratch, transformed as one batch and scattered, so that every row of the array
//! is read and written a block at a time (the cache-blocked column pass). Lanes are split
//! across rayon's pool; each thread works in its own scratch from a [`Workspace`].

use super::options::{Pass, PassKind};
use super::transpose::TileElement;
use super::{FftElement, FftReal};
use crate::parallel::Threads;
use crate::shape::{Shape, Strides};
use crate::stream::{
    prefetch_span, stream_fence, stream_out, PREFETCH_ROWS, STREAM_MIN_BYTES, STREAM_STORES,
};
use num_complex::Complex;
use rayon::prelude::*;
use realfft::{ComplexToReal, RealToComplex};
use rustfft::Fft;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// Lanes gathered per block in the column pass: 32 lanes of 2048 `Complex<f32>` are 512 KiB,
/// which stays in L2, and each row access covers whole cache lines.
pub(super) const COLUMN_BLOCK: usize = 32;

/// The most a block of the real passes' strided lanes may hold, counted in their spectra (the
/// real lanes beside them are about as large): the block stays in L2, and a long lane's block
/// does not take the parallelism away (pieces are whole blocks).
const STRIDED_BLOCK_BYTES: usize = 1 << 20;

/// The widest span, in elements, of a block's lanes whose rows the gathers and scatters
/// prefetch ahead (a block of side-by-side lanes spans `COLUMN_BLOCK`).
const NEAR_LANES: usize = 4 * COLUMN_BLOCK;

/// Below this much work (points times log2 points) a pass stays on the calling thread.
const MIN_PARALLEL_WORK: usize = 1 << 16;

/// Pieces per thread, so that threads that finish early take more.
const PIECES_PER_THREAD: usize = 4;

/// The per-thread scratch of one transform: the gathered block, the real lanes, and rustfft's
/// scratch. Grown on first use and kept, so a plan that holds its workspace allocates nothing
/// on later calls.
#[derive(Default)]
pub(crate) struct Buffers<T> {
    pub(super) block: Vec<Complex<T>>,
    pub(super) spectrum: Vec<Complex<T>>,
    /// A second block or spectrum, for the convolution's second input.
    pub(super) other: Vec<Complex<T>>,
    pub(super) real: Vec<T>,
    pub(super) scratch: Vec<Complex<T>>,
}

/// One [`Buffers`] per thread of rayon's pool, plus one for a caller outside it.
pub(crate) struct Workspace<T> {
    slots: Box<[Mutex<Buffers<T>>]>,
}

impl<T: Default> Workspace<T> {
    pub(crate) fn new() -> Self {
        let slots = (0..rayon::current_num_threads() + 1)
            .map(|_| Mutex::new(Buffers::default()))
            .collect();
        Workspace { slots }
    }

    /// Runs `f` with this thread's buffers; fresh ones where the slot is taken (a plan
    /// executed from several threads at once, or a pool larger than the one it was made in).
    pub(super) fn with<R>(&self, f: impl FnOnce(&mut Buffers<T>) -> R) -> R {
        let i = rayon::current_thread_index().map_or(0, |i| i + 1) % self.slots.len();
        match self.slots[i].try_lock() {
            Ok(mut b) => f(&mut b),
            Err(_) => f(&mut Buffers::default()),
        }
    }
}

/// Resizes `v` to `n` elements, allocating only when it grows beyond what it ever held.
pub(super) fn fit<T: Default + Clone>(v: &mut Vec<T>, n: usize) -> &mut [T] {
    if v.len() < n {
        v.resize(n, T::default());
    }
    &mut v[..n]
}

/// An array's base pointer, shape and element strides, for the raw lane walk.
#[derive(Clone, Copy)]
pub(crate) struct Lanes<'a, P> {
    pub ptr: P,
    pub shape: &'a [usize],
    pub strides: &'a [isize],
}

/// The lanes of a source and a destination of the same shape but for `axis`: their number,
/// and the offsets of lane `k` (lanes in C order of the other axes).
pub(super) struct LaneSpace {
    other: Shape,
    src: Strides,
    dst: Strides,
    pub(super) src_axis: isize,
    pub(super) dst_axis: isize,
    pub(super) count: usize,
}

impl LaneSpace {
    pub(super) fn new(src: (&[usize], &[isize]), dst_strides: &[isize], axis: usize) -> Self {
        let pick = |s: &[isize]| -> Strides {
            s.iter()
                .enumerate()
                .filter_map(|(i, &v)| (i != axis).then_some(v))
                .collect()
        };
        let other: Shape = src
            .0
            .iter()
            .enumerate()
            .filter_map(|(i, &v)| (i != axis).then_some(v))
            .collect();
        LaneSpace {
            count: other.iter().product(),
            other,
            src: pick(src.1),
            dst: pick(dst_strides),
            src_axis: src.1[axis],
            dst_axis: dst_strides[axis],
        }
    }

    /// The element offsets of lane `k` in the source and the destination.
    pub(super) fn offsets(&self, mut k: usize) -> (isize, isize) {
        let (mut s, mut d) = (0isize, 0isize);
        for i in (0..self.other.len()).rev() {
            let idx = (k % self.other[i]) as isize;
            k /= self.other[i];
            s += idx * self.src[i];
            d += idx * self.dst[i];
        }
        (s, d)
    }
}

/// A pointer that may cross to rayon's threads: the parts each thread touches are disjoint.
#[derive(Clone, Copy)]
pub(crate) struct Shared<P>(pub(crate) P);

impl<P: Copy> Shared<P> {
    /// The pointer (a method, so that a closure captures the whole `Sync` wrapper).
    pub(crate) fn get(self) -> P {
        self.0
    }
}
// SAFETY: the pass functions hand each lane to exactly one thread.
unsafe impl<P> Send for Shared<P> {}
// SAFETY: as above.
unsafe impl<P> Sync for Shared<P> {}

/// The transform objects of one pass.
pub(crate) enum Op<T> {
    Complex(Arc<dyn Fft<T>>),
    RealForward(Arc<dyn RealToComplex<T>>),
    RealInverse(Arc<dyn ComplexToReal<T>>),
}

impl<T: FftReal> Op<T> {
    pub(crate) fn plan(pass: &Pass) -> crate::error::Result<Self> {
        use rustfft::FftDirection::{Forward, Inverse};
        Ok(match pass.kind {
            PassKind::Forward => Op::Complex(super::cache::complex(pass.n, Forward)?),
            PassKind::Inverse => Op::Complex(super::cache::complex(pass.n, Inverse)?),
            PassKind::RealForward => Op::RealForward(super::cache::real_forward(pass.n)?),
            PassKind::RealInverse => Op::RealInverse(super::cache::real_inverse(pass.n)?),
        })
    }
}

/// Runs `piece` over `0..lanes` in pieces whose lengths are multiples of `block`: on this
/// thread, or spread over rayon's pool where the work is large enough.
pub(super) fn drive<T: Default + Send>(
    threads: Threads,
    workspace: &Workspace<T>,
    lanes: usize,
    block: usize,
    work_per_lane: usize,
    piece: impl Fn(Range<usize>, &mut Buffers<T>) + Sync,
) {
    let n_threads = threads.count();
    let blocks = lanes.div_ceil(block);
    let work = lanes.saturating_mul(work_per_lane);
    if n_threads < 2 || blocks < 2 || work < MIN_PARALLEL_WORK {
        return workspace.with(|b| piece(0..lanes, b));
    }
    let pieces = (n_threads * PIECES_PER_THREAD).min(blocks);
    let per = blocks.div_ceil(pieces) * block;
    (0..lanes.div_ceil(per)).into_par_iter().for_each(|p| {
        workspace.with(|b| piece(p * per..((p + 1) * per).min(lanes), b));
    });
}

pub(super) fn work_of(n: usize) -> usize {
    n * (usize::BITS - n.leading_zeros()) as usize
}

/// Gathers `len` elements at `stride` from `src` into `dst` (converted to complex) and zeroes
/// the rest of `dst`.
///
/// # Safety
/// `src` addresses `len` readable elements at `stride`.
unsafe fn gather<A: FftElement>(
    dst: &mut [Complex<A::Real>],
    src: *const A,
    stride: isize,
    len: usize,
) {
    for (j, d) in dst[..len].iter_mut().enumerate() {
        // SAFETY: `j < len`, per the contract.
        *d = unsafe { *src.offset(j as isize * stride) }.to_complex();
    }
    dst[len..].fill(Complex::default());
}

/// [`gather`] for a real lane: `len` elements at `stride` from `src` into `dst`, the rest of
/// `dst` zero.
///
/// # Safety
/// `src` addresses `len` readable elements at `stride`.
pub(super) unsafe fn gather_real<T: FftReal>(
    dst: &mut [T],
    src: *const T,
    stride: isize,
    len: usize,
) {
    for (j, d) in dst[..len].iter_mut().enumerate() {
        // SAFETY: `j < len`, per the contract.
        *d = unsafe { *src.offset(j as isize * stride) };
    }
    dst[len..].fill(T::zero());
}

/// Makes the half `spectrum` of a real signal of `n` points real at DC and Nyquist: their
/// imaginary parts are ignored, as NumPy does (realfft would flag them).
pub(super) fn real_ends<T: FftReal>(spectrum: &mut [Complex<T>], n: usize) {
    spectrum[0].im = T::zero();
    if n % 2 == 0 {
        spectrum[n / 2].im = T::zero();
    }
}

/// The distance between lanes in a gathered block: `n` plus a cache line or two, so that the
/// lanes of a block fall in different cache sets. (At a power-of-two `n` they would all share
/// one set, and walking across the block, as the gather and the scatter do, would miss the L1
/// cache on every element.)
pub(super) fn lane_pitch(n: usize) -> usize {
    n + 64 / size_of::<Complex<f32>>()
}

/// Gathers the block of lanes starting at `offsets` (source offsets first) into `lanes`, `n`
/// apiece at `pitch` (the first `read` from the source, converted to complex, the rest zero),
/// reading across the block one source row at a time so that each row's cache lines and page
/// are visited once per block rather than once per lane.
///
/// # Safety
/// Each source lane addresses `read` readable elements at `stride`.
pub(super) unsafe fn gather_block<A: FftElement>(
    lanes: &mut [Complex<A::Real>],
    (n, pitch): (usize, usize),
    src: *const A,
    offsets: &[(isize, isize)],
    stride: isize,
    read: usize,
) {
    let block = (offsets, stride, read);
    // SAFETY: the caller's contract; `A` is `Complex<A::Real>` where it says so.
    unsafe { gather_lanes(lanes, (n, pitch), src, block, A::COMPLEX, A::to_complex) }
}

/// [`gather_block`] of real lanes.
///
/// # Safety
/// As for [`gather_block`].
pub(super) unsafe fn gather_block_real<T: FftReal>(
    lanes: &mut [T],
    (n, pitch): (usize, usize),
    src: *const T,
    offsets: &[(isize, isize)],
    stride: isize,
    read: usize,
) {
    let block = (offsets, stride, read);
    // SAFETY: the caller's contract.
    unsafe { gather_lanes(lanes, (n, pitch), src, block, true, |x| x) }
}

/// The gathers of a block: each element `convert`ed, or moved a tile at a time where the
/// source elements are the lanes' own (`same`) and the lanes lie side by side.
///
/// # Safety
/// As for [`gather_block`]; `same` only where `S` is `E`.
unsafe fn gather_lanes<S: Copy, E: TileElement>(
    lanes: &mut [E],
    (n, pitch): (usize, usize),
    src: *const S,
    (offsets, stride, read): (&[(isize, isize)], isize, usize),
    same: bool,
    convert: impl Fn(S) -> E,
) {
    // The tiles write through raw pointers: the sizes the loops below check element by element.
    assert!(
        read <= n && n <= pitch && lanes.len() >= offsets.len() * pitch,
        "gather_block: {} lanes of {n} ({read} read) at {pitch} in {}",
        offsets.len(),
        lanes.len()
    );
    let (first, last) = (offsets[0].0, offsets[offsets.len() - 1].0);
    if stride == 1 {
        // Contiguous source lanes: each is read in one run.
        for (lane, &(o, _)) in lanes.chunks_exact_mut(pitch).zip(offsets) {
            for (j, x) in lane[..read].iter_mut().enumerate() {
                // SAFETY: `j < read`, per the contract.
                *x = convert(unsafe { *src.offset(o + j as isize) });
            }
            lane[read..n].fill(E::default());
        }
        return;
    }
    let done = if same && side_by_side(offsets.iter().map(|o| o.0)) {
        // SAFETY: `S` is `E`, in rows of `offsets.len()` from `src + first`; the lanes are the
        // caller's scratch.
        unsafe {
            super::transpose::gather_tiles(
                lanes.as_mut_ptr(),
                pitch,
                src.offset(first).cast::<E>(),
                (offsets.len(), stride),
                read,
            )
        }
    } else {
        0
    };
    // A row's lines of the block are asked for ahead only where the lanes lie close together:
    // lanes a row apart would make the span most of the array.
    let near = (last - first).unsigned_abs() <= NEAR_LANES;
    for j in done..read {
        let row = j as isize * stride;
        if near && j + PREFETCH_ROWS < read {
            let ahead = (j + PREFETCH_ROWS) as isize * stride;
            // SAFETY: the addresses are inside the source lanes (prefetching never faults).
            unsafe { prefetch_span(src.offset(first + ahead), src.offset(last + ahead)) };
        }
        for (b, &(o, _)) in offsets.iter().enumerate() {
            // SAFETY: `j < read`, per the contract.
            lanes[b * pitch + j] = convert(unsafe { *src.offset(o + row) });
        }
    }
    for lane in lanes.chunks_exact_mut(pitch) {
        lane[read..n].fill(E::default());
    }
}

/// A complex pass from `src` (elements `A`) to `dst`; `in_place` when both are the same array.
///
/// # Safety
/// `src` and `dst` describe valid arrays whose shapes agree but along `pass.axis`
/// (`pass.len_in` in `src`, `pass.len_out` in `dst`); `dst` is writable, its elements
/// distinct, and it is either `src` itself (`in_place`) or disjoint from it.
pub(crate) unsafe fn complex<A: FftElement<Real = T>, T: FftReal>(
    fft: &dyn Fft<T>,
    pass: &Pass,
    src: Lanes<'_, *const A>,
    dst: Lanes<'_, *mut Complex<T>>,
    in_place: bool,
    threads: Threads,
    workspace: &Workspace<T>,
) {
    let (n, read) = (pass.n, pass.len_read());
    let space = LaneSpace::new((src.shape, src.strides), dst.strides, pass.axis);
    let scale = T::of_f64(pass.scale);
    let (sp, dp) = (Shared(src.ptr), Shared(dst.ptr));
    let rows = space.dst_axis == 1 || n == 1;
    let block = if rows { 1 } else { COLUMN_BLOCK };
    drive(
        threads,
        workspace,
        space.count,
        block,
        work_of(n),
        |range, buf| {
            let (sp, dp) = (sp, dp);
            let scratch = fit(&mut buf.scratch, fft.get_inplace_scratch_len());
            if rows {
                for k in range {
                    let (so, d) = space.offsets(k);
                    // SAFETY: lane `k` of `dst` is `n` contiguous elements that only this call
                    // touches; the source lane is read before (or is) them.
                    let row = unsafe { std::slice::from_raw_parts_mut(dp.0.offset(d), n) };
                    if !in_place {
                        // SAFETY: lane `k` of `src` holds `len_in >= read` elements.
                        unsafe { gather(row, sp.0.offset(so), space.src_axis, read) };
                    }
                    fft.process_with_scratch(row, scratch);
                    scale_all(row, scale);
                }
                return;
            }
            let pitch = lane_pitch(n);
            for_each_block(&space, range, block, |offsets| {
                let lanes = fit(&mut buf.block, offsets.len() * pitch);
                // SAFETY: as in the row case, read before any write of this block.
                unsafe { gather_block(lanes, (n, pitch), sp.0, offsets, space.src_axis, read) };
                for lane in lanes.chunks_exact_mut(pitch) {
                    fft.process_with_scratch(&mut lane[..n], scratch);
                }
                // SAFETY: the block's destination lanes are this call's alone.
                unsafe {
                    scatter_block(lanes, pitch, (0, n), scale, dp.0, offsets, space.dst_axis)
                };
            });
        },
    );
}

/// `f` on each block of up to `block` lanes of `range`, given the lanes' (source, destination)
/// offsets.
fn for_each_block(
    space: &LaneSpace,
    range: Range<usize>,
    block: usize,
    mut f: impl FnMut(&[(isize, isize)]),
) {
    let mut offsets = [(0isize, 0isize); COLUMN_BLOCK];
    let mut start = range.start;
    while start < range.end {
        let w = block.min(range.end - start);
        for (b, o) in offsets[..w].iter_mut().enumerate() {
            *o = space.offsets(start + b);
        }
        f(&offsets[..w]);
        start += w;
    }
}

/// Whether consecutive lanes start at consecutive elements (each row of a block is then one
/// run of elements, which [`super::transpose`] moves a tile at a time).
fn side_by_side(mut offsets: impl Iterator<Item = isize>) -> bool {
    let Some(mut last) = offsets.next() else {
        return false;
    };
    offsets.all(|o| {
        let next = o == last + 1;
        last = o;
        next
    })
}

/// Scatters points `skip..skip + len` of the block's lanes (`pitch` apart in `lanes`),
/// times `scale`, to the destination lanes at `offsets` (destination offsets second), row by
/// row across the block so that each destination row gets neighbouring writes.
///
/// # Safety
/// Each destination lane addresses `len` writable elements at `stride`, touched by no other
/// thread.
pub(super) unsafe fn scatter_block<E: TileElement>(
    lanes: &[E],
    pitch: usize,
    (skip, len): (usize, usize),
    scale: E::Real,
    dst: *mut E,
    offsets: &[(isize, isize)],
    stride: isize,
) {
    // The tiles read through raw pointers: the sizes the loops below check element by element.
    assert!(
        skip + len <= pitch && lanes.len() >= offsets.len() * pitch,
        "scatter_block: {} lanes of {skip} + {len} at {pitch} in {}",
        offsets.len(),
        lanes.len()
    );
    let (first, last) = (offsets[0].1, offsets[offsets.len() - 1].1);
    let done = if side_by_side(offsets.iter().map(|o| o.1)) {
        // SAFETY: rows of `offsets.len()` elements from `dst + first`, per the contract.
        unsafe {
            super::transpose::scatter_tiles(
                lanes[skip..].as_ptr(),
                pitch,
                dst.offset(first),
                (offsets.len(), stride),
                len,
                scale,
            )
        }
    } else {
        0
    };
    let near = (last - first).unsigned_abs() <= NEAR_LANES;
    for j in done..len {
        if near && j + PREFETCH_ROWS < len {
            let ahead = (j + PREFETCH_ROWS) as isize * stride;
            // SAFETY: inside the destination lanes; prefetching never faults.
            unsafe { prefetch_span(dst.offset(first + ahead), dst.offset(last + ahead)) };
        }
        for (b, &(_, d)) in offsets.iter().enumerate() {
            // SAFETY: element `j` of a destination lane, per the contract.
            unsafe { *dst.offset(d + j as isize * stride) = lanes[b * pitch + skip + j] * scale };
        }
    }
}

/// A real-to-half-spectrum pass from the real array `src` to `dst`; `may_stream` when no
/// other pass reads `dst` after it.
///
/// # Safety
/// As for [`complex`], never in place.
pub(crate) unsafe fn real_forward<T: FftReal>(
    fft: &dyn RealToComplex<T>,
    pass: &Pass,
    src: Lanes<'_, *const T>,
    dst: Lanes<'_, *mut Complex<T>>,
    may_stream: bool,
    threads: Threads,
    workspace: &Workspace<T>,
) {
    let (n, m, read) = (pass.n, pass.len_out, pass.len_read());
    let space = LaneSpace::new((src.shape, src.strides), dst.strides, pass.axis);
    let scale = T::of_f64(pass.scale);
    let (sp, dp) = (Shared(src.ptr), Shared(dst.ptr));
    let rows = space.dst_axis == 1 || m == 1;
    // Rows of a large output that nothing reads next (`may_stream`) are made in the buffer
    // and streamed out: the twist writes a row from both ends, each line fetched first.
    let stream = may_stream
        && rows
        && STREAM_STORES
        && space.count * m * size_of::<Complex<T>>() >= STREAM_MIN_BYTES;
    // Lanes whose outputs are strided (a transposed destination) are made a block at a time
    // and scattered row by row across the block, as the column pass does: written one lane at
    // a time, every point would land on a cache line of its own. A block of long lanes stays
    // within `STRIDED_BLOCK_BYTES` (down to one lane).
    let block = if rows { 1 } else { strided_block::<T>(m) };
    drive(
        threads,
        workspace,
        space.count,
        block,
        work_of(n),
        |range, buf| {
            let (sp, dp) = (sp, dp);
            let scratch = fit(&mut buf.scratch, fft.get_scratch_len());
            if !rows {
                let pitch = lane_pitch(m);
                let real_pitch = real_lane_pitch::<T>(n);
                for_each_block(&space, range, block, |offsets| {
                    let w = offsets.len();
                    let lines = fit(&mut buf.real, w * real_pitch);
                    let at = (n, real_pitch);
                    // SAFETY: each lane of `src` holds `len_in >= read` elements.
                    unsafe { gather_block_real(lines, at, sp.0, offsets, space.src_axis, read) };
                    let lanes = fit(&mut buf.spectrum, w * pitch);
                    let lines = lines.chunks_exact_mut(real_pitch);
                    for (line, lane) in lines.zip(lanes.chunks_exact_mut(pitch)) {
                        let _ = fft.process_with_scratch(&mut line[..n], &mut lane[..m], scratch);
                    }
                    // SAFETY: the block's destination lanes are this call's alone.
                    unsafe {
                        scatter_block(lanes, pitch, (0, m), scale, dp.0, offsets, space.dst_axis)
                    };
                });
                return;
            }
            let line = fit(&mut buf.real, n);
            let spectrum = fit(&mut buf.spectrum, m);
            for k in range {
                let (so, d) = space.offsets(k);
                // SAFETY: lane `k` of `src` holds `len_in >= read` elements.
                unsafe { gather_real(line, sp.0.offset(so), space.src_axis, read) };
                let out: &mut [Complex<T>] = if !stream {
                    // SAFETY: lane `k` of `dst` is `m` contiguous elements, ours alone.
                    unsafe { std::slice::from_raw_parts_mut(dp.0.offset(d), m) }
                } else {
                    spectrum
                };
                // The lengths are the plan's own: the transform's length errors cannot happen.
                let _ = fft.process_with_scratch(line, out, scratch);
                scale_all(out, scale);
                if stream {
                    // SAFETY: lane `k` of `dst` is `m` contiguous elements, ours alone.
                    unsafe { stream_out(dp.0.offset(d), out.as_ptr(), m) };
                }
            }
            if stream {
                stream_fence();
            }
        },
    );
}

/// A half-spectrum-to-real pass from `src` (elements `A`) to the real array `dst`: points
/// `pass.skip..pass.skip + pass.len_out` of each lane's `pass.n` (all of them but in a
/// convolution's cropped last pass).
///
/// # Safety
/// As for [`complex`], never in place.
pub(crate) unsafe fn real_inverse<A: FftElement<Real = T>, T: FftReal>(
    fft: &dyn ComplexToReal<T>,
    pass: &Pass,
    src: Lanes<'_, *const A>,
    dst: Lanes<'_, *mut T>,
    threads: Threads,
    workspace: &Workspace<T>,
) {
    let (n, m, read) = (pass.n, pass.n / 2 + 1, pass.len_read());
    let (skip, len) = (pass.skip, pass.len_out);
    let space = LaneSpace::new((src.shape, src.strides), dst.strides, pass.axis);
    let scale = T::of_f64(pass.scale);
    let (sp, dp) = (Shared(src.ptr), Shared(dst.ptr));
    let contiguous = space.dst_axis == 1 || n == 1;
    let rows = contiguous && skip == 0 && len == n;
    // Lanes written with a stride are made a block at a time and scattered across it, as
    // `real_forward`'s are; contiguous ones one at a time, cropped or not.
    let block = if contiguous { 1 } else { strided_block::<T>(m) };
    drive(
        threads,
        workspace,
        space.count,
        block,
        work_of(n),
        |range, buf| {
            let (sp, dp) = (sp, dp);
            let scratch = fit(&mut buf.scratch, fft.get_scratch_len());
            if !contiguous {
                let (pitch, real_pitch) = (lane_pitch(m), real_lane_pitch::<T>(n));
                for_each_block(&space, range, block, |offsets| {
                    let w = offsets.len();
                    let spectra = fit(&mut buf.spectrum, w * pitch);
                    // SAFETY: each lane of `src` holds `len_in >= read` elements.
                    unsafe {
                        gather_block(spectra, (m, pitch), sp.0, offsets, space.src_axis, read)
                    };
                    let lines = fit(&mut buf.real, w * real_pitch);
                    let lanes = spectra.chunks_exact_mut(pitch);
                    for (spectrum, line) in lanes.zip(lines.chunks_exact_mut(real_pitch)) {
                        real_ends(&mut spectrum[..m], n);
                        let _ =
                            fft.process_with_scratch(&mut spectrum[..m], &mut line[..n], scratch);
                    }
                    // SAFETY: the block's destination lanes (`len` points from `skip`) are
                    // this call's alone.
                    unsafe {
                        scatter_block(
                            lines,
                            real_pitch,
                            (skip, len),
                            scale,
                            dp.0,
                            offsets,
                            space.dst_axis,
                        )
                    };
                });
                return;
            }
            let spectrum = fit(&mut buf.spectrum, m);
            let line = fit(&mut buf.real, n);
            for k in range {
                let (so, d) = space.offsets(k);
                // SAFETY: lane `k` of `src` holds `len_in >= read` elements.
                unsafe { gather(spectrum, sp.0.offset(so), space.src_axis, read) };
                real_ends(spectrum, n);
                let out: &mut [T] = if rows {
                    // SAFETY: lane `k` of `dst` is `n` contiguous elements, ours alone.
                    unsafe { std::slice::from_raw_parts_mut(dp.0.offset(d), n) }
                } else {
                    &mut *line
                };
                let _ = fft.process_with_scratch(spectrum, out, scratch);
                if scale != T::one() {
                    out.iter_mut().for_each(|v| *v = *v * scale);
                }
                if !rows {
                    for (j, v) in out[skip..skip + len].iter().enumerate() {
                        // SAFETY: element `j` of destination lane `k`, ours alone.
                        unsafe { *dp.0.offset(d + j as isize * space.dst_axis) = *v };
                    }
                }
            }
        },
    );
}

/// Lanes per block of a real pass's strided lanes, whose spectra have `m` points
/// ([`STRIDED_BLOCK_BYTES`]).
fn strided_block<T: FftReal>(m: usize) -> usize {
    (STRIDED_BLOCK_BYTES / (lane_pitch(m) * size_of::<Complex<T>>())).clamp(1, COLUMN_BLOCK)
}

/// [`lane_pitch`] for real lanes: `n` and a cache line.
fn real_lane_pitch<T>(n: usize) -> usize {
    n + 64 / size_of::<T>()
}

fn scale_all<T: FftReal>(v: &mut [Complex<T>], scale: T) {
    if scale != T::one() {
        v.iter_mut().for_each(|z| *z = *z * scale);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A convolution's cropped last pass (points `skip..skip + len` of each lane, scaled) gives
    /// the same bits whether its lanes are written with a stride (blocks, tiles where the lanes
    /// lie side by side) or contiguously (one lane at a time), as one lane's own transform does.
    #[test]
    fn a_cropped_real_inverse_writes_each_layout_alike() {
        let (n, lanes, skip, len) = (12, 37, 3, 7);
        let m = n / 2 + 1;
        let fft = super::super::cache::real_inverse::<f64>(n).unwrap();
        let pass = Pass {
            axis: 0,
            kind: PassKind::RealInverse,
            len_in: m,
            n,
            len_out: len,
            skip,
            scale: 0.125,
        };
        // The spectrum: `m` rows of `lanes` (the lanes are its columns, side by side).
        let spectrum: Vec<Complex<f64>> = (0..m * lanes)
            .map(|i| Complex::new((i % 17) as f64 - 8.0, (i % 5) as f64 * 0.5))
            .collect();
        let want: Vec<Vec<f64>> = (0..lanes)
            .map(|k| {
                let mut lane: Vec<Complex<f64>> = (0..m).map(|j| spectrum[j * lanes + k]).collect();
                real_ends(&mut lane, n);
                let mut out = vec![0.0; n];
                fft.process(&mut lane, &mut out).unwrap();
                out[skip..skip + len].iter().map(|v| v * 0.125).collect()
            })
            .collect();
        let src_shape = [m, lanes];
        let src_strides = [lanes as isize, 1];
        for (threads, transposed) in [
            (Threads::One, false),
            (Threads::All, false),
            (Threads::One, true),
        ] {
            // Either `len x lanes` (lanes strided) or its transpose in memory (contiguous).
            let mut out = vec![f64::NAN; len * lanes];
            let dst_strides = if transposed {
                [1, len as isize]
            } else {
                [lanes as isize, 1]
            };
            // SAFETY: both arrays hold their shapes at their strides; they are disjoint.
            unsafe {
                real_inverse(
                    &*fft,
                    &pass,
                    Lanes {
                        ptr: spectrum.as_ptr(),
                        shape: &src_shape,
                        strides: &src_strides,
                    },
                    Lanes {
                        ptr: out.as_mut_ptr(),
                        shape: &[len, lanes],
                        strides: &dst_strides,
                    },
                    threads,
                    &Workspace::new(),
                )
            };
            for (k, lane) in want.iter().enumerate() {
                for (j, &v) in lane.iter().enumerate() {
                    let at = (j as isize * dst_strides[0] + k as isize * dst_strides[1]) as usize;
                    assert_eq!(
                        out[at].to_bits(),
                        v.to_bits(),
                        "lane {k} point {j}, transposed {transposed}"
                    );
                }
            }
        }
    }
}
