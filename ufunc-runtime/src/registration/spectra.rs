//! The transforms the registration needs: n-d complex FFTs and a reusable 2-D real plan
//! (forward to the half spectrum, inverse back), split across threads by rows and by blocks of
//! columns.

use super::Real;
use crate::parallel::Threads;
use ndarray::{Array2, ArrayD, ArrayView2, Axis};
use num_complex::Complex;
use rayon::prelude::*;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::{Fft, FftPlanner};
use std::sync::Arc;

/// Columns gathered per block for the column passes: contiguous scratch, one transform each.
const COLUMN_BLOCK: usize = 16;

/// The complex FFT over every axis of `a`, in place; the inverse divides by the size (NumPy's
/// `norm="backward"`).
pub(crate) fn fftn_inplace<T: Real>(a: &mut ArrayD<Complex<T>>, inverse: bool) {
    let mut planner = FftPlanner::new();
    for axis in 0..a.ndim() {
        let n = a.shape()[axis];
        let fft = match inverse {
            true => planner.plan_fft_inverse(n),
            false => planner.plan_fft_forward(n),
        };
        let mut line = vec![Complex::default(); n];
        let mut scratch = vec![Complex::default(); fft.get_inplace_scratch_len()];
        for mut lane in a.lanes_mut(Axis(axis)) {
            line.iter_mut().zip(lane.iter()).for_each(|(d, s)| *d = *s);
            fft.process_with_scratch(&mut line, &mut scratch);
            lane.iter_mut().zip(&line).for_each(|(d, s)| *d = *s);
        }
    }
    if inverse {
        let scale = T::one() / T::of_f64(a.len().max(1) as f64);
        a.mapv_inplace(|z| z * scale);
    }
}

/// A 2-D real transform of one shape: `forward` gives the `(ny, nx/2+1)` half spectrum,
/// `inverse` takes it back (divided by the size). Rows go through realfft, columns through
/// rustfft in blocks gathered into contiguous scratch, both split across threads.
pub(crate) struct RealPlan2<T: Real> {
    ny: usize,
    nx: usize,
    rows_forward: Arc<dyn RealToComplex<T>>,
    rows_inverse: Arc<dyn ComplexToReal<T>>,
    columns_forward: Arc<dyn Fft<T>>,
    columns_inverse: Arc<dyn Fft<T>>,
}

/// Rows per piece of a row pass.
const ROWS_PER_PIECE: usize = 16;

impl<T: Real> RealPlan2<T> {
    pub(crate) fn new(ny: usize, nx: usize) -> Self {
        let mut real = RealFftPlanner::new();
        let mut complex = FftPlanner::new();
        RealPlan2 {
            ny,
            nx,
            rows_forward: real.plan_fft_forward(nx),
            rows_inverse: real.plan_fft_inverse(nx),
            columns_forward: complex.plan_fft_forward(ny),
            columns_inverse: complex.plan_fft_inverse(ny),
        }
    }

    pub(crate) fn width(&self) -> usize {
        self.nx
    }

    pub(crate) fn height(&self) -> usize {
        self.ny
    }

    pub(crate) fn half_width(&self) -> usize {
        self.nx / 2 + 1
    }

    /// The half spectrum of `image` (any strides) into `out` (standard layout).
    pub(crate) fn forward(
        &self,
        image: ArrayView2<'_, T>,
        out: &mut Array2<Complex<T>>,
        threads: Threads,
    ) {
        let (nx, m) = (self.nx, self.half_width());
        let out_rows = out.as_slice_mut().expect("a standard-layout spectrum");
        let piece = |(p, rows): (usize, &mut [Complex<T>])| {
            let mut line = vec![T::zero(); nx];
            let mut scratch = self.rows_forward.make_scratch_vec();
            for (k, dst) in rows.chunks_exact_mut(m).enumerate() {
                let src = image.row(p * ROWS_PER_PIECE + k);
                line.iter_mut().zip(src.iter()).for_each(|(d, s)| *d = *s);
                let _ = self
                    .rows_forward
                    .process_with_scratch(&mut line, dst, &mut scratch);
            }
        };
        for_each_piece(
            out_rows.chunks_mut(ROWS_PER_PIECE * m).enumerate(),
            threads,
            piece,
        );
        self.columns(out, &self.columns_forward, threads);
    }

    /// The image of the half spectrum `spectrum` (overwritten) into `out` (standard layout),
    /// divided by the size.
    pub(crate) fn inverse(
        &self,
        spectrum: &mut Array2<Complex<T>>,
        out: &mut Array2<T>,
        threads: Threads,
    ) {
        self.columns(spectrum, &self.columns_inverse, threads);
        let (nx, m) = (self.nx, self.half_width());
        let scale = T::one() / T::of_f64((self.nx * self.ny) as f64);
        let spec_rows = spectrum.as_slice_mut().expect("a standard-layout spectrum");
        let out_rows = out.as_slice_mut().expect("a standard-layout image");
        let piece = |(specs, images): (&mut [Complex<T>], &mut [T])| {
            let mut scratch = self.rows_inverse.make_scratch_vec();
            for (spec, line) in specs.chunks_exact_mut(m).zip(images.chunks_exact_mut(nx)) {
                // A real signal's spectrum has real DC and Nyquist terms: drop rounding residue.
                spec[0].im = T::zero();
                if nx % 2 == 0 {
                    spec[nx / 2].im = T::zero();
                }
                let _ = self
                    .rows_inverse
                    .process_with_scratch(spec, line, &mut scratch);
                line.iter_mut().for_each(|v| *v = *v * scale);
            }
        };
        let pieces = spec_rows
            .chunks_mut(ROWS_PER_PIECE * m)
            .zip(out_rows.chunks_mut(ROWS_PER_PIECE * nx));
        for_each_piece(pieces, threads, piece);
    }

    /// Transforms every column of `a` in place: blocks of columns gathered into contiguous
    /// scratch, transformed as one batch, scattered back.
    fn columns(&self, a: &mut Array2<Complex<T>>, fft: &Arc<dyn Fft<T>>, threads: Threads) {
        let ny = self.ny;
        let block = |mut cols: ndarray::ArrayViewMut2<'_, Complex<T>>| {
            let w = cols.ncols();
            let mut buf = vec![Complex::default(); ny * w];
            let mut scratch = vec![Complex::default(); fft.get_inplace_scratch_len()];
            for (y, row) in cols.rows().into_iter().enumerate() {
                for (c, v) in row.iter().enumerate() {
                    buf[c * ny + y] = *v;
                }
            }
            fft.process_with_scratch(&mut buf, &mut scratch);
            for (y, mut row) in cols.rows_mut().into_iter().enumerate() {
                for (c, v) in row.iter_mut().enumerate() {
                    *v = buf[c * ny + y];
                }
            }
        };
        let blocks: Vec<_> = a.axis_chunks_iter_mut(Axis(1), COLUMN_BLOCK).collect();
        for_each_piece(blocks.into_iter(), threads, block);
    }
}

/// Runs `work` on each item: in order on this thread, or on rayon's pool.
fn for_each_piece<I, F>(items: I, threads: Threads, work: F)
where
    I: Iterator + Send,
    I::Item: Send,
    F: Fn(I::Item) + Sync + Send,
{
    match threads {
        Threads::One => items.for_each(work),
        Threads::All => items.par_bridge().for_each(work),
    }
}
