//! The ufunc methods of a `#[vectorize]` function `f(T, T) -> T` on the `cuda` target: device
//! arrays and views in and out (`f::reduce_device`, ..), and the host arrays of
//! `f::reduce_on(Target::Cuda, ..)` (copied in, reduced, copied back). The axes are those the
//! CPU engine walks (ordered and merged, `split_axes`), the empty-axis rule the CPU's
//! (`empty_reduction`); the kernels are the `reduce` skeleton's:
//!
//! - many reduced elements for few outputs (a full reduction, say): two passes, blocks over
//!   chunks of each output's elements into partials, then a warp per output over its partials;
//! - otherwise an inner reduction (reduced axis of smallest stride): a warp per output;
//! - an outer one: a thread per output walking its rows (coalesced along the kept axis), as
//!   for any reduction of a function that is not reorderable (folded in order, as NumPy).
//!
//! `accumulate` runs a thread per output row, in order, or, for a function declared
//! `associative = true` with a few long rows, three passes over chunks of each row: the
//! chunks' totals, their running values, each chunk scanned from the value before it (every
//! pair still combined left then right, so the function need not commute).
//!
//! Float results differ from the CPU's only by the grouping of the operations: for a sum of
//! `n` elements both are within `n * eps * sum(|x|)` of the exact sum, so they differ by at
//! most twice that. That worst case grows with `n` and says little for large sums: in the
//! two-pass reduction each thread's running sum covers about `n / (blocks * 256)` elements and
//! the rest is a tree, so a sum of 10^7 float32 comes within 1e-5 of the exact one (tested).

use super::args::{Arg, Buffer, LaunchShape};
use super::array::{wrap, DeviceArray};
use super::call::{kernel_of, launch_inputs, queue_of};
use super::host::upload_host;
use super::kernel::{CudaKernel, DeviceKernel};
use super::launch::{launch_elementwise, queue_with_status, LaunchInput};
use super::operand::DeviceOperand;
use super::queue::{DeviceBuffer, Queue};
use super::stream::Stream;
use crate::body::Body;
use crate::element::Element;
use crate::error::Result;
use crate::operand::RawOperand;
use crate::reduce::{
    at_points, empty_reduction, full_strides, normalize, out_keepdims, outer_leading, reduced_axes,
    reduced_shape, reorderable, split_axes, AtIndices, AtPoints, Axes, Axis,
};
use crate::shape::{byte_size, c_strides, scatter_c_order};
use crate::target::Target;
use ndarray::{Dimension, IxDyn};

/// What a device reduction may do with `f`'s calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fold {
    /// Fold each output's elements strictly in order (`f` is not reorderable).
    InOrder,
    /// Regroup them; `inner`: the reduced elements are the innermost, so a warp per output
    /// reads them coalesced.
    Regroup { inner: bool },
}

/// The functions the device methods take: `f(T, T) -> T` with a CUDA kernel.
pub trait DeviceBinaryOp<T: Element>: Body<In = (T, T), Out = T> + DeviceKernel {}

impl<T: Element, B: Body<In = (T, T), Out = T> + DeviceKernel> DeviceBinaryOp<T> for B {}

/// Threads per block of the method kernels (a multiple of the warp size).
const THREADS: u32 = 256;
/// Lanes of a warp on the GPU: one warp per output element in `_reduce_warps`.
const WARP: usize = 32;
/// Reductions of at least this many elements per output...
const BLOCKS_MIN_RED: usize = 8192;
/// ...for at most this many outputs take two passes: blocks over chunks, then warps.
const BLOCKS_MAX_OUT: usize = 2048;
/// Blocks of the first pass, about (a few per multiprocessor, each a long run).
const BLOCKS_TASKS: usize = 2048;
/// An accumulation along an outer axis takes the blocked scan only for this many rows or
/// fewer (a thread per row would leave the device idle); more rows are a thread each.
const SCAN_OUTER_MAX_ROWS: usize = 64;

