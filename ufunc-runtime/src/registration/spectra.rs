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
/// `inverse` takes it back (divided by the size).
pub(crate) struct RealPlan2<T: Real> {
    ny: usize,
    nx: usize,
    rows_forward: Arc<dyn RealToComplex<T>>,
    rows_inverse: Arc<dyn ComplexToReal<T>>,
    columns_forward: Arc<dyn Fft<T>>,
    columns_inverse: Arc<dyn Fft<T>>,
}

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

    /// The half spectrum of `image` (any strides) into `out`.
    pub(crate) fn forward(
        &self,
        image: ArrayView2<'_, T>,
        out: &mut Array2<Complex<T>>,
        threads: Threads,
    ) {
        let m = self.half_width();
        let rows = |(mut dst, src): (
            ndarray::ArrayViewMut1<'_, Complex<T>>,
            ndarray::ArrayView1<'_, T>,
        )| {
            let mut line: Vec<T> = src.iter().copied().collect();
            let mut spec = vec![Complex::default(); m];
            let _ = self.rows_forward.process(&mut line, &mut spec);
            dst.iter_mut().zip(&spec).for_each(|(d, s)| *d = *s);
        };
        let pairs: Vec<_> = out.rows_mut().into_iter().zip(image.rows()).collect();
        match threads {
            Threads::One => pairs.into_iter().for_each(rows),
            Threads::All => pairs.into_par_iter().for_each(rows),
        }
        self.columns(out, &self.columns_forward, threads);
    }

    /// The image of the half spectrum `spectrum` (overwritten) into `out`, divided by the size.
    pub(crate) fn inverse(
        &self,
        spectrum: &mut Array2<Complex<T>>,
        out: &mut Array2<T>,
        threads: Threads,
    ) {
        self.columns(spectrum, &self.columns_inverse, threads);
        let scale = T::one() / T::of_f64((self.nx * self.ny) as f64);
        let rows = |(mut dst, src): (
            ndarray::ArrayViewMut1<'_, T>,
            ndarray::ArrayViewMut1<'_, Complex<T>>,
        )| {
            let mut spec: Vec<Complex<T>> = src.iter().copied().collect();
            // A real signal's spectrum has real DC and Nyquist terms: drop rounding residue.
            spec[0].im = T::zero();
            if self.nx % 2 == 0 {
                spec[self.nx / 2].im = T::zero();
            }
            let mut line = vec![T::zero(); self.nx];
            let _ = self.rows_inverse.process(&mut spec, &mut line);
            dst.iter_mut().zip(&line).for_each(|(d, s)| *d = *s * scale);
        };
        let pairs: Vec<_> = out
            .rows_mut()
            .into_iter()
            .zip(spectrum.rows_mut())
            .collect();
        match threads {
            Threads::One => pairs.into_iter().for_each(rows),
            Threads::All => pairs.into_par_iter().for_each(rows),
        }
    }

    /// Transforms every column of `a` in place, blocks of columns gathered into scratch.
    fn columns(&self, a: &mut Array2<Complex<T>>, fft: &Arc<dyn Fft<T>>, threads: Threads) {
        let ny = self.ny;
        let block = |mut cols: ndarray::ArrayViewMut2<'_, Complex<T>>| {
            let w = cols.ncols();
            let mut buf = vec![Complex::default(); ny * w];
            for ((y, c), v) in cols.indexed_iter() {
                buf[c * ny + y] = *v;
            }
            fft.process(&mut buf);
            for ((y, c), v) in cols.indexed_iter_mut() {
                *v = buf[c * ny + y];
            }
        };
        let blocks: Vec<_> = a.axis_chunks_iter_mut(Axis(1), COLUMN_BLOCK).collect();
        match threads {
            Threads::One => blocks.into_iter().for_each(block),
            Threads::All => blocks.into_par_iter().for_each(block),
        }
    }
}
