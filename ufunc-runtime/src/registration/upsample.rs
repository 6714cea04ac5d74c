//! The upsampled DFT of Guizar-Sicairos, Thurman and Fienup (2008): the cross-correlation on a
//! small grid spaced `1/U` pixel around the coarse peak, by matrix products over the spectrum
//! instead of a `U`-times zero-padded inverse FFT.
//!
//! For a cross-power spectrum `P` the value at grid point `r` (per axis `r_d` in `0..region`)
//! is `Σ_k P[k] Π_d exp(2πi (r_d - offset_d) f_d(k_d))`, with `f_d(k) = fftfreq(n_d, U)[k]`:
//! the inverse DFT of `P` (not divided by its size) at position `(r_d - offset_d) / U`.

use crate::isa::{active_isa, IsaLevel};
use crate::parallel::{Split, Threads};
use crate::stream::{prefetch_span, PREFETCH_ROWS};
use ndarray::{Array2, ArrayD, ArrayView2, ArrayViewD, Axis, IxDyn};
use num_complex::Complex;
use std::f64::consts::PI;

use crate::fft::FftReal;

/// NumPy's `fftfreq(n)[k] * n`: the signed frequency of bin `k` of an `n`-point transform.
pub(crate) fn signed_bin(k: usize, n: usize) -> f64 {
    if k <= (n - 1) / 2 {
        k as f64
    } else {
        k as f64 - n as f64
    }
}

/// `kernel[[r, k]] = exp(2πi (r - offset) f(k) / (n U))`, for `r` in `0..region`: each row is
/// the one before times `exp(2πi f(k) / (n U))`, and every [`KERNEL_RESEED`]-th row is made
/// from the formula again (one `sincos` an entry was a tenth of a 2048x2048 frame's
/// registration). The entries stay within 1e-14 of the direct formula.
fn kernel(n: usize, region: usize, upsample: f64, offset: f64) -> Array2<Complex<f64>> {
    let mut out = Array2::zeros((region, n));
    kernel_into(
        &mut out,
        (&mut Vec::new(), &mut Vec::new()),
        upsample,
        offset,
    );
    out
}

/// [`kernel`] into `out` (`region x n`), with `step` and `row` as its scratch.
fn kernel_into(
    out: &mut Array2<Complex<f64>>,
    (step, row): (&mut Vec<Complex<f64>>, &mut Vec<Complex<f64>>),
    upsample: f64,
    offset: f64,
) {
    let n = out.ncols();
    let step_phase = |k: usize| 2.0 * PI * signed_bin(k, n) / (n as f64 * upsample);
    step.clear();
    step.extend((0..n).map(|k| Complex::from_polar(1.0, step_phase(k))));
    row.resize(n, Complex::new(0.0, 0.0));
    for (r, mut out_row) in out.rows_mut().into_iter().enumerate() {
        if r % KERNEL_RESEED == 0 {
            for (k, z) in row.iter_mut().enumerate() {
                *z = Complex::from_polar(1.0, (r as f64 - offset) * step_phase(k));
            }
        }
        for ((o, z), s) in out_row.iter_mut().zip(row.iter_mut()).zip(step.iter()) {
            *o = *z;
            *z *= s;
        }
    }
}

/// The buffers of [`upsampled_dft_half`], kept from one refinement to the next: each is about
/// 1 MB for a 2048-wide frame, and memory freshly taken from the system for them (as the
/// allocator gave it back between frames) cost a page fault every 4 KiB of it.
#[derive(Default)]
pub(crate) struct Refinement<T> {
    ey: Array2<Complex<f64>>,
    ex: Array2<Complex<f64>>,
    g: Array2<Complex<f64>>,
    b: Array2<Complex<f64>>,
    w_re: Vec<T>,
    w_im: Vec<T>,
    step: Vec<Complex<f64>>,
    row: Vec<Complex<f64>>,
}

/// `a`, of shape `shape` (its values unspecified): made anew only when the shape changed.
fn sized(a: &mut Array2<Complex<f64>>, shape: (usize, usize)) -> &mut Array2<Complex<f64>> {
    if a.dim() != shape {
        *a = Array2::zeros(shape);
    }
    a
}