/// How a pass over blocks cuts each of `n_out` runs of `n_red` elements: into `parts` chunks
/// of `chunk` elements (the last shorter), about [`BLOCKS_TASKS`] in all, each at least
/// [`BLOCKS_MIN_RED`] long.
fn chunks(n_out: usize, n_red: usize) -> (usize, usize) {
    let chunk = n_red.div_ceil((BLOCKS_TASKS / n_out).clamp(1, n_red / BLOCKS_MIN_RED));
    (n_red.div_ceil(chunk), chunk)
}

/// A kernel of the methods and where it runs.
struct Methods<'q> {
    queue: &'q Queue,
    function: &'static str,
    kernel: CudaKernel,
}

impl Methods<'_> {
    /// Runs `queued`, which queues launches with the one status word it is given, then (on a
    /// waiting queue) waits once for them all.
    fn waited(&self, queued: impl FnOnce(&mut Buffer) -> Result<()>) -> Result<()> {
        let mut status = self.queue.status_word()?;
        queued(&mut status)?;
        self.queue
            .finish_launch(self.function, self.kernel.panics, status)
    }

    /// Queues `entry` over `items` with the status word `status`, without waiting.
    fn queue_entry(
        &self,
        entry: &str,
        items: usize,
        cooperative: bool,
        args: Vec<Arg<'_>>,
        status: &mut Buffer,
    ) -> Result<()> {
        let entry = format!("{}_{entry}", self.kernel.name);
        let shape = LaunchShape {
            items,
            threads: THREADS,
            cooperative,
        };
        queue_with_status(self.queue, &self.kernel, &entry, shape, args, status)
    }

    /// `g` of the skeleton: the kept and the reduced axes.
    fn geometry(&self, kept: &[Axis], red: &[Axis]) -> Result<Buffer> {
        let mut g = vec![kept.len() as i64, red.len() as i64];
        for axes in [kept, red] {
            g.extend(axes.iter().map(|x| x.len as i64));
            g.extend(axes.iter().map(|x| x.a as i64));
            g.extend(axes.iter().map(|x| x.out as i64));
        }
        self.queue.upload_i64(&g)
    }

    /// `f` over `red` of `input` for each element of `kept`, into `out` (both non-empty):
    /// its passes queued with the status word `status`. Only `Fold::Regroup` splits the
    /// reduced elements; `Fold::InOrder` folds them by a thread per output.
    fn reduce<T: Element>(
        &self,
        input: (&Buffer, usize),
        kept: &[Axis],
        red: &[Axis],
        fold: Fold,
        out: &mut Buffer,
        status: &mut Buffer,
    ) -> Result<()> {
        let reorderable = fold != Fold::InOrder;
        let n_out: usize = kept.iter().map(|x| x.len).product();
        let n_red: usize = red.iter().map(|x| x.len).product();
        let sizes = || vec![Arg::I64(n_out as i64), Arg::I64(n_red as i64)];
        if reorderable && n_red >= BLOCKS_MIN_RED && n_out <= BLOCKS_MAX_OUT {
            let (parts, chunk) = chunks(n_out, n_red);
            let mut partials = self.queue.alloc(n_out * parts * size_of::<T>())?;
            let g = self.geometry(kept, red)?;
            let mut args = sizes();
            args.extend([Arg::I64(parts as i64), Arg::I64(chunk as i64)]);
            args.extend([Arg::In(&g, 0), Arg::In(input.0, input.1)]);
            args.push(Arg::Out(&mut partials));
            self.queue_entry(
                "reduce_blocks",
                n_out * parts * THREADS as usize,
                true,
                args,
                status,
            )?;
            // Each output's partials are contiguous, outputs in the order of `kept`.
            let lens: Vec<usize> = kept.iter().map(|x| x.len).collect();
            let kept: Vec<Axis> = kept
                .iter()
                .zip(c_strides(&lens))
                .map(|(x, s)| Axis {
                    a: s * parts as isize,
                    ..*x
                })
                .collect();
            let red = [Axis {
                len: parts,
                a: 1,
                out: 0,
            }];
            let fold = Fold::Regroup { inner: true };
            return self.reduce::<T>((&partials, 0), &kept, &red, fold, out, status);
        }
        let g = self.geometry(kept, red)?;
        let mut args = sizes();
        if fold == (Fold::Regroup { inner: true }) {
            args.extend([Arg::In(&g, 0), Arg::In(input.0, input.1), Arg::Out(out)]);
            self.queue_entry("reduce_warps", n_out * WARP, true, args, status)
        } else {
            args.push(Arg::I32(0));
            args.extend([Arg::In(&g, 0), Arg::In(input.0, input.1), Arg::Out(out)]);
            self.queue_entry("reduce_cols", n_out, false, args, status)
        }
    }

    /// `B` reduced over `reduced` of `input` into `out`, device memory of the kept axes in C
    /// order.
    fn reduce_into<B: Body<In = (T, T), Out = T>, T: Element>(
        &self,
        input: &LaunchInput<'_>,
        reduced: &[bool],
        out: &mut Buffer,
    ) -> Result<()> {
        let shape = input.shape;
        let kept_shape = reduced_shape(shape, reduced, false);
        let n_out: usize = kept_shape.iter().product();
        // An empty reduced axis needs an identity even for an empty result, as in NumPy.
        let empty = empty_reduction::<B, T>(shape, reduced)?;
        if n_out == 0 {
            return Ok(());
        }
        if let Some(identity) = empty {
            let fill = vec![identity; n_out];
            // SAFETY: `n_out` plain elements.
            let bytes = unsafe {
                std::slice::from_raw_parts(fill.as_ptr() as *const u8, n_out * size_of::<T>())
            };
            return self.queue.copy_within(&self.queue.upload(bytes)?, out);
        }
        let out_strides = full_strides(reduced, &c_strides(&kept_shape), false);
        let specs: Vec<_> = (0..shape.len())
            .map(|i| (shape[i], input.strides[i], out_strides[i], reduced[i]))
            .collect();
        let (kept, red, inner) = split_axes(&specs);
        let fold = if reorderable::<B, T>() {
            Fold::Regroup { inner }
        } else {
            Fold::InOrder
        };
        let input = (input.mem, input.offset);
        self.waited(|status| self.reduce::<T>(input, &kept, &red, fold, out, status))
    }

    /// `a[p_k, ..] = f(a[p_k, ..], b[k, ..])` for each point `p_k` of `at` in order, `a` in C
    /// order of `shape`, `b` at `at`'s offsets and strides. The points are grouped by place
    /// (a stable sort, so each place keeps its points' order): a thread per (place, element
    /// of the sub-array) applies its place's points in order, so distinct places run side by
    /// side and a histogram is not one thread's work.
    fn at(
        &self,
        a: &mut Buffer,
        shape: &[usize],
        (at, indices): (&AtPoints, &impl AtIndices),
        b: &LaunchInput<'_>,
    ) -> Result<()> {
        let a_strides = c_strides(shape);
        let specs: Vec<_> = (at.sub_axes.iter().zip(&at.b_sub_strides))
            .map(|(&i, &b)| (shape[i], a_strides[i], b, false))
            .collect();
        let (sub, _, _) = split_axes(&specs);
        let n_sub: usize = sub.iter().map(|x| x.len).product();
        if at.count == 0 || n_sub == 0 {
            return Ok(());
        }
        let (offsets, b_offsets) = at.offsets(indices)?;
        let (places, order) = group_points(&offsets, n_sub);
        let n_places = places.len() - 1;
        // `[starts of each place's points (one more than places) | each place's offset | the
        // points' offsets in `b`, in place order]`, one upload.
        let mut table: Vec<i64> = Vec::with_capacity(2 * n_places + 1 + order.len());
        table.extend(places.iter().map(|&(start, _)| start as i64));
        table.extend(places[..n_places].iter().map(|&(_, offset)| offset as i64));
        table.extend(order.iter().map(|&k| b_offsets[k] as i64));
        let table = self.queue.upload_i64(&table)?;
        let g = self.geometry(&sub, &[])?;
        let args = vec![
            Arg::I64(n_sub as i64),
            Arg::I64(n_places as i64),
            Arg::In(&table, 0),
            Arg::In(&g, 0),
            Arg::Out(a),
            Arg::In(b.mem, b.offset),
        ];
        let items = n_places * n_sub;
        self.waited(|status| self.queue_entry("at", items, false, args, status))
    }

    /// The running `f` along `axis` of `input` into `out`, device memory of its shape in C
    /// order: a thread per output row in order, or, for an `associative` `f` and a few long
    /// rows, three passes over chunks of each row (their totals, the totals' running values,
    /// each chunk scanned from the value before it), every pair combined in order.
    fn accumulate<T: Element>(
        &self,
        input: &LaunchInput<'_>,
        axis: usize,
        associative: bool,
        out: &mut Buffer,
    ) -> Result<()> {
        let shape = input.shape;
        if shape.contains(&0) {
            return Ok(());
        }
        let out_strides = c_strides(shape);
        let specs: Vec<_> = (0..shape.len())
            .map(|i| (shape[i], input.strides[i], out_strides[i], i == axis))
            .collect();
        let (kept, red, inner) = split_axes(&specs);
        let n_out: usize = kept.iter().map(|x| x.len).product();
        let n_red: usize = red.iter().map(|x| x.len).product();
        let g = self.geometry(&kept, &red)?;
        let sizes = || vec![Arg::I64(n_out as i64), Arg::I64(n_red as i64)];
        // Blocks walk one row each: uncoalesced along an outer axis, where a thread a row reads
        // adjacent rows side by side, unless there are too few rows to fill the device.
        let blocked = associative
            && n_red >= BLOCKS_MIN_RED
            && n_out <= BLOCKS_MAX_OUT
            && (inner || n_out <= SCAN_OUTER_MAX_ROWS);
        if !blocked {
            let mut args = sizes();
            args.extend([Arg::I32(1), Arg::In(&g, 0)]);
            args.extend([Arg::In(input.mem, input.offset), Arg::Out(out)]);
            return self
                .waited(|status| self.queue_entry("reduce_cols", n_out, false, args, status));
        }
        let (parts, chunk) = chunks(n_out, n_red);
        let tasks = n_out * parts;
        let mut carries = self.queue.alloc(tasks * size_of::<T>())?;
        // The chunks' totals, each row's contiguous, and the geometry of their running values
        // along the rows; one chunk a row (more than 1024 rows) has no carries to find.
        let mut totals = match parts {
            1 => None,
            _ => {
                let rows = Axis {
                    len: n_out,
                    a: parts as isize,
                    out: parts as isize,
                };
                let along = Axis {
                    len: parts,
                    a: 1,
                    out: 1,
                };
                let g_totals = self.geometry(&[rows], &[along])?;
                Some((self.queue.alloc(tasks * size_of::<T>())?, g_totals))
            }
        };
        let chunked = || {
            let mut args = sizes();
            args.extend([
                Arg::I64(parts as i64),
                Arg::I64(chunk as i64),
                Arg::In(&g, 0),
            ]);
            args.push(Arg::In(input.mem, input.offset));
            args
        };
        self.waited(|status| {
            if let Some((totals, g_totals)) = &mut totals {
                let mut args = chunked();
                args.push(Arg::Out(totals));
                self.queue_entry("chunk_totals", tasks * THREADS as usize, true, args, status)?;
                let args = vec![
                    Arg::I64(n_out as i64),
                    Arg::I64(parts as i64),
                    Arg::I32(1),
                    Arg::In(g_totals, 0),
                    Arg::In(totals, 0),
                    Arg::Out(&mut carries),
                ];
                self.queue_entry("reduce_cols", n_out, false, args, status)?;
            }
            let mut args = chunked();
            args.extend([Arg::In(&carries, 0), Arg::Out(out)]);
            self.queue_entry("scan_blocks", tasks * THREADS as usize, true, args, status)
        })
    }
}

