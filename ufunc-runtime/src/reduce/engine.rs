//! The CPU engine of `reduce` and `accumulate`: the axes are put in memory order (largest
//! stride first), length-1 axes dropped and neighbours that step as one merged, then split
//! into the kept sub-space, walked (and, on `parallel`, split) by the shared walker and
//! splitter, and the reduced sub-space, walked for each kept element or row:
//!
//! - *inner* reduction (the axis of smallest stride is reduced): each output element reduces
//!   its runs with the pairwise kernel (contiguous runs directly, strided ones through a
//!   buffer), runs combined in order; a function that is not reorderable has one reduced axis,
//!   folded in order;
//! - *outer* reduction (the axis of smallest stride is kept): chunks of an output row are
//!   accumulated in a buffer that input rows stream into with the element-wise combine.
//!
//! An accumulation walks the same way, the one accumulated axis as the reduced sub-space:
//! along it in order (the running scan, or rows streamed for an outer axis), or, for a function
//! declared associative, by the blocked scan (strided runs gathered into a buffer first), a few
//! long contiguous runs each split over the threads.

use super::kernels::{call, kernels, Kernels, SCAN_BLOCK, SIDE_BY_SIDE_MIN, STREAMS_MIN};
use super::reorderable;
use crate::body::Body;
use crate::element::Element;
use crate::parallel::{Split, Threads};
use crate::shape::{byte_strides, copy_strided, walk_rows, Shape, Strides};
use crate::stream::STREAM_MIN_BYTES;
use rayon::prelude::*;
use std::ops::Range;

/// Elements of a gather buffer (16 KiB of 8-byte elements).
const CHUNK: usize = 2048;
/// Elements of an accumulator row chunk: long runs of each input row (32 KiB of f32), so that
/// the rows streamed in are read as long sequential runs, while the chunk stays in L2.
const ROW_CHUNK: usize = 8192;
/// Kept elements (outputs) are spread over threads when there are enough of them.
const SPLIT_KEPT: Split = Split {
    min_work: 1 << 15,
    min_items: 2,
    pieces_per_thread: 4,
    align: 16,
};
/// Outer reductions split their kept rows into one long run per thread, so that every thread
/// still reads long sequential runs of each input row.
const SPLIT_ROWS: Split = Split {
    min_work: 1 << 15,
    min_items: 2,
    pieces_per_thread: 1,
    align: 1024,
};
/// Outer reductions with a small output and many reduced rows: each thread reduces a
/// contiguous block of rows into its own accumulator row (so it reads one sequential region
/// of memory), and the rows are combined in order.
const SPLIT_OUTER_ROWS: Split = Split {
    min_work: 1 << 16,
    min_items: 2,
    pieces_per_thread: 1,
    align: 1,
};
/// Outputs of an inner reduction taken at a time by [`Job::reduce_rows_in_step`], four
/// streams a quarter of them apart (their addresses held meanwhile: 64 KiB).
const ROWS_IN_STEP: usize = 4096;
/// A contiguous accumulation this long (or longer) is split over the threads, when there are
/// too few of them to give each thread its own.
const SCAN_SPLIT_MIN: usize = 1 << 17;
/// Each thread's piece of a split accumulation: read twice (reduced, then scanned), the
/// second time from L2 or L3. Two parallel phases per stretch of pieces: 128 KiB to 8 MiB
/// measured 13.6 to 8 ms for 16M f32 on a 2-core AMD EPYC, flat from 2 MiB on.
const SCAN_PIECE_BYTES: usize = 2 << 20;
/// The largest output (bytes) for which outer reductions split the reduced rows.
const OUTER_ROWS_MAX_BYTES: usize = 8 << 20;
/// Otherwise each output's reduced elements are, in pieces of whole blocks, combined in order.
const SPLIT_REDUCED: Split = Split {
    min_work: 1 << 16,
    min_items: 2,
    pieces_per_thread: 2,
    align: 1024,
};

/// One axis of the walk: length, input stride and output stride, in elements.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Axis {
    pub len: usize,
    pub a: isize,
    pub out: isize,
}