/// Rows of a [`kernel`] made by products between two made from the formula (the products'
/// rounding errors add up: about 1e-13 after 1500 of them).
const KERNEL_RESEED: usize = 64;

/// The upsampled DFT of a full spectrum of any dimension: shape `(region,) * ndim`.
pub(crate) fn upsampled_dft<T: FftReal>(
    spectrum: ArrayViewD<'_, Complex<T>>,
    region: usize,
    upsample: f64,
    offsets: &[f64],
) -> ArrayD<Complex<f64>> {
    let mut data = spectrum.mapv(|z| Complex::new(z.re.as_f64(), z.im.as_f64()));
    // Contract one axis at a time: that axis's `n` points become `region` points.
    for axis in (0..data.ndim()).rev() {
        let n = data.shape()[axis];
        let k = kernel(n, region, upsample, offsets[axis]);
        let last = data.ndim() - 1;
        let mut moved = data.view();
        moved.swap_axes(axis, last);
        let moved = moved.as_standard_layout();
        let rows = moved.len() / n.max(1);
        let flat = moved
            .into_shape_with_order((rows, n))
            .expect("a standard-layout array reshapes");
        let product = flat.dot(&k.t()).as_standard_layout().into_owned();
        let mut shape = data.shape().to_vec();
        shape.swap(axis, last);
        shape[last] = region;
        let mut result = product
            .into_shape_with_order(IxDyn(&shape))
            .expect("the product has the contracted shape");
        result.swap_axes(axis, last);
        data = result.as_standard_layout().into_owned();
    }
    data
}

/// The same for a real signal's 2-D cross-power spectrum given as its half (`rfft2`) spectrum
/// of `nx / 2 + 1` columns, without building the full one: the contraction over rows runs on
/// the half only, the other half follows from Hermitian symmetry. `buffers` are kept by the
/// caller from one call to the next.
pub(crate) fn upsampled_dft_half<T: FftReal>(
    half: HalfProduct<'_, T>,
    nx: usize,
    region: usize,
    upsample: f64,
    offsets: [f64; 2],
    threads: Threads,
    buffers: &mut Refinement<T>,
) -> Array2<Complex<f64>> {
    let (ny, m) = half.dim();
    let Refinement {
        ey,
        ex,
        g,
        b,
        w_re,
        w_im,
        step,
        row,
    } = buffers;
    let ey = sized(ey, (region, ny));
    kernel_into(ey, (&mut *step, &mut *row), upsample, offsets[0]);
    let ex = sized(ex, (region, nx));
    kernel_into(ex, (step, row), upsample, offsets[1]);
    // g[r, j] = Σ_ky ey[r, ky] half[ky, j]: the costly product, region x ny x (nx/2 + 1).
    let g = sized(g, (region, m));
    rows_times_half(ey, half, threads, (w_re, w_im), g);
    // The full row contraction b[r, kx] for every kx: the columns past the half are the
    // conjugate of the mirrored column, except for the Nyquist row of an even `ny`, whose
    // frequency does not change sign under mirroring.
    let b = sized(b, (region, nx));
    for r in 0..region {
        for kx in 0..nx {
            b[[r, kx]] = if kx < m {
                g[[r, kx]]
            } else {
                let j = nx - kx;
                let mut v = g[[r, j]].conj();
                if ny % 2 == 0 {
                    let e = ey[[r, ny / 2]];
                    let h = half.nyquist(j);
                    let h = Complex::new(h.re.as_f64(), h.im.as_f64());
                    v += Complex::new(0.0, 2.0 * e.im) * h.conj();
                }
                v
            };
        }
    }
    // The last product (region x nx x region in f64: about 1 ms of a 2048-wide frame on one
    // core), its rows split in two for `parallel`.
    match threads {
        Threads::All if region >= 2 => {
            let (top, bottom) = b.view().split_at(Axis(0), region / 2);
            let (top, bottom) = rayon::join(|| top.dot(&ex.t()), || bottom.dot(&ex.t()));
            ndarray::concatenate(Axis(0), &[top.view(), bottom.view()])
                .expect("two halves of one product")
        }
        _ => b.dot(&ex.t()),
    }
}

