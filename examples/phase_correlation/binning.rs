//! `--bin`: the aligned sum Fourier-cropped by a factor (MotionCor2's `-FtBin`), as a
//! super-resolution movie's sum is brought to the detector's physical pixels: the frequencies
//! below the new Nyquist are kept exactly, nothing above them aliases back, and the mean is
//! unchanged.

use anyhow::{Context, Result};
use ndarray::{s, Array2, ArrayView2};
use ufunc::fft::{self, FftOptions};
use ufunc::num_complex::Complex32;

/// The side of a frame of `n` pixels binned by `factor` (>= 1): even, as MotionCor2 makes it,
/// at least 2, and never more than `n` (an axis too short to bin is kept).
pub fn binned_len(n: usize, factor: f64) -> usize {
    if factor == 1.0 {
        return n;
    }
    let even = 2 * (n as f64 / factor / 2.0).round().max(1.0) as usize;
    even.min(n)
}

/// The shape of a `(rows, cols)` frame's sum binned by `factor` ([`binned_len`] of each side),
/// refused where the two sides would shrink by different factors: the sum's pixels would not
/// be square (as RELION refuses).
pub fn binned_shape((ny, nx): (usize, usize), factor: f64) -> Result<(usize, usize)> {
    let shape = (binned_len(ny, factor), binned_len(nx, factor));
    let (fy, fx) = (ny as f64 / shape.0 as f64, nx as f64 / shape.1 as f64);
    if (fy - fx).abs() > 1e-3 * fx {
        anyhow::bail!(
            "--bin {factor} makes the {ny}x{nx} frames' sum {}x{}: its pixels would be {fy:.4} by \
             {fx:.4} of the frames', not square; choose a factor that makes both sides even and \
             shrinks them alike",
            shape.0,
            shape.1
        );
    }
    Ok(shape)
}

