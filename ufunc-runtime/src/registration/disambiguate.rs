//! scikit-image's `disambiguate=True`: a shift found by phase correlation is known only modulo
//! the image's size along each axis, so `s` and `s - n` are both candidates. The moving image,
//! shifted periodically by the found shift, is cut where its own borders landed into `2^ndim`
//! tiles; each tile is compared with the same tile of the reference by Pearson correlation, and
//! the tile that correlates best says, per axis, which of the two candidates is the real one.
//!
//! As scikit-image: tiles of 2 points or fewer, and tiles without variance (NaN), never win;
//! where no tile wins the shift is returned as found (scikit-image warns). One difference: a
//! sub-pixel shift moves the image by a Fourier shift here, where scikit-image interpolates with
//! a cubic spline; a whole-pixel shift is the same exact roll in both.

use super::pcc::complex_fftn_inplace;
use super::Space;
use crate::alloc::try_zeroed_fft;
use crate::error::Result;
use crate::fft::{FftElement, FftReal};
use crate::Target;
use ndarray::{ArrayBase, ArrayD, ArrayViewD, Data, Dimension, IxDyn, Slice, Zip};
use num_complex::Complex;
use std::f64::consts::PI;

/// The real shift among the periodic candidates of `shift` (see the module docs), for the
/// inputs `reference` and `moving` as given to `phase_cross_correlation` (in `space`).
pub(super) fn disambiguate<A, S1, S2, D>(
    reference: &ArrayBase<S1, D>,
    moving: &ArrayBase<S2, D>,
    shift: &[f64],
    space: Space,
    target: Target,
) -> Result<Vec<f64>>
where
    A: FftElement,
    S1: Data<Elem = A>,
    S2: Data<Elem = A>,
    D: Dimension,
{
    // `cuda` registers on the device, but the tiles are compared here, on every core.
    let target = match target {
        Target::Cpu => Target::Cpu,
        _ => Target::Parallel,
    };
    // Every copy is fallible: three images of `Complex<f64>`, 16 bytes a point.
    let image = |a: ArrayViewD<'_, A>| -> Result<ArrayD<Complex<f64>>> {
        let mut z = try_zeroed_fft::<Complex<f64>, IxDyn>(&a.raw_dim())?;
        Zip::from(&mut z).and(&a).for_each(|z, &v| {
            let c = v.to_complex();
            *z = Complex::new(c.re.as_f64(), c.im.as_f64());
        });
        if space == Space::Fourier {
            // Spectra are compared as the images they transform back to.
            complex_fftn_inplace(&mut z, true, target)?;
        }
        Ok(z)
    };
    let reference = image(reference.view().into_dyn())?;
    let moving = image(moving.view().into_dyn())?;
    let shape = reference.shape().to_vec();
    let positive: Vec<f64> = shift
        .iter()
        .zip(&shape)
        .map(|(&s, &n)| s.rem_euclid(n as f64))
        .collect();
    let mut shifted = shifted(&moving, shift, target)?;
    if !A::COMPLEX && space == Space::Real {
        // A real image moved by a fraction of a pixel stays real (the Fourier shift leaves an
        // imaginary part at the Nyquist frequency of an even axis).
        shifted.mapv_inplace(|z| Complex::new(z.re, 0.0));
    }
    // NumPy's `round` (half to even), as scikit-image cuts the tiles.
    let cuts: Vec<usize> = positive
        .iter()
        .zip(&shape)
        .map(|(&p, &n)| (p.round_ties_even() as usize).min(n))
        .collect();
    let ndim = shape.len();
    let mut best: Option<(f64, usize)> = None;
    // itertools.product's order: the first axis slowest, its low part (below the cut) first.
    for tile in 0..1usize << ndim {
        let bounds = |axis: usize| match is_high(tile, axis, ndim) {
            false => Slice::from(0..cuts[axis]),
            true => Slice::from(cuts[axis]..),
        };
        let a = reference.slice_each_axis(|ax| bounds(ax.axis.index()));
        let b = shifted.slice_each_axis(|ax| bounds(ax.axis.index()));
        let corr = if a.len() > 2 { pearson(a, b) } else { -1.0 };
        if corr > best.map_or(-1.0, |(c, _)| c) {
            best = Some((corr, tile));
        }
    }
    let Some((_, tile)) = best else {
        return Ok(shift.to_vec());
    };
    Ok((0..ndim)
        .map(|axis| match is_high(tile, axis, ndim) {
            true => positive[axis],
            false => positive[axis] - shape[axis] as f64,
        })
        .collect())
}