/// Columns per piece of the blocked product: the piece's column strip (for each pair of
/// mirrored spectrum rows, the piece's `COLUMNS_PER_PIECE` values of their sum and difference,
/// planar: 512 KiB of f32 for 2048 rows) is gathered once into L2, or made by the fused column
/// pass ([`Strips`]), then each weight row runs down it with its accumulators in registers.
const COLUMNS_PER_PIECE: usize = 32;

/// `weights (region x ny) · half (ny x m)`, blocked over columns and split across threads, for
/// weights that are a [`kernel`]: each row's entries at mirrored frequencies are conjugates
/// (`w[r, ny - k] = conj w[r, k]`), so that `w[k] P[k] + w[ny - k] P[ny - k]` is
/// `c (P[k] + P[ny - k]) + i s (P[k] - P[ny - k])` with `w[k] = c + i s`: half the
/// multiply-adds of the plain product. Into `out` (`region x m`, every point written), with
/// `w_re` and `w_im` as the weights' planar copies.
fn rows_times_half<T: FftReal>(
    weights: &Array2<Complex<f64>>,
    half: HalfProduct<'_, T>,
    threads: Threads,
    (w_re, w_im): (&mut Vec<T>, &mut Vec<T>),
    out: &mut Array2<Complex<f64>>,
) {
    let (region, ny) = weights.dim();
    let m = half.dim().1;
    assert_eq!(
        out.dim(),
        (region, m),
        "rows_times_half: the output's shape"
    );
    w_re.clear();
    w_re.extend(weights.iter().map(|z| T::of_f64(z.re)));
    w_im.clear();
    w_im.extend(weights.iter().map(|z| T::of_f64(z.im)));
    let (w_re, w_im) = (&*w_re, &*w_im);
    let pieces = m.div_ceil(COLUMNS_PER_PIECE);
    // Every column is written by the piece that holds it.
    let out = std::sync::Mutex::new(out);
    let split = Split {
        min_work: 1 << 16,
        min_items: 2,
        pieces_per_thread: 2,
        align: 1,
    };
    split.run(threads, pieces, region * ny * COLUMNS_PER_PIECE, |range| {
        let mut gathered = Vec::new();
        for index in range {
            let c0 = index * COLUMNS_PER_PIECE;
            let c1 = (c0 + COLUMNS_PER_PIECE).min(m);
            let piece = Piece {
                w_re,
                w_im,
                region,
                ny,
            };
            let strip: &[T] = match half {
                HalfProduct::Rows(rows) => {
                    gathered.resize(strip_len(ny), T::zero());
                    gather_strip(rows, c0..c1, &mut gathered);
                    &gathered
                }
                HalfProduct::Strips(strips) => strips.piece(index),
            };
            let (re, im) = accumulate(&piece, strip);
            let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
            for r in 0..region {
                for (j, c) in (c0..c1).enumerate() {
                    let k = r * COLUMNS_PER_PIECE + j;
                    out[[r, c]] = Complex::new(re[k].as_f64(), im[k].as_f64());
                }
            }
        }
    });
}

/// Rows of a strip: row 0, the pairs `(k, ny - k)` for `k` in `1..=(ny - 1) / 2`, and for an
/// even `ny` the Nyquist row `ny / 2`, which is its own mirror. Strip row `q` takes the
/// weights of spectrum row `q`.
fn strip_rows(ny: usize) -> usize {
    ny / 2 + 1
}

/// The weights of the blocked product and its sizes.
struct Piece<'a, T> {
    w_re: &'a [T],
    w_im: &'a [T],
    region: usize,
    ny: usize,
}

/// Values of a strip: [`strip_rows`] rows of four parts of [`COLUMNS_PER_PIECE`].
fn strip_len(ny: usize) -> usize {
    strip_rows(ny) * 4 * COLUMNS_PER_PIECE
}