/// Axes sorted by decreasing input stride (stable), length-1 axes dropped, then neighbours
/// merged where both the input and the output step through them as one axis.
fn ordered(axes: impl Iterator<Item = Axis>) -> Vec<Axis> {
    let mut v: Vec<Axis> = axes.filter(|x| x.len != 1).collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.a.unsigned_abs()));
    let mut merged: Vec<Axis> = Vec::with_capacity(v.len());
    for x in v {
        match merged.last_mut() {
            Some(m) if m.a == x.a * x.len as isize && m.out == x.out * x.len as isize => {
                m.len *= x.len;
                m.a = x.a;
                m.out = x.out;
            }
            _ => merged.push(x),
        }
    }
    merged
}

/// A sub-space: its shape and byte strides of the input and the output.
struct Space {
    shape: Shape,
    a: Strides,
    out: Strides,
    /// Element strides of the last axis (0 when there is none).
    a_inner: isize,
    out_inner: isize,
}

impl Space {
    fn new(axes: &[Axis], size: usize) -> Space {
        let a: Strides = axes.iter().map(|x| x.a).collect();
        let out: Strides = axes.iter().map(|x| x.out).collect();
        Space {
            shape: axes.iter().map(|x| x.len).collect(),
            a: byte_strides(&a, size),
            out: byte_strides(&out, size),
            a_inner: axes.last().map_or(0, |x| x.a),
            out_inner: axes.last().map_or(0, |x| x.out),
        }
    }

    fn len(&self) -> usize {
        self.shape.iter().product()
    }
}

/// The kept and the reduced axes of `axes`, each in memory order with neighbours merged, and
/// whether the axis of smallest stride is reduced (an *inner* reduction).
pub(crate) fn split_axes(axes: &[AxisSpec]) -> (Vec<Axis>, Vec<Axis>, bool) {
    let pick = |r: bool| {
        ordered(
            axes.iter()
                .filter(move |x| x.3 == r)
                .map(|&(len, a, out, _)| Axis { len, a, out }),
        )
    };
    let (kept, reduced) = (pick(false), pick(true));
    let inner = match (kept.last(), reduced.last()) {
        (Some(k), Some(r)) => r.a.unsigned_abs() < k.a.unsigned_abs(),
        (None, Some(_)) => true,
        _ => false,
    };
    (kept, reduced, inner)
}

/// What a reduction or accumulation walks. Pointers address the caller's arrays.
pub(super) struct Job<T> {
    kept: Space,
    reduced: Space,
    /// Whether the axis of smallest stride is reduced.
    inner: bool,
    a: *const T,
    out: *mut T,
    k: Kernels<T>,
}

// SAFETY: the pointers address the caller's arrays, which outlive the call; threads write
// disjoint output elements and only read the input.
unsafe impl<T: Send> Send for Job<T> {}
unsafe impl<T: Sync> Sync for Job<T> {}

/// One operand axis: its length, the input's stride, the output's stride (0 along a reduced
/// axis of a reduction) and whether it is reduced (walked for each output element).
pub(crate) type AxisSpec = (usize, isize, isize, bool);

impl<T: Element> Job<T> {
    pub(super) fn new<B: Body<In = (T, T), Out = T>>(
        axes: &[AxisSpec],
        a: *const T,
        out: *mut T,
    ) -> Job<T> {
        let size = size_of::<T>();
        let (kept, reduced, inner) = split_axes(axes);
        Job {
            kept: Space::new(&kept, size),
            reduced: Space::new(&reduced, size),
            inner,
            a,
            out,
            k: kernels::<B, T>(),
        }
    }

