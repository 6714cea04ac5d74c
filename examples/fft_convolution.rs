//! Blurs an image with a Gaussian filter by FFT convolution (`ufunc::signal`, SciPy's
//! `fftconvolve(image, kernel, mode="same")`) on each target, checks every result against a
//! direct convolution at sample points, and prints the timings:
//!
//! ```text
//! cargo run --release --example fft_convolution -- [--size 2048] [--kernel 31]
//! ```

use clap::Parser;
use ndarray::{Array2, ArrayView2};
use std::time::Instant;
use ufunc::signal::{convolve_with, ConvOptions, Method, Mode};
use ufunc::Target;

/// FFT convolution of a synthetic image with a Gaussian blur on each target.
#[derive(Parser, Debug)]
struct Args {
    /// The image is SIZE x SIZE float32.
    #[arg(long, default_value_t = 2048)]
    size: usize,
    /// The filter is KERNEL x KERNEL (odd), a Gaussian of sigma KERNEL/6.
    #[arg(long, default_value_t = 31)]
    kernel: usize,
    /// Timed repetitions per target (the best is printed).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
}

/// A test card: a grid of bright lines, a ring and a ramp, so that blurring is visible.
fn image(n: usize) -> Array2<f32> {
    Array2::from_shape_fn((n, n), |(y, x)| {
        let (fy, fx) = (y as f32 / n as f32 - 0.5, x as f32 / n as f32 - 0.5);
        let grid = if y % 64 < 2 || x % 64 < 2 { 1.0 } else { 0.0 };
        let ring = if ((fy * fy + fx * fx).sqrt() - 0.3).abs() < 0.01 {
            2.0
        } else {
            0.0
        };
        grid + ring + 0.25 * fx
    })
}

/// A normalised k x k Gaussian.
fn gaussian(k: usize) -> Array2<f32> {
    let sigma = k as f32 / 6.0;
    let c = (k / 2) as f32;
    let g = Array2::from_shape_fn((k, k), |(y, x)| {
        (-((y as f32 - c).powi(2) + (x as f32 - c).powi(2)) / (2.0 * sigma * sigma)).exp()
    });
    let total = g.sum();
    g / total
}

/// The `same` convolution at output pixel `(y, x)`, summed directly in f64.
fn direct_at(image: ArrayView2<'_, f32>, kernel: ArrayView2<'_, f32>, y: usize, x: usize) -> f64 {
    let (n, m) = image.dim();
    let (ky, kx) = kernel.dim();
    let mut sum = 0.0f64;
    for i in 0..ky {
        for j in 0..kx {
            // Full-convolution index y + ky/2, so that `same` is centred on the image.
            let (sy, sx) = (
                (y + ky / 2) as isize - i as isize,
                (x + kx / 2) as isize - j as isize,
            );
            if (0..n as isize).contains(&sy) && (0..m as isize).contains(&sx) {
                sum += image[[sy as usize, sx as usize]] as f64 * kernel[[i, j]] as f64;
            }
        }
    }
    sum
}

/// The largest error of `blurred` against the direct sums at a spread of points (corners and
/// edges included), relative to the largest value of the image.
fn check(image: &Array2<f32>, kernel: &Array2<f32>, blurred: &Array2<f32>) -> f64 {
    let n = image.nrows();
    let points = [0, 1, n / 7, n / 3, n / 2, n - 2, n - 1];
    let scale = image.iter().fold(0.0f32, |a, &v| a.max(v.abs())) as f64;
    let mut worst = 0.0f64;
    for &y in &points {
        for &x in &points {
            let want = direct_at(image.view(), kernel.view(), y, x);
            worst = worst.max((blurred[[y, x]] as f64 - want).abs() / scale);
        }
    }
    worst
}

/// Blurs on `target` `repeat` times: the last result and the best time in milliseconds.
fn blur(
    image: &Array2<f32>,
    kernel: &Array2<f32>,
    method: Method,
    target: Target,
    repeat: usize,
) -> Result<(Array2<f32>, f64), ufunc::Error> {
    let options = ConvOptions::new(Mode::Same).method(method).target(target);
    let mut best = f64::INFINITY;
    let mut out = None;
    for _ in 0..repeat.max(1) {
        let start = Instant::now();
        out = Some(convolve_with(image, kernel, &options)?);
        best = best.min(start.elapsed().as_secs_f64() * 1e3);
    }
    Ok((out.expect("at least one repetition"), best))
}

fn run(args: &Args) -> Result<Vec<(String, f64, f64)>, ufunc::Error> {
    let (image, kernel) = (image(args.size), gaussian(args.kernel));
    let mut rows = Vec::new();
    for target in [Target::Cpu, Target::Parallel] {
        for method in [Method::Fft, Method::OverlapAdd] {
            let (blurred, ms) = blur(&image, &kernel, method, target, args.repeat)?;
            assert_eq!(blurred.dim(), image.dim());
            let error = check(&image, &kernel, &blurred);
            rows.push((format!("{} {method:?}", target.name()), ms, error));
        }
    }
    Ok(rows)
}

fn main() -> Result<(), ufunc::Error> {
    let args = Args::parse();
    println!(
        "blurring a {n}x{n} float32 image with a {k}x{k} Gaussian (same mode)",
        n = args.size,
        k = args.kernel
    );
    for (name, ms, error) in run(&args)? {
        println!("{name:24} {ms:9.2} ms   max error vs direct {error:.1e}");
        if error > 1e-5 {
            eprintln!("{name}: the result differs from the direct convolution");
            std::process::exit(1);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_target_agrees_with_the_direct_convolution() {
        let args = Args::parse_from(["fft_convolution", "--size", "200", "--kernel", "15"]);
        let rows = run(&args).unwrap();
        assert_eq!(rows.len(), 4);
        for (name, _, error) in rows {
            assert!(error < 1e-5, "{name}: {error}");
        }
    }

    #[test]
    fn a_wrong_blur_is_caught_by_the_check() {
        let (image, kernel) = (image(64), gaussian(9));
        let (mut blurred, _) = blur(&image, &kernel, Method::Fft, Target::Cpu, 1).unwrap();
        blurred[[40, 40]] += 0.01; // not a checked point
        assert!(check(&image, &kernel, &blurred) < 1e-5);
        blurred[[0, 0]] += 0.01;
        assert!(check(&image, &kernel, &blurred) > 1e-3);
    }
}