/// Runs `f` with the methods of `B` on `stream` (or the default queue) and `a` as a launch
/// input (a host operand copied in for the call).
fn with_input<B, T, A, R>(
    compiled: &'static [Target],
    stream: Option<&Stream>,
    a: A,
    f: impl FnOnce(&Methods<'_>, &LaunchInput<'_>) -> Result<R>,
) -> Result<R>
where
    B: DeviceKernel + Body,
    T: Element,
    A: DeviceOperand<T>,
{
    let m = Methods {
        queue: queue_of(stream)?,
        function: B::NAME,
        kernel: kernel_of::<B>(B::NAME, compiled)?,
    };
    let raw = [a.raw_device()];
    let mut uploads = Vec::new();
    let ins = launch_inputs(m.queue, B::NAME, &raw, &[size_of::<T>()], &mut uploads)?;
    f(&m, &ins[0])
}

/// `f::reduce_device` (and `_keepdims`): `B` reduced over `axes` of a device (or host)
/// operand, left on the device.
pub fn reduce_device<B: DeviceBinaryOp<T>, T: Element, A: DeviceOperand<T>>(
    compiled: &'static [Target],
    stream: Option<&Stream>,
    a: A,
    axes: Axes,
    keepdims: bool,
) -> Result<DeviceArray<T, IxDyn>> {
    with_input::<B, T, A, _>(compiled, stream, a, |m, input| {
        let reduced = reduced_axes::<B, T>(&axes, input.shape.len())?;
        let shape = reduced_shape(input.shape, &reduced, keepdims);
        let mut out = m.queue.alloc(byte_size(&shape, size_of::<T>())?)?;
        m.reduce_into::<B, T>(input, &reduced, &mut out)?;
        Ok(wrap(DeviceBuffer(out), &IxDyn(&shape)))
    })
}

