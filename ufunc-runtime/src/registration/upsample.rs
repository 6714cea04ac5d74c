//! The upsampled DFT of Guizar-Sicairos, Thurman and Fienup (2008): the cross-correlation on a
//! small grid spaced `1/U` pixel around the coarse peak, by matrix products over the spectrum
//! instead of a `U`-times zero-padded inverse FFT.
//!
//! For a cross-power spectrum `P` the value at grid point `r` (per axis `r_d` in `0..region`)
//! is `Σ_k P[k] Π_d exp(2πi (r_d - offset_d) f_d(k_d))`, with `f_d(k) = fftfreq(n_d, U)[k]`:
//! the inverse DFT of `P` (not divided by its size) at position `(r_d - offset_d) / U`.

use crate::isa::{active_isa, IsaLevel};
use crate::parallel::{Split, Threads};
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

/// `kernel[[r, k]] = exp(2πi (r - offset) f(k) / (n U))`, for `r` in `0..region`.
fn kernel(n: usize, region: usize, upsample: f64, offset: f64) -> Array2<Complex<f64>> {
    Array2::from_shape_fn((region, n), |(r, k)| {
        let phase = 2.0 * PI * (r as f64 - offset) * signed_bin(k, n) / (n as f64 * upsample);
        Complex::from_polar(1.0, phase)
    })
}

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
/// the half only, the other half follows from Hermitian symmetry.
pub(crate) fn upsampled_dft_half<T: FftReal>(
    half: ArrayView2<'_, Complex<T>>,
    nx: usize,
    region: usize,
    upsample: f64,
    offsets: [f64; 2],
    threads: Threads,
) -> Array2<Complex<f64>> {
    let (ny, m) = half.dim();
    let ey = kernel(ny, region, upsample, offsets[0]);
    let ex = kernel(nx, region, upsample, offsets[1]);
    // g[r, j] = Σ_ky ey[r, ky] half[ky, j]: the costly product, region x ny x (nx/2 + 1).
    let g = rows_times_half(&ey, half, threads);
    // The full row contraction b[r, kx] for every kx: the columns past the half are the
    // conjugate of the mirrored column, except for the Nyquist row of an even `ny`, whose
    // frequency does not change sign under mirroring.
    let mut b = Array2::<Complex<f64>>::zeros((region, nx));
    for r in 0..region {
        for kx in 0..nx {
            b[[r, kx]] = if kx < m {
                g[[r, kx]]
            } else {
                let j = nx - kx;
                let mut v = g[[r, j]].conj();
                if ny % 2 == 0 {
                    let e = ey[[r, ny / 2]];
                    let h = half[[ny / 2, j]];
                    let h = Complex::new(h.re.as_f64(), h.im.as_f64());
                    v += Complex::new(0.0, 2.0 * e.im) * h.conj();
                }
                v
            };
        }
    }
    b.dot(&ex.t())
}

/// Columns per piece of the blocked product: a piece's accumulators (`region` rows of this
/// many columns, planar) stay in L1/L2 while every row of the spectrum streams past once.
const COLUMNS_PER_PIECE: usize = 64;

/// `weights (region x ny) · half (ny x m)`, blocked over columns and split across threads.
fn rows_times_half<T: FftReal>(
    weights: &Array2<Complex<f64>>,
    half: ArrayView2<'_, Complex<T>>,
    threads: Threads,
) -> Array2<Complex<f64>> {
    let (region, ny) = weights.dim();
    let m = half.ncols();
    let w_re: Vec<T> = weights.iter().map(|z| T::of_f64(z.re)).collect();
    let w_im: Vec<T> = weights.iter().map(|z| T::of_f64(z.im)).collect();
    let pieces = m.div_ceil(COLUMNS_PER_PIECE);
    let out = std::sync::Mutex::new(Array2::<Complex<f64>>::zeros((region, m)));
    let split = Split {
        min_work: 1 << 16,
        min_items: 2,
        pieces_per_thread: 2,
        align: 1,
    };
    split.run(threads, pieces, region * ny * COLUMNS_PER_PIECE, |range| {
        for piece in range {
            let c0 = piece * COLUMNS_PER_PIECE;
            let c1 = (c0 + COLUMNS_PER_PIECE).min(m);
            let (re, im) = accumulate(&Piece {
                w_re: &w_re,
                w_im: &w_im,
                region,
                half,
                cols: c0..c1,
            });
            let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
            for r in 0..region {
                for (j, c) in (c0..c1).enumerate() {
                    let k = r * COLUMNS_PER_PIECE + j;
                    out[[r, c]] = Complex::new(re[k].as_f64(), im[k].as_f64());
                }
            }
        }
    });
    out.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// The inputs of one piece of the blocked product.
struct Piece<'a, T> {
    w_re: &'a [T],
    w_im: &'a [T],
    region: usize,
    half: ArrayView2<'a, Complex<T>>,
    cols: std::ops::Range<usize>,
}

