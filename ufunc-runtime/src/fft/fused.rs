//! A real convolution's transforms fused around the spectrum product.
//!
//! The plain route transforms both inputs completely, multiplies the spectra, transforms the
//! product back and crops it: each full spectrum is written and read several times, and the
//! padded result is copied into the window. Here the last forward pass of both inputs, the
//! product and the first inverse pass run on one block of lanes at a time in cache (one
//! pass over memory instead of five), the inverse writes only the points of the window, and
//! the last pass writes the result directly. Over one axis the whole convolution of a lane
//! (two real transforms, the product, the inverse) happens in cache.

use super::pass::{self, drive, fit, gather_block, lane_pitch, work_of, LaneSpace, Lanes, Shared};
use super::pass::{Workspace, COLUMN_BLOCK};
use super::{FftOptions, FftPlan, FftReal, Norm, Pass, PassKind};
use crate::error::Result;
use crate::parallel::Threads;
use crate::shape::Strides;
use ndarray::{ArrayD, ArrayViewD, Axis, IxDyn, Slice};
use num_complex::Complex;
use realfft::{ComplexToReal, RealToComplex};
use rustfft::Fft;

/// The convolution of `a` and `b` along `axes` (each input's length there, zero-padded to
/// `fshape`), the other axes broadcast, keeping `window` (start, length per axis of the full
/// result): SciPy's `fftconvolve` of real inputs, after its shape rules.
pub(crate) fn real_convolution<T: FftReal>(
    a: ArrayViewD<'_, T>,
    b: ArrayViewD<'_, T>,
    axes: &[usize],
    fshape: &[usize],
    window: &[(usize, usize)],
    options: &FftOptions,
) -> Result<ArrayD<T>>
where
    Complex<T>: crate::Element,
{
    let threads = options.threads()?;
    // The axes not convolved are independent point by point: keep only the window there.
    let narrow = |x: &mut ArrayViewD<'_, T>| {
        x.slice_each_axis_inplace(|d| {
            let ax = d.axis.index();
            let (start, len) = window[ax];
            if axes.contains(&ax) || d.len == 1 {
                Slice::from(..)
            } else {
                Slice::from(start..start + len)
            }
        });
    };
    let (mut a, mut b) = (a, b);
    narrow(&mut a);
    narrow(&mut b);
    let out_shape: Vec<usize> = window.iter().map(|w| w.1).collect();
    let mut out = crate::alloc::try_uninit::<T, IxDyn>(&IxDyn(&out_shape))?;
    let out_strides = Strides::from_slice(out.strides());
    let out_ptr = out.as_mut_ptr() as *mut T;
    let scale = T::of_f64(1.0 / fshape.iter().map(|&n| n as f64).product::<f64>());
    let workspace = Workspace::new();
    let (first, last) = (axes[0], axes[axes.len() - 1]);
    if axes.len() == 1 {
        let n = fshape[0];
        let forward = super::cache::real_forward::<T>(n)?;
        let inverse = super::cache::real_inverse::<T>(n)?;
        let dst = Lanes {
            ptr: out_ptr,
            shape: &out_shape,
            strides: &out_strides,
        };
        let (sa, sb) = (
            broadcast_strides(a.shape(), a.strides(), first),
            broadcast_strides(b.shape(), b.strides(), first),
        );
        let lanes = Lanes {
            ptr: (a.as_ptr(), b.as_ptr()),
            shape: &out_shape,
            strides: &sa,
        };
        // SAFETY: `a` and `b` are valid views; `out` is fresh, and the pass writes every
        // element of its window of each lane (the whole of `out`).
        unsafe {
            real_lanes(
                (&*forward, &*inverse),
                (first, n, window[first]),
                scale,
                (lanes, (a.shape()[first], b.shape()[first]), &sb),
                dst,
                threads,
                &workspace,
            );
            return Ok(out.assume_init());
        }
    }
    // The forward transforms of both inputs along every axis but the first.
    let rest = options
        .clone()
        .axes(&axes[1..])
        .s(&fshape[1..])
        .norm(Norm::Backward);
    let plan_a = FftPlan::<T, Complex<T>>::rfftn(a.shape(), &rest)?;
    let sb = FftPlan::<T, Complex<T>>::rfftn(b.shape(), &rest)?.execute(&b)?;
    // The product, transformed back along the first axis: the window's points there.
    let mut pshape = out_shape.clone();
    for (&ax, &n) in axes.iter().zip(fshape).skip(1) {
        pshape[ax] = n;
    }
    pshape[last] = fshape[fshape.len() - 1] / 2 + 1;
    // Where the first axis is the outermost and the first input's spectrum has the product's
    // shape on the other axes, the two share one buffer: each block of lanes is read before
    // it is written, and a lane is at the same place in both (one fresh array fewer to fault
    // in and zero).
    let a_rows = a.shape()[first];
    let shared = first == 0 && plan_a.output_shape()[1..] == pshape[1..];
    let mut buffer_shape = pshape.clone();
    if shared {
        buffer_shape[0] = pshape[0].max(a_rows);
    }
    let mut buffer = crate::alloc::try_zeroed::<Complex<T>, IxDyn>(&IxDyn(&buffer_shape))?;
    let separate = if shared {
        let mut rows = buffer.slice_axis_mut(Axis(0), Slice::from(..a_rows));
        plan_a.execute_into(&a, &mut rows)?;
        None
    } else {
        Some(plan_a.execute(&a)?)
    };
    let pstrides = Strides::from_slice(buffer.strides());
    // Both the first spectrum's lanes (where `shared`) and the product's from one pointer.
    let base = buffer.as_mut_ptr();
    let (sa_ptr, ab) = match &separate {
        Some(sa) => (
            sa.as_ptr(),
            broadcast_strides(sa.shape(), sa.strides(), first),
        ),
        None => (base as *const Complex<T>, pstrides.clone()),
    };
    let bb = broadcast_strides(sb.shape(), sb.strides(), first);
    let n = fshape[0];
    let forward = super::cache::complex::<T>(n, rustfft::FftDirection::Forward)?;
    let inverse = super::cache::complex::<T>(n, rustfft::FftDirection::Inverse)?;
    // SAFETY: the spectra are valid arrays; the product's lanes (the first `pshape[0]` rows of
    // `buffer`) are written only by this pass, each block after it has read its lanes of the
    // first spectrum, which is `buffer` itself where `shared` and is otherwise distinct.
    unsafe {
        complex_lanes(
            (&*forward, &*inverse),
            (first, n, window[first]),
            scale,
            (
                Lanes {
                    ptr: (sa_ptr, sb.as_ptr()),
                    shape: &pshape,
                    strides: &ab,
                },
                (a_rows, sb.shape()[first]),
                &bb,
            ),
            Between {
                transform_b: true,
                combine: |_, x: &mut [Complex<T>], y: &[Complex<T>]| {
                    x.iter_mut().zip(y).for_each(|(x, y)| *x = *x * *y)
                },
                keep: None,
            },
            Lanes {
                ptr: base,
                shape: &pshape,
                strides: &pstrides,
            },
            threads,
            &workspace,
        );
    }
    drop((separate, sb));
    let mut product = buffer.slice_axis_mut(Axis(0), Slice::from(..pshape[0]));
    // The middle axes back, in place, unscaled (the product carries the whole 1/N).
    let middle = &axes[1..axes.len() - 1];
    if !middle.is_empty() {
        let o = options.clone().axes(middle).norm(Norm::Forward);
        FftPlan::<Complex<T>, Complex<T>>::ifftn(&pshape, &o)?.execute_inplace(&mut product)?;
    }
    // The last axis back to real points, the window only, straight into the result.
    let mut offset = 0isize;
    let mut src_shape = out_shape.clone();
    for &ax in middle {
        offset += window[ax].0 as isize * pstrides[ax];
    }
    src_shape[last] = pshape[last];
    let n = fshape[fshape.len() - 1];
    let pass = Pass {
        axis: last,
        kind: PassKind::RealInverse,
        len_in: pshape[last],
        n,
        len_out: window[last].1,
        skip: window[last].0,
        scale: 1.0,
    };
    let inverse = super::cache::real_inverse::<T>(n)?;
    // SAFETY: `src` is the product restricted to the window on the middle axes (inside it);
    // `out` is fresh and the pass writes every element of it.
    unsafe {
        pass::real_inverse(
            &*inverse,
            &pass,
            Lanes {
                ptr: product.as_ptr().offset(offset),
                shape: &src_shape,
                strides: &pstrides,
            },
            Lanes {
                ptr: out_ptr,
                shape: &out_shape,
                strides: &out_strides,
            },
            threads,
            &workspace,
        );
        Ok(out.assume_init())
    }
}