/// `f::reduce_out_device`: into a device array of the reduced shape, with or without the
/// reduced axes kept as length 1. A panic of `f` is an `Err` after every pass has run, so
/// `out` may have been written.
pub fn reduce_out_device<B: DeviceBinaryOp<T>, T: Element, A, D>(
    compiled: &'static [Target],
    stream: Option<&Stream>,
    a: A,
    axes: Axes,
    out: &mut DeviceArray<T, D>,
) -> Result<()>
where
    A: DeviceOperand<T>,
    D: Dimension,
{
    with_input::<B, T, A, _>(compiled, stream, a, |m, input| {
        let reduced = reduced_axes::<B, T>(&axes, input.shape.len())?;
        out_keepdims(B::NAME, input.shape, &reduced, out.dim.slice())?;
        m.reduce_into::<B, T>(input, &reduced, &mut out.buf.0)
    })
}

/// `f::accumulate_device`: the running `B` along `axis` of a device (or host) operand, left
/// on the device.
pub fn accumulate_device<B: DeviceBinaryOp<T>, T: Element, A: DeviceOperand<T>>(
    compiled: &'static [Target],
    stream: Option<&Stream>,
    a: A,
    axis: isize,
) -> Result<DeviceArray<T, A::Dim>> {
    with_input::<B, T, A, _>(compiled, stream, a, |m, input| {
        let shape = input.shape;
        let axis = normalize(B::NAME, "accumulate", axis, shape.len())?;
        let mut out = m.queue.alloc(byte_size(shape, size_of::<T>())?)?;
        m.accumulate::<T>(input, axis, B::ASSOCIATIVE, &mut out)?;
        let mut dim = A::Dim::zeros(shape.len());
        dim.slice_mut().copy_from_slice(shape);
        Ok(wrap(DeviceBuffer(out), &dim))
    })
}