    /// Reduces: every output element gets `f` over its reduced elements (at least one).
    pub(super) fn reduce<B: Body<In = (T, T), Out = T>>(&self, threads: Threads) {
        let n_kept = self.kept.len();
        let n_red = self.reduced.len();
        let nthreads = threads.count();
        if !reorderable::<B, T>() {
            // NumPy's order along the one reduced axis: a fold for each output (inner; eight
            // side by side), or input rows streamed in order into accumulator rows (outer).
            if self.inner && n_kept >= 8 {
                SPLIT_KEPT.run(threads, n_kept, n_red, |range| self.fold_rows(range, n_red));
                return;
            }
            self.walk_kept(threads, false, |a, out| {
                // SAFETY: one axis of `n_red` elements at its stride; `out` is this output.
                unsafe { out.write((self.k.fold)(a, self.reduced.a_inner, n_red)) };
            });
            return;
        }
        if self.inner && threads == Threads::All && n_kept < 2 * nthreads {
            // Few outputs: split each one's reduced elements, combined in a fixed order.
            let pieces = SPLIT_REDUCED.pieces(n_red, 1, nthreads);
            self.walk_kept_rows(0..n_kept, |p, j, len| {
                for i in j..j + len {
                    let (a, out) = self.item(p, i);
                    let a = a as usize;
                    let parts: Vec<T> = pieces
                        .par_iter()
                        .map(|r| self.reduce_item::<B>(a as *const T, r.clone()))
                        .collect();
                    let v = parts.into_iter().reduce(call::<B, T>).expect("one piece");
                    // SAFETY: `out` is this output element.
                    unsafe { out.write(v) };
                }
            });
            return;
        }
        if !self.inner
            && threads == Threads::All
            && n_kept.saturating_mul(size_of::<T>()) <= OUTER_ROWS_MAX_BYTES
        {
            let pieces = SPLIT_OUTER_ROWS.pieces(n_red, n_kept, nthreads);
            if pieces.len() > 1 {
                self.reduce_outer_split(&pieces);
                return;
            }
        }
        if self.inner
            && self.reduced.shape.len() == 1
            && self.reduced.a_inner == 1
            && (SIDE_BY_SIDE_MIN..STREAMS_MIN).contains(&n_red)
            && n_kept >= 4
            && self.k.side_by_side
        {
            SPLIT_KEPT.run(threads, n_kept, n_red, |range| {
                self.reduce_rows_in_step(range, n_red)
            });
            return;
        }
        self.walk_kept(threads, false, |a, out| {
            let v = self.reduce_item::<B>(a, 0..n_red);
            // SAFETY: `out` is this output element.
            unsafe { out.write(v) };
        });
    }

    /// The outputs `range` of an inner reduction over one contiguous axis of `n` elements,
    /// four at a time from four places in each stretch of [`ROWS_IN_STEP`] outputs (four input
    /// streams far apart keep more of some machines' memory busy than one:
    /// [`Kernels::side_by_side`]), the rest one at a time: each the same as alone.
    fn reduce_rows_in_step(&self, range: Range<usize>, n: usize) {
        let mut items = Vec::with_capacity(range.len().min(ROWS_IN_STEP));
        for start in range.clone().step_by(ROWS_IN_STEP) {
            items.clear();
            self.walk_kept_rows(start..(start + ROWS_IN_STEP).min(range.end), |p, j, len| {
                items.extend((j..j + len).map(|i| self.item(p, i)));
            });
            self.reduce_items_in_step(&items, n);
        }
    }

    /// [`Job::reduce_rows_in_step`] of the outputs `items` (their input rows and outputs).
    fn reduce_items_in_step(&self, items: &[(*const T, *mut T)], n: usize) {
        let quarter = items.len() / 4;
        for i in 0..quarter {
            let rows: [(*const T, *mut T); 4] = std::array::from_fn(|s| items[i + s * quarter]);
            // SAFETY: each input row holds `n` contiguous elements; `out` is its output.
            unsafe {
                let totals = (self.k.reduce_four)(rows.map(|r| r.0), n);
                for ((_, out), v) in rows.into_iter().zip(totals) {
                    out.write(v);
                }
            }
        }
        for &(a, out) in &items[4 * quarter..] {
            // SAFETY: as above.
            unsafe { out.write((self.k.reduce)(a, n)) };
        }
    }

    /// The outputs `range` of an inner reduction in order along one axis of `n` elements:
    /// eight folds side by side ([`Kernels::fold_eight`]), the rest one at a time.
    fn fold_rows(&self, range: Range<usize>, n: usize) {
        let stride = self.reduced.a_inner;
        let mut items = Vec::with_capacity(range.len().min(ROWS_IN_STEP));
        for start in range.clone().step_by(ROWS_IN_STEP) {
            items.clear();
            self.walk_kept_rows(start..(start + ROWS_IN_STEP).min(range.end), |p, j, len| {
                items.extend((j..j + len).map(|i| self.item(p, i)));
            });
            let mut eights = items.chunks_exact(8);
            for rows in &mut eights {
                // SAFETY: each input row holds `n` elements at `stride`; the outputs are its own.
                unsafe {
                    let totals = (self.k.fold_eight)(std::array::from_fn(|k| rows[k].0), stride, n);
                    for (&(_, out), v) in rows.iter().zip(totals) {
                        out.write(v);
                    }
                }
            }
            for &(a, out) in eights.remainder() {
                // SAFETY: as above.
                unsafe { out.write((self.k.fold)(a, stride, n)) };
            }
        }
    }