/// `image` Fourier-cropped to `shape` (each side at most the image's): the spectrum's
/// frequencies that `shape` holds, transformed back, scaled so that the mean is kept.
pub fn fourier_crop(image: ArrayView2<'_, f32>, shape: (usize, usize)) -> Result<Array2<f32>> {
    let (ny, nx) = image.dim();
    if shape == (ny, nx) {
        return Ok(image.to_owned());
    }
    let (my, mx) = shape;
    let spectrum = fft::rfft2(&image).context("cannot transform the sum to bin it")?;
    let mut cropped =
        fft::crop_half_spectrum(&spectrum, shape).context("cannot crop the sum's spectrum")?;
    let columns = mx / 2 + 1;
    // An even side's new Nyquist row holds both the waves at +my/2 and at -my/2 (as irfft's
    // Nyquist column keeps both, through its real part): the two rows' mean, so that the crop
    // commutes with turning and mirroring the image.
    if my % 2 == 0 && my < ny {
        let plus = spectrum.slice(s![my / 2, ..columns]);
        let mut nyquist = cropped.row_mut(my / 2);
        nyquist += &plus;
        nyquist *= Complex32::new(0.5, 0.0);
    }
    let mut binned = fft::irfft2_with(&cropped, &FftOptions::new().s(&[my, mx]))
        .context("cannot transform the binned sum back")?;
    // Backward normalisation divided by the new size, the forward sum was over the old one.
    binned *= (my * mx) as f32 / (ny * nx) as f32;
    Ok(binned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::TAU;

    #[test]
    fn sides_are_even_and_never_grow() {
        assert_eq!(binned_len(11520, 2.0), 5760);
        assert_eq!(binned_len(8184, 2.0), 4092);
        assert_eq!(binned_len(4096, 1.5), 2730);
        assert_eq!(binned_len(21, 1.0), 21);
        assert_eq!(binned_len(21, 2.0), 10);
        assert_eq!(binned_len(3, 4.0), 2);
        assert_eq!(binned_len(1, 2.0), 1);
    }

    /// A band-limited image (cosines below the new Nyquist, and a constant) binned is the same
    /// cosines sampled on the coarser grid: exact but for rounding, odd and even sides alike.
    #[test]
    fn frequencies_below_the_new_nyquist_are_kept_exactly() {
        for ((ny, nx), (my, mx)) in [((64, 48), (32, 24)), ((45, 50), (22, 16)), ((9, 8), (9, 4))] {
            let waves = [
                (0.0, 0.0, 3.0),
                (2.0, 1.0, 1.5),
                (-3.0, 5.0, 0.7),
                (1.0, -7.0, 0.2),
            ];
            let waves: Vec<_> = waves
                .iter()
                .filter(|(ky, kx, _)| {
                    2.0 * f64::abs(*ky) < my.min(ny) as f64 && 2.0 * f64::abs(*kx) < mx as f64
                })
                .collect();
            let waves = &waves;
            let image = |(ry, rx): (usize, usize)| {
                move |(y, x): (usize, usize)| {
                    waves
                        .iter()
                        .map(|&&(ky, kx, a)| {
                            a * (TAU * (ky * y as f64 / ry as f64 + kx * x as f64 / rx as f64))
                                .cos()
                        })
                        .sum::<f64>() as f32
                }
            };
            let fine = Array2::from_shape_fn((ny, nx), image((ny, nx)));
            let want = Array2::from_shape_fn((my, mx), image((my, mx)));
            let got = fourier_crop(fine.view(), (my, mx)).unwrap();
            let worst = (&got - &want).iter().fold(0f32, |m, v| m.max(v.abs()));
            assert!(worst < 1e-4, "{ny}x{nx} -> {my}x{mx}: off by {worst}");
        }
    }

    /// The crop commutes with turning and mirroring the image (the new Nyquist row and column
    /// keep the same waves), on noise, even and odd sides.
    #[test]
    fn the_crop_commutes_with_turns_and_mirrors() {
        let mut state = 12345u64;
        let mut noise = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        for (n, m) in [(32, 16), (33, 16), (31, 10)] {
            let image = Array2::from_shape_fn((n, n), |_| noise());
            let crop = |a: ArrayView2<'_, f32>| fourier_crop(a, (m, m)).unwrap();
            let turned_after = crop(image.view()).reversed_axes();
            let turned_before = crop(image.view().reversed_axes());
            let mirrored_after = crop(image.view()).slice(s![..;-1, ..]).to_owned();
            // A mirror moves the wave at row frequency k to -k, and the pixel at 0 to n-1:
            // mirror about pixel 0 (the crop's origin), that is reversed and rolled by one.
            let mut mirrored = image.slice(s![..;-1, ..]).to_owned();
            for mut column in mirrored.columns_mut() {
                let last = column[n - 1];
                for i in (1..n).rev() {
                    column[i] = column[i - 1];
                }
                column[0] = last;
            }
            let mut mirrored_before = crop(mirrored.view());
            for mut column in mirrored_before.columns_mut() {
                let first = column[0];
                for i in 0..m - 1 {
                    column[i] = column[i + 1];
                }
                column[m - 1] = first;
            }
            for (a, b, what) in [
                (&turned_after, &turned_before, "turned"),
                (&mirrored_after, &mirrored_before, "mirrored"),
            ] {
                let worst = (a - b).iter().fold(0f32, |w, v| w.max(v.abs()));
                assert!(worst < 1e-5, "{n} -> {m}, {what}: off by {worst}");
            }
        }
    }

    #[test]
    fn non_square_binned_pixels_are_refused() {
        assert_eq!(binned_shape((8184, 11520), 2.0).unwrap(), (4092, 5760));
        assert_eq!(binned_shape((21, 21), 2.0).unwrap(), (10, 10));
        let err = binned_shape((21, 20), 2.0).unwrap_err().to_string();
        assert!(
            err.contains("the 21x20 frames' sum 10x10: its pixels would be 2.1000 by 2.0000"),
            "{err}"
        );
    }

    /// What lies above the new Nyquist is dropped, not folded back: a fine checkerboard bins
    /// to its mean.
    #[test]
    fn frequencies_above_it_are_dropped() {
        let fine = Array2::from_shape_fn((32, 32), |(y, x)| {
            5.0 + if (y + x) % 2 == 0 { 1.0 } else { -1.0 }
        });
        let got = fourier_crop(fine.view(), (16, 16)).unwrap();
        assert!(got.iter().all(|v| (v - 5.0).abs() < 1e-5), "{got}");
    }
}