/// An input's strides for walking the lanes of the (broadcast) result: 0 along the axes,
/// other than `axis`, where the input has one point.
fn broadcast_strides(shape: &[usize], strides: &[isize], axis: usize) -> Strides {
    shape
        .iter()
        .zip(strides)
        .enumerate()
        .map(|(i, (&n, &s))| if n == 1 && i != axis { 0 } else { s })
        .collect()
}

/// The two inputs' lanes: base pointers (in `ptr`), the result's shape, the first input's
/// strides; then each input's length along the axis, and the second input's strides.
type Inputs<'a, P> = (Lanes<'a, (P, P)>, (usize, usize), &'a [isize]);

/// What happens to each lane between its forward and its inverse transform in
/// [`complex_lanes`].
struct Between<'a, T, F> {
    /// Whether the second input's lanes are transformed too (else they are spectra already).
    transform_b: bool,
    /// `combine(lane, a, b)`: `a`, transformed, becomes the spectrum transformed back.
    combine: F,
    /// `keep(first, lanes, pitch)`, if given, sees each block's combined spectra before
    /// they are transformed back: lanes `first..` at `pitch` in `lanes`, `n` points each.
    keep: Option<&'a Keep<'a, T>>,
}

/// What [`Between::keep`] calls with each block of combined lanes.
type Keep<'a, T> = dyn Fn(usize, &[Complex<T>], usize) + Sync + 'a;