    /// The kept elements, split over threads: `item(a, out)` for each (inner), or rows streamed
    /// (outer; `each` for an accumulation).
    fn walk_kept(&self, threads: Threads, each: bool, item: impl Fn(*const T, *mut T) + Sync) {
        let work = self.reduced.len().max(1);
        let split = if self.inner { SPLIT_KEPT } else { SPLIT_ROWS };
        split.run(threads, self.kept.len(), work, |range| {
            let mut acc = Vec::new();
            self.walk_kept_rows(range, |p, j, len| {
                if self.inner {
                    for i in j..j + len {
                        let (a, out) = self.item(p, i);
                        item(a, out);
                    }
                } else {
                    let n_red = self.reduced.len();
                    self.stream_row(p, j, len, 0..n_red, &mut acc, each, None);
                }
            })
        });
    }

    /// An outer reduction split over blocks of reduced rows (`pieces`, in order): each block
    /// reduced into its own row of partial results in parallel, the rows combined in order.
    fn reduce_outer_split(&self, pieces: &[Range<usize>]) {
        let n_kept = self.kept.len();
        let partial = |red: &Range<usize>| -> Vec<T> {
            let mut part = vec![T::default(); n_kept];
            let mut acc = Vec::new();
            // Rows come in C order: `flat` is the row's first flat index among the kept.
            let mut flat = 0;
            self.walk_kept_rows(0..n_kept, |p, j, len| {
                let sink = &mut part[flat..flat + len];
                flat += len;
                self.stream_row(p, j, len, red.clone(), &mut acc, false, Some(sink));
            });
            part
        };
        let parts: Vec<Vec<T>> = pieces.par_iter().map(partial).collect();
        let mut parts = parts.into_iter();
        let mut total = parts.next().expect("at least two pieces");
        for part in parts {
            // SAFETY: both rows hold `n_kept` elements.
            unsafe { (self.k.combine)(total.as_mut_ptr(), &[part.as_ptr()], n_kept) };
        }
        let mut flat = 0;
        walk_rows(
            &self.kept.shape,
            &[&self.kept.out],
            &[self.out as *mut u8],
            0..n_kept,
            |p, j, len| {
                let dst = (p[0] as *mut T).wrapping_offset(j as isize * self.kept.out_inner);
                // SAFETY: `len` output elements at stride `out_inner` from `dst`.
                unsafe { write_out(dst, self.kept.out_inner, total[flat..].as_ptr(), len) };
                flat += len;
            },
        );
    }

    /// `row(ptrs, j, len)` for each run of the kept rows over the flat kept indices `range`:
    /// `ptrs` are the input's and the output's addresses of the row's element 0.
    fn walk_kept_rows(&self, range: Range<usize>, row: impl FnMut(&[*mut u8], usize, usize)) {
        walk_rows(
            &self.kept.shape,
            &[&self.kept.a, &self.kept.out],
            &[self.a as *mut u8, self.out as *mut u8],
            range,
            row,
        );
    }

