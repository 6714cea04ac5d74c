//! The synthetic default movie: a procedural specimen (blurred particles and rings over a
//! texture with structure at several scales) drifting along a smooth, known, sub-pixel
//! trajectory (fast at first, as beam-induced motion is), each frame a Fourier shift of the
//! specimen recorded with Poisson shot noise at a cryo-EM-like dose. Fully deterministic: the
//! same options give the same frames on every machine.
//!
//! Sign convention: in frame `i` the specimen has moved by `p_i` pixels (content at `(y, x)`
//! in frame 0 is at `(y + p_i[0], x + p_i[1])` in frame `i`), with `p_0 = 0`. The true shift
//! reported is `truth[i] = -p_i`: the `(dy, dx)` to apply to frame `i` to register it onto
//! frame 0, which is what `phase_cross_correlation(frame 0, frame i)` and `align_movie` return
//! (scikit-image's convention: the shift to apply to `moving`).

use ndarray::{s, Array2, Array3, Axis};
use num_complex::Complex;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Poisson};
use rand_pcg::Pcg64Mcg;
use rayon::prelude::*;
use rustfft::FftPlanner;
use std::f64::consts::TAU;

/// What to make.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SynthOptions {
    /// Number of frames.
    pub frames: usize,
    /// `(rows, cols)` of each frame.
    pub shape: (usize, usize),
    /// Mean electron count per pixel per frame; `None`: the noise-free expected image.
    pub dose: Option<f64>,
    /// Relative standard deviation of the specimen's density (cryo-EM images are weak).
    pub contrast: f64,
    /// Pixels of specimen beyond each edge: frames are cut from a larger periodic canvas so
    /// that, like real data, they are not periodic themselves (0: periodic frames).
    pub margin: usize,
    /// Seed of every random choice.
    pub seed: u64,
}

impl Default for SynthOptions {
    /// 32 frames of 512x512 at 1.5 counts per pixel per frame: a few seconds on two cores.
    fn default() -> Self {
        SynthOptions {
            frames: 32,
            shape: (512, 512),
            dose: Some(1.5),
            contrast: 0.3,
            margin: 32,
            seed: 2024,
        }
    }
}

/// A synthetic movie and the truth about it.
pub struct SynthMovie {
    /// `(frame, row, col)` counts (or expected counts without noise).
    pub frames: Array3<f32>,
    /// Per frame, the `(dy, dx)` that registers it onto frame 0 (see the module docs).
    pub truth: Vec<[f64; 2]>,
}

/// Makes the movie described by `options`.
pub fn synth_movie(options: &SynthOptions) -> SynthMovie {
    let (ny, nx) = options.shape;
    let m = options.margin;
    let canvas = (ny + 2 * m, nx + 2 * m);
    let specimen = specimen(canvas, options.contrast, options.seed);
    let drift: Vec<[f64; 2]> = (0..options.frames)
        .map(|i| drift(i, options.frames))
        .collect();
    let mut spectrum = specimen.mapv(|v| Complex::new(v, 0.0));
    fft2(&mut spectrum, false);
    let mut frames = Array3::zeros((options.frames, ny, nx));
    frames
        .outer_iter_mut()
        .collect::<Vec<_>>()
        .into_par_iter()
        .enumerate()
        .for_each(|(i, mut frame)| {
            let moved = shifted(&spectrum, drift[i]);
            let cut = moved.slice(s![m..m + ny, m..m + nx]);
            match options.dose {
                None => frame.zip_mut_with(&cut, |f, &v| *f = v as f32),
                Some(dose) => {
                    let mut rng = Pcg64Mcg::seed_from_u64(
                        options.seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                    );
                    frame.zip_mut_with(&cut, |f, &v| *f = poisson(&mut rng, dose * v.max(0.0)));
                }
            }
        });
    // `0.0 - p` rather than `-p`: frame 0 gets 0.0, not -0.0.
    let truth = drift.iter().map(|p| [0.0 - p[0], 0.0 - p[1]]).collect();
    SynthMovie { frames, truth }
}

/// A Poisson count of mean `lambda`.
fn poisson(rng: &mut Pcg64Mcg, lambda: f64) -> f32 {
    match Poisson::new(lambda) {
        Ok(p) => p.sample(rng) as f32,
        Err(_) => 0.0, // lambda == 0
    }
}

/// The specimen's displacement in frame `i` of `n`: an exponentially settling jump plus a slow
/// linear creep and a gentle curve, about 4 pixels in all, `(0, 0)` in frame 0.
fn drift(i: usize, n: usize) -> [f64; 2] {
    let t = i as f64;
    let settle = 1.0 - (-t / 4.0).exp();
    let u = t / n.max(1) as f64;
    [
        2.1 * settle + 0.6 * u + 0.3 * (std::f64::consts::PI * u).sin(),
        -2.7 * settle - 0.9 * u,
    ]
}