/// `f::outer_device`: `B` of every pair of two device (or host) operands, of shape
/// `a.shape + b.shape`, left on the device: the element-wise kernel over `a` broadcast along
/// `b`'s axes and `b` along `a`'s.
pub fn outer_device<B: DeviceBinaryOp<T>, T: Element, A, Bo>(
    compiled: &'static [Target],
    stream: Option<&Stream>,
    a: A,
    b: Bo,
) -> Result<DeviceArray<T, IxDyn>>
where
    A: DeviceOperand<T>,
    Bo: DeviceOperand<T>,
{
    let kernel = kernel_of::<B>(B::NAME, compiled)?;
    let queue = queue_of(stream)?;
    let raw = [a.raw_device(), b.raw_device()];
    let size = size_of::<T>();
    let mut uploads = Vec::new();
    let mut ins = launch_inputs(queue, B::NAME, &raw, &[size; 2], &mut uploads)?;
    let (sa, sb) = (ins[0].shape, ins[1].shape);
    let shape: Vec<usize> = sa.iter().chain(sb).copied().collect();
    let (a_shape, a_strides) = outer_leading(sa, &ins[0].strides, sb.len());
    ins[0].shape = &a_shape;
    ins[0].strides = a_strides.into();
    let mut out = queue.alloc(byte_size(&shape, size)?)?;
    launch_elementwise(queue, B::NAME, &kernel, &ins, &mut [&mut out], &shape)?;
    Ok(wrap(DeviceBuffer(out), &IxDyn(&shape)))
}