    /// Accumulates along the one reduced axis (`out` has the input's shape), in order; for an
    /// associative `f`, contiguous runs are scanned in regrouped blocks
    /// ([`Kernels::scan_run`]), a few long ones each split over the threads
    /// ([`Job::scan_split`]).
    pub(super) fn accumulate<B: Body<In = (T, T), Out = T>>(&self, threads: Threads) {
        let n_red = self.reduced.len();
        // Shorter runs are scanned in order anyway (`scan_run` works in whole blocks).
        let associative = B::ASSOCIATIVE && n_red >= SCAN_BLOCK;
        let contiguous = self.reduced.a_inner == 1 && self.reduced.out_inner == 1;
        let (regroup, gather) = (associative && contiguous, associative && !contiguous);
        let nthreads = threads.count();
        let n_kept = self.kept.len();
        // Split a run only where each thread gets several blocks of it.
        let split_min = SCAN_SPLIT_MIN.max(nthreads * 4 * SCAN_BLOCK);
        // 16M f32 into `out` on a 2-core AMD EPYC: 9.7-11.1 ms with plain stores, 7.2-8.8 streamed.
        let stream = n_kept * n_red * size_of::<T>() >= STREAM_MIN_BYTES;
        if self.inner && regroup && nthreads > 1 && n_kept < 2 * nthreads && n_red >= split_min {
            self.walk_kept_rows(0..n_kept, |p, j, len| {
                for i in j..j + len {
                    let (a, out) = self.item(p, i);
                    self.scan_split::<B>(a, out, n_red, nthreads, stream);
                }
            });
            return;
        }
        self.walk_kept(threads, true, |a, out| {
            // SAFETY: one axis of `n_red` elements at these strides in both.
            unsafe {
                if regroup {
                    (self.k.scan_run)(a, out, n_red, None, stream);
                } else if gather {
                    self.scan_gathered(a, out, n_red);
                } else {
                    (self.k.scan)(a, self.reduced.a_inner, out, self.reduced.out_inner, n_red);
                }
            }
        });
    }

    /// An associative accumulation of a strided run of `n` elements: chunks gathered into a
    /// buffer, scanned there by [`Kernels::scan_run`] from the previous chunk's carry, and
    /// written out.
    ///
    /// # Safety
    /// `a` and `out` address `n` elements at the reduced axis's strides.
    unsafe fn scan_gathered(&self, a: *const T, out: *mut T, n: usize) {
        let (xs, os, size) = (self.reduced.a_inner, self.reduced.out_inner, size_of::<T>());
        let chunk = 4 * SCAN_BLOCK;
        let mut buf = vec![T::default(); chunk.min(n)];
        let mut carry = None;
        for c in (0..n).step_by(chunk) {
            let m = chunk.min(n - c);
            // SAFETY: elements `c..c + m` of the run, through a buffer of `m` or more.
            unsafe {
                copy_strided(
                    buf.as_mut_ptr() as *mut u8,
                    size as isize,
                    a.wrapping_offset(c as isize * xs) as *const u8,
                    xs * size as isize,
                    size,
                    m,
                );
                // In place: `scan_run` reads each block before it writes it.
                carry = Some((self.k.scan_run)(
                    buf.as_ptr(),
                    buf.as_mut_ptr(),
                    m,
                    carry,
                    false,
                ));
                write_out(out.wrapping_offset(c as isize * os), os, buf.as_ptr(), m);
            }
        }
    }