/// A real image's cross-power half spectrum (`ny` x `m`), as the upsampled DFT reads it.
#[derive(Clone, Copy)]
pub(crate) enum HalfProduct<'a, T> {
    /// The spectrum itself, any strides: each piece's strip is gathered from it.
    Rows(ArrayView2<'a, Complex<T>>),
    /// Already in strips, as the fused column pass writes them.
    Strips(&'a Strips<T>),
}

impl<T: FftReal> HalfProduct<'_, T> {
    fn dim(&self) -> (usize, usize) {
        match self {
            HalfProduct::Rows(rows) => rows.dim(),
            HalfProduct::Strips(strips) => (strips.ny, strips.m),
        }
    }

    /// Point `(ny / 2, j)`: the Nyquist row of an even `ny`.
    fn nyquist(&self, j: usize) -> Complex<T> {
        const W: usize = COLUMNS_PER_PIECE;
        debug_assert!(self.dim().0 % 2 == 0, "only an even ny has a Nyquist row");
        match self {
            HalfProduct::Rows(rows) => rows[[rows.nrows() / 2, j]],
            HalfProduct::Strips(strips) => {
                // The Nyquist row is its own mirror: its strip row holds `S = P[ny / 2]`.
                let row = &strips.piece(j / W)[strips.ny / 2 * 4 * W..];
                Complex::new(row[j % W], row[W + j % W])
            }
        }
    }
}

/// A half spectrum of `ny` rows and `m` columns in strips, piece after piece: for each piece
/// of [`COLUMNS_PER_PIECE`] columns, what [`fill_strip`] makes of its columns.
pub(crate) struct Strips<T> {
    data: ndarray::Array1<T>,
    ny: usize,
    m: usize,
}

impl<T: FftReal> Strips<T> {
    /// Columns per piece: the lanes of one piece are written together.
    pub(crate) const COLUMNS: usize = COLUMNS_PER_PIECE;

    /// Zeroed strips of a `ny` x `m` half spectrum, of fresh pages.
    pub(crate) fn new(ny: usize, m: usize) -> crate::error::Result<Self> {
        let len = m.div_ceil(COLUMNS_PER_PIECE) * strip_len(ny);
        Ok(Strips {
            data: crate::alloc::try_zeroed_fft(&ndarray::Ix1(len))?,
            ny,
            m,
        })
    }

    fn piece(&self, index: usize) -> &[T] {
        let len = strip_len(self.ny);
        &self.data.as_slice().expect("a fresh array")[index * len..(index + 1) * len]
    }

    /// The strips' storage, for pieces written from several threads ([`Strips::fill`]).
    pub(crate) fn as_mut_ptr(&mut self) -> *mut T {
        self.data.as_mut_ptr()
    }

    /// Writes piece `index` from its `width` columns (`column(q, j)`: row `q` of column `j`
    /// of the piece).
    ///
    /// # Safety
    /// `data` is [`Strips::as_mut_ptr`] of strips of this `ny` with more than `index` pieces,
    /// and no other thread accesses piece `index` meanwhile.
    pub(crate) unsafe fn fill(
        data: *mut T,
        ny: usize,
        index: usize,
        width: usize,
        column: impl Fn(usize, usize) -> Complex<T>,
    ) {
        let len = strip_len(ny);
        // SAFETY: the piece lies in the strips and is this caller's alone, per the contract.
        let strip = unsafe { std::slice::from_raw_parts_mut(data.add(index * len), len) };
        fill_strip(strip, ny, width, column, |_| {});
    }
}