/// The specimen on a periodic canvas: mean 1, relative standard deviation `contrast`.
fn specimen((ny, nx): (usize, usize), contrast: f64, seed: u64) -> Array2<f64> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut image = Array2::<f64>::zeros((ny, nx));
    // Texture: plane waves of whole cycles across the canvas, amplitude ~ 1/frequency.
    for _ in 0..48 {
        let (ky, kx) = (rng.random_range(-40i32..=40), rng.random_range(-40i32..=40));
        let k = ((ky * ky + kx * kx) as f64).sqrt().max(1.0);
        let (amplitude, phase) = (0.6 / k, rng.random_range(0.0..TAU));
        // cos(a + b) = cos a cos b - sin a sin b: two 1-d tables instead of a cos per pixel.
        let row: Vec<(f64, f64)> = (0..ny)
            .map(|y| (TAU * ky as f64 * y as f64 / ny as f64 + phase).sin_cos())
            .collect();
        let col: Vec<(f64, f64)> = (0..nx)
            .map(|x| (TAU * kx as f64 * x as f64 / nx as f64).sin_cos())
            .collect();
        for ((y, x), v) in image.indexed_iter_mut() {
            *v += amplitude * (row[y].1 * col[x].1 - row[y].0 * col[x].0);
        }
    }
    // Particles: Gaussian blobs and rings (a blob less a narrower one), drawn periodically.
    let count = ny * nx / 900;
    for _ in 0..count {
        let (cy, cx) = (
            rng.random_range(0.0..ny as f64),
            rng.random_range(0.0..nx as f64),
        );
        let sigma = rng.random_range(1.5f64..7.0);
        let amplitude = rng.random_range(0.5..1.5);
        let ring = rng.random_range(0.0..1.0) < 0.4;
        let reach = (4.0 * sigma).ceil() as i64;
        for dy in -reach..=reach {
            for dx in -reach..=reach {
                let y = (cy.floor() as i64 + dy).rem_euclid(ny as i64) as usize;
                let x = (cx.floor() as i64 + dx).rem_euclid(nx as i64) as usize;
                let (ry, rx) = (cy.floor() + dy as f64 - cy, cx.floor() + dx as f64 - cx);
                let r2 = (ry * ry + rx * rx) / (sigma * sigma);
                let mut v = (-0.5 * r2).exp();
                if ring {
                    v -= (-2.0 * r2).exp();
                }
                image[[y, x]] += amplitude * v;
            }
        }
    }
    let mean = image.mean().unwrap_or(0.0);
    let std = image.std(0.0).max(f64::MIN_POSITIVE);
    image.mapv_inplace(|v| (1.0 + contrast * (v - mean) / std).max(0.0));
    image
}

/// The image whose spectrum is `spectrum`, moved by `p = (dy, dx)` pixels (periodically).
fn shifted(spectrum: &Array2<Complex<f64>>, p: [f64; 2]) -> Array2<f64> {
    let (ny, nx) = spectrum.dim();
    // Frequencies in cycles per pixel, in FFT order (negative in the upper half).
    let freq = |k: usize, n: usize| {
        if 2 * k < n {
            k as f64 / n as f64
        } else {
            k as f64 / n as f64 - 1.0
        }
    };
    let ramp = |n: usize, d: f64| -> Vec<Complex<f64>> {
        (0..n)
            .map(|k| Complex::from_polar(1.0, -TAU * freq(k, n) * d))
            .collect()
    };
    let (ry, rx) = (ramp(ny, p[0]), ramp(nx, p[1]));
    let mut moved = Array2::from_shape_fn((ny, nx), |(y, x)| spectrum[[y, x]] * ry[y] * rx[x]);
    fft2(&mut moved, true);
    let scale = 1.0 / (ny * nx) as f64;
    moved.mapv(|c| c.re * scale)
}

/// In-place 2-d FFT (unnormalised both ways): rows, then columns.
fn fft2(data: &mut Array2<Complex<f64>>, inverse: bool) {
    let mut planner = FftPlanner::new();
    for axis in [1, 0] {
        let n = data.len_of(Axis(axis));
        let fft = if inverse {
            planner.plan_fft_inverse(n)
        } else {
            planner.plan_fft_forward(n)
        };
        let mut line = vec![Complex::default(); n];
        for mut lane in data.lanes_mut(Axis(axis)) {
            line.iter_mut().zip(lane.iter()).for_each(|(l, &v)| *l = v);
            fft.process(&mut line);
            lane.iter_mut().zip(&line).for_each(|(v, &l)| *v = l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ufunc::registration::{phase_cross_correlation, PccOptions};

    fn small(dose: Option<f64>) -> SynthOptions {
        SynthOptions {
            frames: 12,
            shape: (96, 128),
            dose,
            ..Default::default()
        }
    }

    #[test]
    fn noise_free_periodic_frames_register_onto_frame_0_by_the_truth() {
        // Periodic frames (no margin): the Fourier shift is then exact, and so is the truth.
        let movie = synth_movie(&SynthOptions {
            margin: 0,
            ..small(None)
        });
        assert_eq!(movie.frames.dim(), (12, 96, 128));
        assert_eq!(movie.truth[0], [0.0, 0.0]);
        let total = movie.truth[11][0].hypot(movie.truth[11][1]);
        assert!((2.0..6.0).contains(&total), "total drift {total}");
        let reference = movie.frames.index_axis(Axis(0), 0);
        let options = PccOptions {
            upsample_factor: 100,
            ..Default::default()
        };
        for i in [1, 4, 11] {
            let r =
                phase_cross_correlation(&reference, &movie.frames.index_axis(Axis(0), i), &options)
                    .unwrap();
            let t = movie.truth[i];
            let err = (r.shift[0] - t[0]).hypot(r.shift[1] - t[1]);
            assert!(err < 0.05, "frame {i}: measured {:?}, true {t:?}", r.shift);
        }
    }

    #[test]
    fn frames_are_deterministic_poisson_counts_at_the_dose() {
        let a = synth_movie(&small(Some(1.5)));
        let b = synth_movie(&small(Some(1.5)));
        assert_eq!(a.frames, b.frames);
        assert!(a.frames.iter().all(|&v| v >= 0.0 && v.fract() == 0.0));
        let mean = a.frames.mean().unwrap();
        assert!((mean - 1.5).abs() < 0.05, "mean count {mean}");
        let other = synth_movie(&SynthOptions {
            seed: 7,
            ..small(Some(1.5))
        });
        assert_ne!(a.frames, other.frames);
    }
}