/// Along `axis`, for every lane: the first input's lane transformed forward (zero-padded to
/// `n` points), and the second's where `between.transform_b`; the two combined; the result
/// kept where asked, transformed back, times `scale`, and the points of `window` written to
/// `dst`. Blocks of lanes are gathered and scattered a row at a time, as in the column pass;
/// a second input that is not transformed and whose lanes are contiguous (stride 1 along
/// `axis`, all `n` points) is read where it lies, without a copy.
///
/// # Safety
/// The inputs address their lengths along `axis` at their strides for every lane of `dst`'s
/// shape; `dst` is writable, with `window.1` points a lane; `dst` may be the first input (each
/// block is read before it is written), but is otherwise distinct from the inputs.
#[allow(clippy::too_many_arguments)]
unsafe fn complex_lanes<T: FftReal, F>(
    (forward, inverse): (&dyn Fft<T>, &dyn Fft<T>),
    (axis, n, (skip, len)): (usize, usize, (usize, usize)),
    scale: T,
    (a, (len_a, len_b), b_strides): Inputs<'_, *const Complex<T>>,
    between: Between<'_, T, F>,
    dst: Lanes<'_, *mut Complex<T>>,
    threads: Threads,
    workspace: &Workspace<T>,
) where
    F: Fn(usize, &mut [Complex<T>], &[Complex<T>]) + Sync,
{
    let space_a = LaneSpace::new((dst.shape, a.strides), dst.strides, axis);
    let space_b = LaneSpace::new((dst.shape, b_strides), dst.strides, axis);
    let (read_a, read_b) = (len_a.min(n), len_b.min(n));
    let (pa, pb, dp) = (Shared(a.ptr.0), Shared(a.ptr.1), Shared(dst.ptr));
    let block = if space_a.dst_axis == 1 {
        1
    } else {
        COLUMN_BLOCK
    };
    let pitch = lane_pitch(n);
    let b_in_place = !between.transform_b && space_b.src_axis == 1 && read_b == n;
    let scratch_len = forward
        .get_inplace_scratch_len()
        .max(inverse.get_inplace_scratch_len());
    let work = if between.transform_b { 3 } else { 2 } * work_of(n);
    drive(
        threads,
        workspace,
        space_a.count,
        block,
        work,
        |range, buf| {
            let (pa, pb, dp) = (pa, pb, dp);
            let scratch = fit(&mut buf.scratch, scratch_len);
            let mut offsets_a = [(0isize, 0isize); COLUMN_BLOCK];
            let mut offsets_b = [(0isize, 0isize); COLUMN_BLOCK];
            let mut start = range.start;
            while start < range.end {
                let w = block.min(range.end - start);
                for i in 0..w {
                    offsets_a[i] = space_a.offsets(start + i);
                    offsets_b[i] = space_b.offsets(start + i);
                }
                let lanes_a = fit(&mut buf.block, w * pitch);
                let lanes_b = fit(&mut buf.other, if b_in_place { 0 } else { w * pitch });
                // SAFETY: the input lanes, per the contract.
                unsafe {
                    gather_block(
                        lanes_a,
                        (n, pitch),
                        pa.0,
                        &offsets_a[..w],
                        space_a.src_axis,
                        read_a,
                    );
                    if !b_in_place {
                        gather_block(
                            lanes_b,
                            (n, pitch),
                            pb.0,
                            &offsets_b[..w],
                            space_b.src_axis,
                            read_b,
                        );
                    }
                }
                for (i, x) in lanes_a.chunks_exact_mut(pitch).enumerate() {
                    let x = &mut x[..n];
                    forward.process_with_scratch(x, scratch);
                    let y: &[Complex<T>] = if b_in_place {
                        // SAFETY: the second input's lane: `n` contiguous points, per the
                        // contract, only read.
                        unsafe { std::slice::from_raw_parts(pb.0.offset(offsets_b[i].0), n) }
                    } else {
                        let y = &mut lanes_b[i * pitch..i * pitch + n];
                        if between.transform_b {
                            forward.process_with_scratch(y, scratch);
                        }
                        y
                    };
                    (between.combine)(start + i, x, y);
                }
                if let Some(keep) = between.keep {
                    keep(start, lanes_a, pitch);
                }
                for x in lanes_a.chunks_exact_mut(pitch) {
                    inverse.process_with_scratch(&mut x[..n], scratch);
                }
                // SAFETY: the block's destination lanes are this call's alone.
                unsafe {
                    pass::scatter_block(
                        lanes_a,
                        pitch,
                        (skip, len),
                        scale,
                        dp.0,
                        &offsets_a[..w],
                        space_a.dst_axis,
                    )
                };
                start += w;
            }
        },
    );
}