/// The columns `cols` of `half` into `strip` ([`fill_strip`]), the rows ahead prefetched.
fn gather_strip<T: FftReal>(
    half: ArrayView2<'_, Complex<T>>,
    cols: std::ops::Range<usize>,
    strip: &mut [T],
) {
    let row_stride = half.strides()[0];
    let first = cols.start as isize * half.strides()[1];
    let last = (cols.end - 1) as isize * half.strides()[1];
    let prefetch = |ky: usize| {
        let row = half.as_ptr().wrapping_offset(ky as isize * row_stride);
        // SAFETY: a prefetch is a hint and never faults; both ends lie in the spectrum.
        unsafe { prefetch_span(row.wrapping_offset(first), row.wrapping_offset(last)) };
    };
    let ny = half.nrows();
    let ahead = |q: usize| {
        let mirror = ny - q;
        if q + PREFETCH_ROWS < mirror.saturating_sub(PREFETCH_ROWS) {
            prefetch(q + PREFETCH_ROWS);
            prefetch(mirror - PREFETCH_ROWS);
        }
    };
    let width = cols.len();
    fill_strip(strip, ny, width, |q, j| half[[q, cols.start + j]], ahead);
}

/// A piece's `width` columns (`column(q, j)`: row `q` of column `j`) into `strip`, planar, for
/// each strip row `q` ([`strip_rows`]): the real parts of `S = P[q] + P[ny - q]`, its imaginary
/// parts, then those of `D = P[q] - P[ny - q]` (`COLUMNS_PER_PIECE` each, zero past the last
/// column). A row without a mirror has `S = D = P[q]`, so that `c S + i s D` is its plain
/// product. `before(q)` runs before each strip row.
#[inline(always)]
fn fill_strip<T: FftReal>(
    strip: &mut [T],
    ny: usize,
    width: usize,
    column: impl Fn(usize, usize) -> Complex<T>,
    before: impl Fn(usize),
) {
    const W: usize = COLUMNS_PER_PIECE;
    for (q, h) in strip.chunks_exact_mut(4 * W).enumerate() {
        before(q);
        let mirror = ny - q;
        let (s, d) = h.split_at_mut(2 * W);
        let (s_re, s_im) = s.split_at_mut(W);
        let (d_re, d_im) = d.split_at_mut(W);
        if q == 0 || mirror == q {
            for j in 0..width {
                let a = column(q, j);
                (s_re[j], s_im[j]) = (a.re, a.im);
                (d_re[j], d_im[j]) = (a.re, a.im);
            }
        } else {
            for j in 0..width {
                let (a, b) = (column(q, j), column(mirror, j));
                (s_re[j], s_im[j]) = (a.re + b.re, a.im + b.im);
                (d_re[j], d_im[j]) = (a.re - b.re, a.im - b.im);
            }
        }
        for part in [s_re, s_im, d_re, d_im] {
            part[width..].fill(T::zero());
        }
    }
}