/// The distinct offsets of `offsets` in increasing order, each with the index of its first
/// point in `order` (and a last entry `(offsets.len(), 0)`), and `order`: the points sorted
/// by offset, stably, so each place keeps its points in their given order. Offsets that are
/// multiples of `unit` (the sub-array's size, as places in a C-order array are) over a range
/// not much larger than the points are bucketed in one pass (a histogram of millions of
/// points); others are sorted as (offset, index) pairs.
fn group_points(offsets: &[isize], unit: usize) -> (Vec<(usize, isize)>, Vec<usize>) {
    let n = offsets.len();
    let unit = unit.max(1) as isize;
    let buckets = offsets.iter().max().map_or(0, |&m| m / unit + 1) as usize;
    let bucketed = offsets.iter().all(|&o| o >= 0 && o % unit == 0) && buckets <= 4 * n + 65536;
    let order: Vec<usize> = if bucketed {
        let mut next = vec![0usize; buckets + 1];
        for &o in offsets {
            next[(o / unit) as usize + 1] += 1;
        }
        for b in 1..=buckets {
            next[b] += next[b - 1];
        }
        let mut order = vec![0usize; n];
        for (k, &o) in offsets.iter().enumerate() {
            let slot = &mut next[(o / unit) as usize];
            order[*slot] = k;
            *slot += 1;
        }
        order
    } else {
        let mut pairs: Vec<(isize, usize)> = offsets.iter().copied().zip(0..).collect();
        pairs.sort_unstable();
        pairs.into_iter().map(|(_, k)| k).collect()
    };
    let mut places = Vec::new();
    for (i, &k) in order.iter().enumerate() {
        if i == 0 || offsets[order[i - 1]] != offsets[k] {
            places.push((i, offsets[k]));
        }
    }
    places.push((n, 0));
    (places, order)
}

/// `f::at_device`: in place on a device array, unbuffered (a repeated point is applied
/// repeatedly, in order): a thread per (distinct place, element of the indexed sub-array)
/// walks that place's points in order. Every index is checked before `a` is touched.
pub fn at_device<B: DeviceBinaryOp<T>, T: Element, D: Dimension, X, Bo>(
    compiled: &'static [Target],
    a: &mut DeviceArray<T, D>,
    indices: X,
    b: Bo,
) -> Result<()>
where
    X: AtIndices,
    Bo: DeviceOperand<T>,
{
    with_input::<B, T, Bo, _>(compiled, None, b, |m, input| {
        let shape = a.dim.slice().to_vec();
        let strides = c_strides(&shape);
        let at = at_points(
            B::NAME,
            &shape,
            &strides,
            &indices,
            input.shape,
            &input.strides,
        )?;
        m.at(&mut a.buf.0, &shape, (&at, &indices), input)
    })
}

