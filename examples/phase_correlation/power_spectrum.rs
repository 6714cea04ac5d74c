//! `--ps-grouping`: the power spectrum that RELION's motion correction writes for CTFFIND
//! (`--grouping_for_ps`, `NAME_PS.mrc`), made from the groups' amplitude spectra summed
//! ([`ufunc::registration::AlignedSums::spectrum`]) as RELION makes it: the spectrum of the
//! binned frames (RELION bins them before anything else), made square, cut to CTFFIND's
//! 1.4 Å where the pixels are smaller, and resampled to `--ps-size` pixels.

use crate::binning::fourier_crop;
use anyhow::{bail, Result};
use ndarray::{s, Array2, ArrayView2};

/// The pixel size (Å) whose Nyquist frequency the power spectrum reaches at most: CTFFIND 4.1's
/// default, as RELION cuts to it.
pub const CTFFIND_PIXEL_SIZE: f64 = 1.4;

/// RELION's power spectrum of a movie: the image and the pixel size (Å) that CTFFIND reads it
/// at (the spectrum of a micrograph of those pixels).
pub struct PowerSpectrum {
    pub image: Array2<f32>,
    pub pixel_size: f64,
}

/// Where the power spectrum's pixels come from: the side of the square spectrum, the side
/// of its centre that is kept, and the pixel size (Å) of a micrograph whose spectrum that is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Geometry {
    pub side: usize,
    pub kept: usize,
    pub pixel_size: f64,
}

impl Geometry {
    /// For frames of `nx` columns of `pixel_size` Å whose sum is binned to `binned`, and a
    /// power spectrum of `size` pixels a side: an error where fewer than `size` pixels are
    /// kept to resample (RELION's too).
    pub fn of(nx: usize, binned: (usize, usize), pixel_size: f64, size: usize) -> Result<Geometry> {
        let mut pixel_size = pixel_size * nx as f64 / binned.1 as f64;
        let side = binned.0.min(binned.1);
        let mut kept = side;
        // Compared in f32, as the pixel size is given: `--pixel-size 1.4` is not smaller.
        if (pixel_size as f32) < CTFFIND_PIXEL_SIZE as f32 {
            let cut = (side as f64 * pixel_size / CTFFIND_PIXEL_SIZE).ceil() as usize;
            // Even, and never more than there is (an odd side just under 1.4 Å).
            let cut = cut + cut % 2;
            if cut < side {
                kept = cut;
                pixel_size = side as f64 * pixel_size / kept as f64;
            }
        }
        if size > kept {
            // `--ps-size` is even.
            let most = kept & !1;
            bail!(
                "--ps-size {size} is more than the {kept} pixels the power spectrum of the \
                 {}x{} sum has{}: choose at most {most}",
                binned.0,
                binned.1,
                match kept < side {
                    true => format!(" to {CTFFIND_PIXEL_SIZE} Å"),
                    false => String::new(),
                }
            );
        }
        Ok(Geometry {
            side,
            kept,
            pixel_size,
        })
    }
}

/// From `spectrum`, a movie's groups' amplitude spectra summed (centred, of frames of
/// `pixel_size` Å), the power spectrum RELION writes at `size` pixels a side for a sum binned
/// to `binned` `(rows, cols)` (of the binned sum's pixel size, `pixel_size` times the frames'
/// columns over the sum's, where RELION takes `pixel_size` times the binning factor: the same
/// but where `--bin` leaves a side that is not a whole multiple): the centre of `binned` (the
/// binned frames' spectrum); made
/// square by resampling the longer side to the shorter (a Fourier crop, as RELION's, which
/// makes a pixel the same frequency step both ways); the centre that reaches 1.4 Å kept where
/// the pixels are smaller (an even side, the pixel size grown to match); resampled to `size`.
/// An error as [`Geometry::of`].
pub fn relion_power_spectrum(
    spectrum: ArrayView2<'_, f32>,
    binned: (usize, usize),
    pixel_size: f64,
    size: usize,
) -> Result<PowerSpectrum> {
    let geometry = Geometry::of(spectrum.ncols(), binned, pixel_size, size)?;
    let binned = centre(spectrum, binned);
    let square = fourier_crop(binned.view(), (geometry.side, geometry.side))?;
    let kept = centre(square.view(), (geometry.kept, geometry.kept));
    Ok(PowerSpectrum {
        image: fourier_crop(kept.view(), (size, size))?,
        pixel_size: geometry.pixel_size,
    })
}