/// The column pass of a 2-D cross-correlation, fused: for each column of `rows` (an image's
/// half spectrum transformed along its rows only, `ny` by `m`), the column's forward
/// transform, `combine(column, spectrum, other's column)`, the result shown to `keep`, its
/// inverse transform times `scale` written back into `rows` (ready for the rows' real
/// inverse). One pass over memory where the forward column pass, an element-wise product and
/// the inverse column pass would read and write the spectrum three times. The transforms and
/// per-thread buffers are planned once and kept.
pub(crate) struct ColumnRoundTrip<T: FftReal> {
    forward: std::sync::Arc<dyn Fft<T>>,
    inverse: std::sync::Arc<dyn Fft<T>>,
    workspace: Workspace<T>,
}

impl<T: FftReal> ColumnRoundTrip<T> {
    /// Columns per block of the pass.
    pub(crate) const BLOCK: usize = COLUMN_BLOCK;

    /// The round trip of columns of `ny` points.
    pub(crate) fn new(ny: usize) -> Result<Self> {
        Ok(ColumnRoundTrip {
            forward: super::cache::complex::<T>(ny, rustfft::FftDirection::Forward)?,
            inverse: super::cache::complex::<T>(ny, rustfft::FftDirection::Inverse)?,
            workspace: Workspace::new(),
        })
    }