    /// One long contiguous run `a` accumulated into `out` on `nthreads` threads, a stretch of
    /// [`SCAN_PIECE_BYTES`] per thread at a time: the threads reduce every piece but the last
    /// (reading them into cache), the pieces' carries are chained in order, then each piece is
    /// scanned from its carry (read from cache, written out). The input is read from memory
    /// once, and the grouping depends only on `n`, `nthreads` and the element type. For
    /// floats the carry into a piece is the pairwise total, not the element before it as
    /// scanned, so at a piece boundary a running sum may step by an ulp either way.
    fn scan_split<B: Body<In = (T, T), Out = T>>(
        &self,
        a: *const T,
        out: *mut T,
        n: usize,
        nthreads: usize,
        stream: bool,
    ) {
        let piece = (SCAN_PIECE_BYTES / size_of::<T>().max(1)).next_multiple_of(SCAN_BLOCK);
        let (a, out) = (a as usize, out as usize);
        let at = |base: usize, i: usize| base + i * size_of::<T>();
        let quiet = crate::panic::is_quiet();
        // Run from a worker of the pool: the phases' jobs are then pushed and stolen locally
        // rather than injected from outside and waited for, each time.
        // Quiet as the calling thread: a panic of `f` chaining the carries is reported by the
        // call, not printed by the worker's hook.
        rayon::scope(|_| {
            crate::panic::quiet_if(quiet, || {
                let mut carry: Option<T> = None;
                let mut start = 0;
                while start < n {
                    let len = (piece * nthreads).min(n - start);
                    let per = len.div_ceil(nthreads).next_multiple_of(SCAN_BLOCK);
                    let pieces: Vec<Range<usize>> = (start..start + len)
                        .step_by(per)
                        .map(|s| s..(s + per).min(start + len))
                        .collect();
                    // The totals of every piece but the last, each reduced in `nthreads` parts so that
                    // every thread reads an equal share.
                    let parts: Vec<(usize, Range<usize>)> = pieces[..pieces.len() - 1]
                        .iter()
                        .enumerate()
                        .flat_map(|(i, r)| {
                            let per = r.len().div_ceil(nthreads).next_multiple_of(CHUNK);
                            r.clone()
                                .step_by(per)
                                .map(move |s| (i, s..(s + per).min(r.end)))
                        })
                        .collect();
                    let part_totals: Vec<T> = parts
                        .par_iter()
                        .map(|(_, r)| {
                            crate::panic::quiet_if(quiet, || {
                                // SAFETY: `r` lies inside the run of `n` elements.
                                unsafe { (self.k.reduce)(at(a, r.start) as *const T, r.len()) }
                            })
                        })
                        .collect();
                    // carries[i]: `f` over everything before piece `i`.
                    let mut carries = vec![carry; pieces.len()];
                    let mut c = carry;
                    for ((i, _), t) in parts.iter().zip(part_totals) {
                        c = Some(c.map_or(t, |c| call::<B, T>(c, t)));
                        carries[i + 1] = c;
                    }
                    let lasts: Vec<T> = pieces
                        .par_iter()
                        .zip(carries)
                        .map(|(r, c)| {
                            crate::panic::quiet_if(quiet, || {
                                let (x, o) =
                                    (at(a, r.start) as *const T, at(out, r.start) as *mut T);
                                // SAFETY: `r` lies inside the run; the pieces write disjoint elements.
                                unsafe { (self.k.scan_run)(x, o, r.len(), c, stream) }
                            })
                        })
                        .collect();
                    carry = lasts.last().copied();
                    start += len;
                }
            })
        });
    }

    /// The input and output addresses of element `i` of a kept row.
    fn item(&self, p: &[*mut u8], i: usize) -> (*const T, *mut T) {
        let a = (p[0] as *const T).wrapping_offset(i as isize * self.kept.a_inner);
        let out = (p[1] as *mut T).wrapping_offset(i as isize * self.kept.out_inner);
        (a, out)
    }

    /// `f` over the reduced elements `range` (flat C-order indices of the reduced sub-space)
    /// of the output element whose first input element is at `a`; `range` is not empty.
    fn reduce_item<B: Body<In = (T, T), Out = T>>(&self, a: *const T, range: Range<usize>) -> T {
        let mut acc: Option<T> = None;
        let mut buf: Vec<T> = Vec::new();
        let stride = self.reduced.a_inner;
        let mut push = |v: T| acc = Some(acc.map_or(v, |a| call::<B, T>(a, v)));
        walk_rows(
            &self.reduced.shape,
            &[&self.reduced.a],
            &[a as *mut u8],
            range,
            |p, j, len| {
                let start = (p[0] as *const T).wrapping_offset(j as isize * stride);
                if stride == 1 || len == 1 {
                    // SAFETY: a contiguous run of `len` input elements.
                    push(unsafe { (self.k.reduce)(start, len) });
                    return;
                }
                buf.resize(CHUNK.min(len), T::default());
                for c in (0..len).step_by(CHUNK) {
                    let m = CHUNK.min(len - c);
                    // SAFETY: `m` input elements at `stride` into the buffer of `m` or more.
                    unsafe {
                        copy_strided(
                            buf.as_mut_ptr() as *mut u8,
                            size_of::<T>() as isize,
                            start.wrapping_offset(c as isize * stride) as *const u8,
                            stride * size_of::<T>() as isize,
                            size_of::<T>(),
                            m,
                        );
                        push((self.k.reduce)(buf.as_ptr(), m));
                    }
                }
            },
        );
        acc.expect("a non-empty range")
    }