/// Whether tile number `tile` lies above the cut along `axis` (bit `axis` from the top).
fn is_high(tile: usize, axis: usize, ndim: usize) -> bool {
    (tile >> (ndim - 1 - axis)) & 1 == 1
}

/// `image` moved by `shift` periodically (scipy's `ndimage.shift` with `mode='grid-wrap'`):
/// an exact roll for whole pixels, a Fourier shift otherwise.
fn shifted(
    image: &ArrayD<Complex<f64>>,
    shift: &[f64],
    target: Target,
) -> Result<ArrayD<Complex<f64>>> {
    let shape = image.shape().to_vec();
    let mut out = try_zeroed_fft::<Complex<f64>, IxDyn>(&image.raw_dim())?;
    if shift.iter().all(|s| s.fract() == 0.0) {
        // out[i] = in[(i - s) mod n] along each axis.
        let from: Vec<Vec<usize>> = shape
            .iter()
            .zip(shift)
            .map(|(&n, &s)| {
                (0..n as i64)
                    .map(|i| (i - s as i64).rem_euclid(n as i64) as usize)
                    .collect()
            })
            .collect();
        out.indexed_iter_mut().for_each(|(i, v)| {
            let mut at = i.clone();
            for (d, from) in from.iter().enumerate() {
                at[d] = from[i[d]];
            }
            *v = image[at];
        });
        return Ok(out);
    }
    out.assign(image);
    complex_fftn_inplace(&mut out, false, target)?;
    for (k, v) in out.indexed_iter_mut() {
        let phase: f64 = (0..shape.len())
            .map(|d| {
                let n = shape[d];
                let f = if k[d] < n.div_ceil(2) {
                    k[d] as f64
                } else {
                    k[d] as f64 - n as f64
                };
                -2.0 * PI * f / n as f64 * shift[d]
            })
            .sum();
        *v *= Complex::from_polar(1.0, phase);
    }
    complex_fftn_inplace(&mut out, true, target)?;
    Ok(out)
}

/// NumPy's `corrcoef(a, b)[0, 1]` of two tiles (flattened), its real part: complex tiles
/// compare by it as NumPy orders complex numbers (the real part first). NaN without variance.
fn pearson(a: ArrayViewD<'_, Complex<f64>>, b: ArrayViewD<'_, Complex<f64>>) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.sum() / n, b.sum() / n);
    let (mut cov, mut va, mut vb) = (Complex::new(0.0, 0.0), 0.0, 0.0);
    Zip::from(&a).and(&b).for_each(|&x, &y| {
        let (dx, dy) = (x - ma, y - mb);
        cov += dx * dy.conj();
        va += dx.norm_sqr();
        vb += dy.norm_sqr();
    });
    // Each deviation's norm on its own, as NumPy divides by each: their product could
    // overflow or underflow for values far from 1.
    (cov.re / (va.sqrt() * vb.sqrt())).clamp(-1.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Fourier shift moves an image the way the whole-pixel roll does (scipy's
    /// `ndimage.shift`: `out[i] = in[i - s]`), so sub-pixel shifts go the same way.
    #[test]
    fn the_fourier_shift_moves_as_the_roll() {
        let shape = [6, 5, 4];
        let image = ArrayD::from_shape_fn(IxDyn(&shape), |i| {
            Complex::new((i[0] * 31 + i[1] * 7 + i[2] * 3) as f64 % 11.0, 0.0)
        });
        let roll = shifted(&image, &[2.0, -1.0, 3.0], Target::Cpu).unwrap();
        assert_eq!(roll[[2, 4, 3]], image[[0, 0, 0]]);
        assert_eq!(roll[[0, 0, 0]], image[[4, 1, 1]]);
        // Nearly whole pixels go through the Fourier shift.
        let nearly = shifted(&image, &[2.0 + 1e-9, -1.0, 3.0], Target::Cpu).unwrap();
        for (a, b) in nearly.iter().zip(&roll) {
            assert!((a - b).norm() < 1e-6, "{a} vs {b}");
        }
    }
}