    /// Runs it (see the type). Both arrays have the same shape and `ny` rows; `rows` has
    /// standard layout, `other` any: with its columns contiguous (the transpose of a standard
    /// array) they are read where they lie, not gathered. `keep(first, lanes, pitch)` sees the
    /// combined columns a block at a time: columns `first..` (a multiple of
    /// [`ColumnRoundTrip::BLOCK`]) at `pitch` in `lanes`, `ny` points each; each block once,
    /// on one thread.
    pub(crate) fn run(
        &self,
        rows: &mut ndarray::Array2<Complex<T>>,
        other: ndarray::ArrayView2<'_, Complex<T>>,
        keep: impl Fn(usize, &[Complex<T>], usize) + Sync,
        scale: T,
        threads: Threads,
        combine: impl Fn(usize, &mut [Complex<T>], &[Complex<T>]) + Sync,
    ) {
        let ny = self.forward.len();
        assert!(
            rows.nrows() == ny && rows.shape() == other.shape() && rows.is_standard_layout(),
            "ColumnRoundTrip: arrays of {ny} rows and one shape"
        );
        let shape = rows.shape().to_vec();
        let strides = Strides::from_slice(rows.strides());
        let other_strides = Strides::from_slice(other.strides());
        let ptr = rows.as_mut_ptr();
        // SAFETY: two arrays of one shape, `rows` standard; `rows` is both the first input and
        // the destination (each block is gathered before it is scattered).
        unsafe {
            complex_lanes(
                (&*self.forward, &*self.inverse),
                (0, ny, (0, ny)),
                scale,
                (
                    Lanes {
                        ptr: (ptr as *const Complex<T>, other.as_ptr()),
                        shape: &shape,
                        strides: &strides,
                    },
                    (ny, ny),
                    &other_strides,
                ),
                Between {
                    transform_b: false,
                    combine,
                    keep: Some(&keep),
                },
                Lanes {
                    ptr,
                    shape: &shape,
                    strides: &strides,
                },
                threads,
                &self.workspace,
            )
        }
    }
}

/// [`complex_lanes`] for real inputs convolved along one axis only: each lane's two real
/// transforms, product and real inverse, in cache.
///
/// # Safety
/// As for [`complex_lanes`].
unsafe fn real_lanes<T: FftReal>(
    (forward, inverse): (&dyn RealToComplex<T>, &dyn ComplexToReal<T>),
    (axis, n, (skip, len)): (usize, usize, (usize, usize)),
    scale: T,
    (a, (len_a, len_b), b_strides): Inputs<'_, *const T>,
    dst: Lanes<'_, *mut T>,
    threads: Threads,
    workspace: &Workspace<T>,
) {
    let space_a = LaneSpace::new((dst.shape, a.strides), dst.strides, axis);
    let space_b = LaneSpace::new((dst.shape, b_strides), dst.strides, axis);
    let (read_a, read_b, m) = (len_a.min(n), len_b.min(n), n / 2 + 1);
    let (pa, pb, dp) = (Shared(a.ptr.0), Shared(a.ptr.1), Shared(dst.ptr));
    let scratch_len = forward.get_scratch_len().max(inverse.get_scratch_len());
    drive(
        threads,
        workspace,
        space_a.count,
        1,
        3 * work_of(n),
        |range, buf| {
            let (pa, pb, dp) = (pa, pb, dp);
            let scratch = fit(&mut buf.scratch, scratch_len);
            let line = fit(&mut buf.real, n);
            let spectrum_a = fit(&mut buf.spectrum, m);
            let spectrum_b = fit(&mut buf.other, m);
            for k in range {
                let (oa, d) = space_a.offsets(k);
                let (ob, _) = space_b.offsets(k);
                for (src, stride, read, spectrum) in [
                    (
                        pa.0.wrapping_offset(oa),
                        space_a.src_axis,
                        read_a,
                        &mut *spectrum_a,
                    ),
                    (
                        pb.0.wrapping_offset(ob),
                        space_b.src_axis,
                        read_b,
                        &mut *spectrum_b,
                    ),
                ] {
                    // SAFETY: the input lane holds `read` points, per the contract.
                    unsafe { pass::gather_real(line, src, stride, read) };
                    // The lengths are the plans' own: realfft's length errors cannot happen.
                    let _ = forward.process_with_scratch(line, spectrum, scratch);
                }
                spectrum_a
                    .iter_mut()
                    .zip(&*spectrum_b)
                    .for_each(|(x, y)| *x = *x * *y * scale);
                // The product of real signals' spectra: its DC and Nyquist terms are real.
                pass::real_ends(spectrum_a, n);
                let _ = inverse.process_with_scratch(spectrum_a, line, scratch);
                for (j, v) in line[skip..skip + len].iter().enumerate() {
                    // SAFETY: element `j` of destination lane `k`, ours alone.
                    unsafe { *dp.0.offset(d + j as isize * space_a.dst_axis) = *v };
                }
            }
        },
    );
}