/// The `(rows, cols)` around the centre of a centred spectrum (zero frequency at
/// `(rows / 2, cols / 2)`, in both).
fn centre(spectrum: ArrayView2<'_, f32>, (rows, cols): (usize, usize)) -> Array2<f32> {
    let (ny, nx) = spectrum.dim();
    let (y0, x0) = (ny / 2 - rows / 2, nx / 2 - cols / 2);
    spectrum.slice(s![y0..y0 + rows, x0..x0 + cols]).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A centred amplitude spectrum of `(ny, nx)` frames of `pixel` Å with a ring at
    /// `frequency` (1/Å).
    fn ring((ny, nx): (usize, usize), pixel: f64, frequency: f64) -> Array2<f32> {
        Array2::from_shape_fn((ny, nx), |(r, c)| {
            let fy = (r as f64 - (ny / 2) as f64) / (ny as f64 * pixel);
            let fx = (c as f64 - (nx / 2) as f64) / (nx as f64 * pixel);
            (-((fy.hypot(fx) - frequency) / 0.02).powi(2)).exp() as f32
        })
    }

    /// The distance from the centre, along a row and along a column, at which `image` peaks.
    fn ring_radii(image: &Array2<f32>) -> (f64, f64) {
        let n = image.nrows();
        let peak = |values: Vec<f32>| {
            let k = (0..values.len())
                .max_by(|&a, &b| values[a].total_cmp(&values[b]))
                .unwrap();
            // The parabola through the peak and its neighbours.
            let (l, m, r) = (values[k - 1], values[k], values[k + 1]);
            k as f64 + 0.5 * (l - r) as f64 / (l - 2.0 * m + r) as f64
        };
        let along_row = peak((n / 2 + 2..n).map(|c| image[[n / 2, c]]).collect());
        let along_col = peak((n / 2 + 2..n).map(|r| image[[r, n / 2]]).collect());
        (along_row + 2.0, along_col + 2.0)
    }

    /// A ring at 1/5 Å⁻¹ of non-square frames of 0.5 Å lands where CTFFIND looks for it:
    /// `frequency x size x pixel size` pixels from the centre of the result, both ways.
    #[test]
    fn a_ring_lands_at_its_frequency_both_ways() {
        let spectrum = ring((200, 300), 0.5, 0.2);
        let ps = relion_power_spectrum(spectrum.view(), (200, 300), 0.5, 64).unwrap();
        assert_eq!(ps.image.dim(), (64, 64));
        // 200 pixels cut to ceil(200 x 0.5 / 1.4) = 72, of 100 / 72 Å.
        assert!(
            (ps.pixel_size - 100.0 / 72.0).abs() < 1e-12,
            "{}",
            ps.pixel_size
        );
        let expected = 0.2 * 64.0 * ps.pixel_size;
        let (x, y) = ring_radii(&ps.image);
        assert!(
            (x - expected).abs() < 0.3 && (y - expected).abs() < 0.3,
            "the ring at {x:.2} and {y:.2} pixels, not {expected:.2}"
        );
    }

    /// Binned frames keep the centre of the spectrum at the binned pixel size; pixels of
    /// 1.4 Å or more are not cut, nor are odd sides just under it; too large a size is refused,
    /// naming both sizes and an even one to choose.
    #[test]
    fn binned_and_large_pixels_and_sizes() {
        for (side, pixel) in [(41, 1.4f32), (41, 1.39), (41, 1.38), (40, 1.39)] {
            let spectrum = ring((side, side), pixel as f64, 0.1);
            let ps = relion_power_spectrum(spectrum.view(), (side, side), pixel as f64, 20);
            let ps = ps.unwrap();
            assert_eq!(ps.image.dim(), (20, 20), "{side} {pixel}");
        }
        let odd = ring((41, 41), 1.4, 0.1);
        let error = relion_power_spectrum(odd.view(), (41, 41), 1.4f32 as f64, 42)
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.ends_with("41 pixels the power spectrum of the 41x41 sum has: choose at most 40"),
            "{error}"
        );
        let spectrum = ring((128, 128), 1.0, 0.15);
        let ps = relion_power_spectrum(spectrum.view(), (64, 64), 1.0, 64).unwrap();
        assert_eq!(ps.pixel_size, 2.0);
        let (x, y) = ring_radii(&ps.image);
        let expected = 0.15 * 64.0 * 2.0;
        assert!(
            (x - expected).abs() < 0.3 && (y - expected).abs() < 0.3,
            "{x} {y}"
        );
        assert_eq!(
            ps.image,
            spectrum.slice(s![32..96, 32..96]),
            "the centre itself, at its size"
        );
        let error = relion_power_spectrum(spectrum.view(), (128, 128), 1.0, 100)
            .err()
            .unwrap()
            .to_string();
        assert_eq!(
            error,
            "--ps-size 100 is more than the 92 pixels the power spectrum of the 128x128 \
             sum has to 1.4 Å: choose at most 92"
        );
        let error = relion_power_spectrum(spectrum.view(), (64, 64), 1.0, 100)
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("than the 64 pixels"), "{error}");
    }
}