/// Runs `f` on the default queue with host `a` copied in and device memory for an output of
/// `out`'s shape, then copies that back into `out` (address, shape, element strides).
fn on_host<B: Body, T: Element>(
    kernel: &CudaKernel,
    a: RawOperand<'_>,
    out: (*mut T, &[usize], &[isize]),
    f: impl FnOnce(&Methods<'_>, &LaunchInput<'_>, &mut Buffer) -> Result<()>,
) -> Result<()> {
    let (out_ptr, out_shape, out_strides) = out;
    let m = Methods {
        queue: Queue::default_queue()?,
        function: B::NAME,
        kernel: *kernel,
    };
    let size = size_of::<T>();
    let bytes = byte_size(out_shape, size)?;
    let mem = upload_host(m.queue, &a, size)?;
    let input = LaunchInput {
        mem: &mem,
        offset: 0,
        shape: a.shape,
        strides: c_strides(a.shape),
    };
    let mut dev = m.queue.alloc(bytes)?;
    f(&m, &input, &mut dev)?;
    let back = m.queue.download(&dev)?;
    // SAFETY: `out` addresses writable elements of `out_shape` at `out_strides`; `back` holds
    // them in C order.
    unsafe {
        scatter_c_order(
            &back[..bytes],
            out_ptr as *mut u8,
            out_shape,
            out_strides,
            size,
        )
    };
    Ok(())
}

/// `B` reduced over `reduced` of host `a` on the device, into host memory at `out` (address,
/// the kept axes' shape and element strides).
pub(crate) fn reduce_host<B: Body<In = (T, T), Out = T>, T: Element>(
    kernel: &CudaKernel,
    a: RawOperand<'_>,
    reduced: &[bool],
    out: (*mut T, &[usize], &[isize]),
) -> Result<()> {
    if out.1.contains(&0) {
        // Nothing to write, but still the empty-axis rule, as on the CPU.
        return empty_reduction::<B, T>(a.shape, reduced).map(drop);
    }
    on_host::<B, T>(kernel, a, out, |m, input, dev| {
        m.reduce_into::<B, T>(input, reduced, dev)
    })
}

/// The running `B` along `axis` of host `a` on the device, into `out`: the address of an
/// array of `a`'s shape and its strides (elements).
pub(crate) fn accumulate_host<B: Body<In = (T, T), Out = T>, T: Element>(
    kernel: &CudaKernel,
    a: RawOperand<'_>,
    axis: usize,
    out: (*mut T, &[isize]),
) -> Result<()> {
    if a.shape.contains(&0) {
        return Ok(());
    }
    on_host::<B, T>(kernel, a, (out.0, a.shape, out.1), |m, input, dev| {
        m.accumulate::<T>(input, axis, B::ASSOCIATIVE, dev)
    })
}

#[cfg(test)]
mod tests {
    use super::group_points;

    #[test]
    fn points_group_by_place_in_their_order() {
        // Sorted as pairs (negative offsets, or too wide a range), and bucketed (multiples of
        // the unit): the same groups, each place's points in their given order.
        let negative = ([0, 2, 3, 6], [1, 4, 3, 0, 2, 5]);
        let positive = ([0, 1, 3, 6], [3, 1, 4, 0, 2, 5]);
        for (offsets, unit, (starts, want)) in [
            (vec![8, -4, 8, 0, -4, 8], 4, negative),
            (vec![8, 4, 8, 0, 4, 8], 4, positive),
            (vec![8, 4, 8, 0, 4, 8], 1, positive),
            (vec![8 << 40, 4, 8 << 40, 0, 4, 8 << 40], 4, positive),
        ] {
            let (places, order) = group_points(&offsets, unit);
            let got: Vec<usize> = places.iter().map(|p| p.0).collect();
            assert_eq!(got, starts, "{offsets:?}");
            assert_eq!(order, want, "{offsets:?}");
            let offsets_of: Vec<isize> = places[..3].iter().map(|p| p.1).collect();
            let firsts: Vec<isize> = starts[..3].iter().map(|&i| offsets[order[i]]).collect();
            assert_eq!(offsets_of, firsts, "{offsets:?}");
        }
        let (places, order) = group_points(&[5], 5);
        assert_eq!((places, order), (vec![(0, 5), (1, 0)], vec![0]));
    }
}