/// One piece of columns: planar accumulators, each spectrum row deinterleaved once and then
/// used by every weight row. Compiled for AVX2 where the CPU has it.
fn accumulate<T: FftReal>(piece: &Piece<'_, T>) -> (Vec<T>, Vec<T>) {
    #[cfg(target_arch = "x86_64")]
    if active_isa() >= IsaLevel::Avx2 {
        // SAFETY: the CPU supports AVX2 and FMA (active_isa never reports more than it has).
        return unsafe { accumulate_avx2(piece) };
    }
    accumulate_portable::<T, false>(piece)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn accumulate_avx2<T: FftReal>(piece: &Piece<'_, T>) -> (Vec<T>, Vec<T>) {
    accumulate_portable::<T, true>(piece)
}

/// With `FMA`, the multiply-adds are fused (only where the entry is compiled with FMA: elsewhere
/// `mul_add` would be a library call).
#[inline(always)]
fn accumulate_portable<T: FftReal, const FMA: bool>(piece: &Piece<'_, T>) -> (Vec<T>, Vec<T>) {
    const W: usize = COLUMNS_PER_PIECE;
    let Piece {
        w_re,
        w_im,
        region,
        half,
        ..
    } = piece;
    let (region, ny) = (*region, half.nrows());
    let mut re = vec![T::zero(); region * W];
    let mut im = vec![T::zero(); region * W];
    let (mut h_re, mut h_im) = ([T::zero(); W], [T::zero(); W]);
    let width = piece.cols.len();
    for ky in 0..ny {
        let row = half.index_axis(Axis(0), ky);
        for (j, c) in piece.cols.clone().enumerate() {
            h_re[j] = row[c].re;
            h_im[j] = row[c].im;
        }
        for j in width..W {
            h_re[j] = T::zero();
            h_im[j] = T::zero();
        }
        for r in 0..region {
            let (wr, wi) = (w_re[r * ny + ky], w_im[r * ny + ky]);
            // Fixed-size rows, so the inner loop has no bounds checks and vectorizes.
            let acc_re: &mut [T; W] = (&mut re[r * W..(r + 1) * W]).try_into().expect("W long");
            let acc_im: &mut [T; W] = (&mut im[r * W..(r + 1) * W]).try_into().expect("W long");
            for j in 0..W {
                if FMA {
                    acc_re[j] = wr.mul_add(h_re[j], (-wi).mul_add(h_im[j], acc_re[j]));
                    acc_im[j] = wr.mul_add(h_im[j], wi.mul_add(h_re[j], acc_im[j]));
                } else {
                    acc_re[j] = acc_re[j] + (wr * h_re[j] - wi * h_im[j]);
                    acc_im[j] = acc_im[j] + (wr * h_im[j] + wi * h_re[j]);
                }
            }
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
        for (ny, nx) in [(6, 8), (5, 7), (6, 7), (5, 8), (1, 4), (4, 1), (2, 2)] {
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
                let got = upsampled_dft_half(half.view(), nx, 5, 4.0, offsets, threads);
                close(
                    &got.into_dyn(),
                    &upsampled_dft(full.view(), 5, 4.0, &offsets),
                    1e-9,
                );
            }
            let half32 = half.mapv(|z| Complex::new(z.re as f32, z.im as f32));
            let got = upsampled_dft_half(half32.view(), nx, 5, 4.0, offsets, Threads::One);
            close(
                &got.into_dyn(),
                &upsampled_dft(full.view(), 5, 4.0, &offsets),
                1e-4,
            );
        }
    }

    #[test]
    fn wide_spectra_cross_piece_boundaries() {
        let (ny, nx) = (3, 2 * COLUMNS_PER_PIECE + 10);
        let full = spectrum(&[ny, nx], 4);
        // Any half-width matrix checks the blocked product against a plain one.
        let half = full
            .slice(ndarray::s![.., ..nx / 2 + 1])
            .into_dimensionality::<ndarray::Ix2>()
            .unwrap();
        let w = kernel(ny, 6, 2.0, 1.0);
        for threads in [Threads::One, Threads::All] {
            let got = rows_times_half(&w, half.view(), threads);
            close(&got.into_dyn(), &w.dot(&half).into_dyn(), 1e-9);
        }
    }
}