/// One piece of columns from its gathered strip: planar accumulators. Compiled for AVX2 where
/// the CPU has it.
fn accumulate<T: FftReal>(piece: &Piece<'_, T>, strip: &[T]) -> (Vec<T>, Vec<T>) {
    #[cfg(target_arch = "x86_64")]
    if active_isa() >= IsaLevel::Avx2 {
        // SAFETY: the CPU supports AVX2 and FMA (active_isa never reports more than it has).
        return unsafe { accumulate_avx2(piece, strip) };
    }
    accumulate_portable::<T, false>(piece, strip)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn accumulate_avx2<T: FftReal>(piece: &Piece<'_, T>, strip: &[T]) -> (Vec<T>, Vec<T>) {
    accumulate_portable::<T, true>(piece, strip)
}

/// Strip rows per chunk of [`accumulate_portable`]: 16 KiB of f32, which stay in L1 while every
/// weight row runs down them (from L2, the strip's 512 bytes a row came at half the speed of
/// the multiply-adds).
const CHUNK_ROWS: usize = 32;

/// Each weight row down the strip, a chunk of rows at a time, its `2 COLUMNS_PER_PIECE`
/// accumulators in registers (for f32 on AVX2: eight vectors), each a running sum over the
/// strip rows in order: `acc += c S + i s D` with `c + i s` the row's weight. With `FMA`, the
/// multiply-adds are fused (only where the entry is compiled with FMA: elsewhere `mul_add`
/// would be a library call).
#[inline(always)]
fn accumulate_portable<T: FftReal, const FMA: bool>(
    piece: &Piece<'_, T>,
    strip: &[T],
) -> (Vec<T>, Vec<T>) {
    const W: usize = COLUMNS_PER_PIECE;
    let (region, ny) = (piece.region, piece.ny);
    let mut re = vec![T::zero(); region * W];
    let mut im = vec![T::zero(); region * W];
    let chunk_len = CHUNK_ROWS * 4 * W;
    for (c, chunk) in strip.chunks(chunk_len).enumerate() {
        let first = c * CHUNK_ROWS;
        let rows = first..first + chunk.len() / (4 * W);
        // The next chunk's lines are asked for a slice per weight row, spread over this
        // chunk's work (strips written earlier, by the column pass, come from memory).
        let next = &strip[((c + 1) * chunk_len).min(strip.len())..];
        let next = &next[..next.len().min(chunk_len)];
        let slice = next.len().div_ceil(region.max(1)).max(1);
        for (r, (out_re, out_im)) in re
            .chunks_exact_mut(W)
            .zip(im.chunks_exact_mut(W))
            .enumerate()
        {
            if let Some(part) = next.chunks(slice).nth(r) {
                // SAFETY: both ends lie in the strip; a prefetch never faults.
                unsafe { prefetch_span(part.as_ptr(), part.as_ptr().add(part.len() - 1)) };
            }
            let at = r * ny + rows.start..r * ny + rows.end;
            let weights = piece.w_re[at.clone()].iter().zip(&piece.w_im[at]);
            let out_re: &mut [T; W] = out_re.try_into().expect("W long");
            let out_im: &mut [T; W] = out_im.try_into().expect("W long");
            let (mut acc_re, mut acc_im) = (*out_re, *out_im);
            for (h, (&cos, &sin)) in chunk.chunks_exact(4 * W).zip(weights) {
                // Fixed-size rows, so the inner loop has no bounds checks and vectorizes.
                let part =
                    |i: usize| -> &[T; W] { h[i * W..(i + 1) * W].try_into().expect("W long") };
                let (s_re, s_im, d_re, d_im) = (part(0), part(1), part(2), part(3));
                for j in 0..W {
                    if FMA {
                        acc_re[j] = cos.mul_add(s_re[j], (-sin).mul_add(d_im[j], acc_re[j]));
                        acc_im[j] = cos.mul_add(s_im[j], sin.mul_add(d_re[j], acc_im[j]));
                    } else {
                        acc_re[j] = acc_re[j] + (cos * s_re[j] - sin * d_im[j]);
                        acc_im[j] = acc_im[j] + (cos * s_im[j] + sin * d_re[j]);
                    }
                }
            }
            (*out_re, *out_im) = (acc_re, acc_im);
        }
    }
    (re, im)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array;

    /// The definition, term by term.
    fn naive(
        p: &ArrayD<Complex<f64>>,
        region: usize,
        u: f64,
        offsets: &[f64],
    ) -> ArrayD<Complex<f64>> {
        let shape = p.shape().to_vec();
        ArrayD::from_shape_fn(IxDyn(&vec![region; shape.len()]), |r| {
            p.indexed_iter()
                .map(|(k, &v)| {
                    let phase: f64 = (0..shape.len())
                        .map(|d| {
                            2.0 * PI * (r[d] as f64 - offsets[d]) * signed_bin(k[d], shape[d])
                                / (shape[d] as f64 * u)
                        })
                        .sum();
                    v * Complex::from_polar(1.0, phase)
                })
                .sum()
        })
    }

    fn spectrum(shape: &[usize], seed: u64) -> ArrayD<Complex<f64>> {
        let mut s = seed;
        let mut next = move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        Array::from_shape_simple_fn(IxDyn(shape), || Complex::new(next(), next()))
    }

    fn close(a: &ArrayD<Complex<f64>>, b: &ArrayD<Complex<f64>>, tol: f64) {
        assert_eq!(a.shape(), b.shape());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).norm() < tol, "{x} vs {y}");
        }
    }

    #[test]
    fn matches_the_definition_in_one_to_three_dimensions() {
        for shape in [vec![7], vec![6, 5], vec![4, 3, 5]] {
            let p = spectrum(&shape, shape.len() as u64);
            let offsets: Vec<f64> = (0..shape.len()).map(|d| 2.5 - d as f64 * 7.0).collect();
            let got = upsampled_dft(p.view(), 4, 3.0, &offsets);
            close(&got, &naive(&p, 4, 3.0, &offsets), 1e-9);
        }
    }

    /// A real image's spectrum, full and half: the half path must give the full path's values,
    /// for odd and even sizes (the Nyquist row and column of even sizes are the subtle part).
    #[test]
    fn the_half_spectrum_path_matches_the_full_one() {
        // Also wide ones: the Nyquist row read from strips past the first piece.
        for (ny, nx) in [
            (6, 8),
            (5, 7),
            (6, 7),
            (5, 8),
            (1, 4),
            (4, 1),
            (2, 2),
            (6, 70),
            (4, 131),
        ] {
            let img = spectrum(&[ny, nx], 9).mapv(|z| z.re);
            // The full DFT of the real image, by definition.
            let full = ArrayD::from_shape_fn(IxDyn(&[ny, nx]), |k| {
                img.indexed_iter()
                    .map(|(x, &v)| {
                        let phase = -2.0
                            * PI
                            * ((k[0] * x[0]) as f64 / ny as f64 + (k[1] * x[1]) as f64 / nx as f64);
                        Complex::from_polar(v, phase)
                    })
                    .sum::<Complex<f64>>()
            });
            let half = full
                .slice_each_axis(|a| {
                    if a.axis.index() == 1 {
                        ndarray::Slice::from(0..nx / 2 + 1)
                    } else {
                        ndarray::Slice::from(..)
                    }
                })
                .into_dimensionality::<ndarray::Ix2>()
                .unwrap()
                .to_owned();
            let offsets = [3.25, -1.5];
            for threads in [Threads::One, Threads::All] {
                let got = half_dft(HalfProduct::Rows(half.view()), nx, threads);
                // The same bits from strips as from the rows.
                let strips = strips_of(half.view());
                let from_strips = half_dft(HalfProduct::Strips(&strips), nx, threads);
                assert_eq!(got, from_strips, "{ny}x{nx}");
                close(
                    &got.into_dyn(),
                    &upsampled_dft(full.view(), 5, 4.0, &offsets),
                    1e-9,
                );
            }
            let half32 = half.mapv(|z| Complex::new(z.re as f32, z.im as f32));
            let got = half_dft(HalfProduct::Rows(half32.view()), nx, Threads::One);
            close(
                &got.into_dyn(),
                &upsampled_dft(full.view(), 5, 4.0, &offsets),
                1e-4,
            );
        }
    }

    #[test]
    fn the_kernel_rows_match_the_direct_formula() {
        for (n, region, u, offset) in [
            (2048, 30, 20.0, 14.7),
            (7, 151, 100.0, 75.0),
            (1, 3, 1.0, 1.0),
            (2048, 1500, 1000.0, 750.0),
        ] {
            let k = kernel(n, region, u, offset);
            for ((r, col), &z) in k.indexed_iter() {
                let phase = 2.0 * PI * (r as f64 - offset) * signed_bin(col, n) / (n as f64 * u);
                let want = Complex::from_polar(1.0, phase);
                assert!(
                    (z - want).norm() < 1e-14,
                    "n {n} r {r} k {col}: {z} vs {want}"
                );
            }
        }
    }

    /// [`rows_times_half`] into a fresh output.
    fn times<T: FftReal>(
        w: &Array2<Complex<f64>>,
        half: HalfProduct<'_, T>,
        threads: Threads,
    ) -> Array2<Complex<f64>> {
        let mut out = Array2::zeros((w.nrows(), half.dim().1));
        rows_times_half(
            w,
            half,
            threads,
            (&mut Vec::new(), &mut Vec::new()),
            &mut out,
        );
        out
    }

    /// [`upsampled_dft_half`] with fresh buffers, on a grid of 5 points at U = 4 and the
    /// offsets `[3.25, -1.5]`.
    fn half_dft<T: FftReal>(
        half: HalfProduct<'_, T>,
        nx: usize,
        threads: Threads,
    ) -> Array2<Complex<f64>> {
        let buffers = &mut Refinement::default();
        upsampled_dft_half(half, nx, 5, 4.0, [3.25, -1.5], threads, buffers)
    }

    /// `half` in strips, each piece filled from its columns as the fused column pass does.
    fn strips_of<T: FftReal>(half: ArrayView2<'_, Complex<T>>) -> Strips<T> {
        let (ny, m) = half.dim();
        let mut strips = Strips::new(ny, m).unwrap();
        let data = strips.as_mut_ptr();
        for (index, c0) in (0..m).step_by(Strips::<T>::COLUMNS).enumerate() {
            let width = Strips::<T>::COLUMNS.min(m - c0);
            // SAFETY: the strips' own storage, one piece at a time on this thread.
            unsafe { Strips::fill(data, ny, index, width, |q, j| half[[q, c0 + j]]) };
        }
        strips
    }

    #[test]
    fn wide_spectra_cross_piece_boundaries() {
        // Rows 1 to 5: row 0 alone, a Nyquist row or none, mirrored pairs or none; columns
        // across piece boundaries, and a last piece of one column; 67 and 70 rows: strips of
        // two chunks (34 and 36 strip rows).
        let chunked = 2 * CHUNK_ROWS + 3;
        for (ny, nx, seed) in [(1, 8, 1), (2, 2 * COLUMNS_PER_PIECE + 10, 2), (3, 66, 3)]
            .into_iter()
            .chain([(4, 2 * COLUMNS_PER_PIECE, 4), (5, 130, 5)])
            .chain([
                (chunked, 40, 6),
                (chunked + 3, 2 * COLUMNS_PER_PIECE + 2, 7),
            ])
        {
            let full = spectrum(&[ny, nx], seed);
            // Any half-width matrix checks the blocked product against a plain one.
            let half = full
                .slice(ndarray::s![.., ..nx / 2 + 1])
                .into_dimensionality::<ndarray::Ix2>()
                .unwrap();
            let w = kernel(ny, 6, 2.0, 1.3);
            for threads in [Threads::One, Threads::All] {
                let got = times(&w, HalfProduct::Rows(half.view()), threads);
                let strips = strips_of(half.view());
                assert_eq!(got, times(&w, HalfProduct::Strips(&strips), threads));
                close(&got.into_dyn(), &w.dot(&half).into_dyn(), 1e-9);
            }
        }
    }

    #[test]
    fn a_large_f32_product_split_over_threads_from_a_reversed_view() {
        // Enough work to split into ranges of pieces (each with its own strip), three chunks
        // of strip rows, f32 sums, and a view with negative strides on both axes (the pairing
        // holds for any spectrum: it needs only the weights' symmetry).
        let (ny, nx) = (4 * CHUNK_ROWS + 7, 5 * COLUMNS_PER_PIECE + 6);
        let full = spectrum(&[ny, nx], 8);
        let half = full
            .slice(ndarray::s![..;-1, ..nx / 2 + 1;-1])
            .into_dimensionality::<ndarray::Ix2>()
            .unwrap();
        let half32 = half.mapv(|z| Complex::new(z.re as f32, z.im as f32));
        let reversed32 = half32.slice(ndarray::s![..;-1, ..;-1]);
        let reversed = half32
            .mapv(|z| Complex::new(z.re as f64, z.im as f64))
            .slice_move(ndarray::s![..;-1, ..;-1]);
        let w = kernel(ny, 30, 20.0, 14.2);
        for threads in [Threads::One, Threads::All] {
            let got = times(&w, HalfProduct::Rows(reversed32), threads);
            let strips = strips_of(reversed32);
            assert_eq!(got, times(&w, HalfProduct::Strips(&strips), threads));
            close(&got.into_dyn(), &w.dot(&reversed).into_dyn(), 1e-3);
        }
    }
}