    /// Elements `j..j + len` of a kept row (its first element at `p`): chunks of the row are
    /// accumulated in `acc` while the input rows of every reduced index stream into them,
    /// then written out (with `each`, after every reduced index: an accumulation).
    /// Only the reduced indices `red` are streamed; with `sink`, the result goes there (the
    /// row's `len` elements, contiguous) instead of to the output.
    #[allow(clippy::too_many_arguments)]
    fn stream_row(
        &self,
        p: &[*mut u8],
        j: usize,
        len: usize,
        red: Range<usize>,
        acc: &mut Vec<T>,
        each: bool,
        mut sink: Option<&mut [T]>,
    ) {
        let size = size_of::<T>() as isize;
        let (ka, ko) = (self.kept.a_inner, self.kept.out_inner);
        let r_inner_a = self.reduced.a_inner;
        let r_inner_out = self.reduced.out_inner;
        acc.resize(ROW_CHUNK.min(len), T::default());
        let mut gathered: Vec<T> = Vec::new();
        // Contiguous input rows wait here to be combined four at a time.
        let mut batch: Vec<*const T> = Vec::with_capacity(4);
        let combine = |acc: &mut Vec<T>, rows: &[*const T], first: &mut bool, m: usize| {
            // SAFETY: `acc` and every row hold `m` elements.
            unsafe {
                let rest = if *first {
                    std::ptr::copy_nonoverlapping(rows[0], acc.as_mut_ptr(), m);
                    *first = false;
                    &rows[1..]
                } else {
                    rows
                };
                (self.k.combine)(acc.as_mut_ptr(), rest, m);
            }
        };
        for c in (j..j + len).step_by(ROW_CHUNK) {
            let m = ROW_CHUNK.min(j + len - c);
            let a0 = (p[0] as *const T).wrapping_offset(c as isize * ka);
            let o0 = (p[1] as *mut T).wrapping_offset(c as isize * ko);
            let mut first = true;
            walk_rows(
                &self.reduced.shape,
                &[&self.reduced.a, &self.reduced.out],
                &[a0 as *mut u8, o0 as *mut u8],
                red.clone(),
                |q, rj, rlen| {
                    for r in rj..rj + rlen {
                        let src = (q[0] as *const T).wrapping_offset(r as isize * r_inner_a);
                        if ka == 1 && !each {
                            batch.push(src);
                            if batch.len() == 4 {
                                combine(acc, &batch, &mut first, m);
                                batch.clear();
                            }
                            continue;
                        }
                        let src = if ka == 1 {
                            src
                        } else {
                            gathered.resize(m, T::default());
                            // SAFETY: `m` input elements at stride `ka`.
                            unsafe {
                                copy_strided(
                                    gathered.as_mut_ptr() as *mut u8,
                                    size,
                                    src as *const u8,
                                    ka * size,
                                    size_of::<T>(),
                                    m,
                                )
                            };
                            gathered.as_ptr()
                        };
                        combine(acc, &[src], &mut first, m);
                        if each {
                            let dst = (q[1] as *mut T).wrapping_offset(r as isize * r_inner_out);
                            // SAFETY: `m` output elements at stride `ko`.
                            unsafe { write_out(dst, ko, acc.as_ptr(), m) };
                        }
                    }
                },
            );
            if !batch.is_empty() {
                combine(acc, &batch, &mut first, m);
                batch.clear();
            }
            match sink.as_deref_mut() {
                Some(sink) => sink[c - j..c - j + m].copy_from_slice(&acc[..m]),
                // SAFETY: `m` output elements at stride `ko`.
                None if !each => unsafe { write_out(o0, ko, acc.as_ptr(), m) },
                None => {}
            }
        }
    }
}

/// `m` elements of `src` written at element stride `stride` from `dst`.
///
/// # Safety
/// `dst` addresses `m` writable elements at that stride.
unsafe fn write_out<T: Copy>(dst: *mut T, stride: isize, src: *const T, m: usize) {
    // SAFETY: the caller's contract.
    unsafe {
        if stride == 1 {
            std::ptr::copy_nonoverlapping(src, dst, m);
        } else {
            copy_strided(
                dst as *mut u8,
                stride * size_of::<T>() as isize,
                src as *const u8,
                size_of::<T>() as isize,
                size_of::<T>(),
                m,
            );
        }
    }
}
