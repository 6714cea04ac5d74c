//! Blurs an image with a filter by FFT convolution on `cpu`, `parallel` and `cuda`, checks each
//! against a direct convolution (on a crop, to stay quick) and prints the timings.
//!
//! ```text
//! cargo run --release --example fft_convolution -- [--size 2048] [--kernel 31]
//! UFUNC_CUDA_SIM=1 cargo run --release --example fft_convolution -- --size 256   # no GPU
//! ```
//!
//! On `cuda` the steps are spelled out: upload, forward real FFTs of both inputs padded to a
//! fast length (`ufunc::fft::device`), the complex product as a `#[vectorize(target = "cuda")]`
//! kernel, the inverse FFT, download and crop to the `same` window; then the same in one call
//! (`ufunc::signal::device::fftconvolve`). Without a device the cuda rows are skipped.

use ndarray::{s, Array2};
use std::time::Instant;
use ufunc::cuda::{cuda_counters, to_device};
use ufunc::fft::{self, FftOptions};
use ufunc::prelude::*;
use ufunc::signal::{self, ConvOptions, Method, Mode};

/// The spectrum product.
#[vectorize(target = "cuda")]
fn multiply(a: Complex<f32>, b: Complex<f32>) -> Complex<f32> {
    a * b
}

/// A test image: smooth shapes plus a little pattern, so the blur has something to do.
fn image(n: usize) -> Array2<f32> {
    Array2::from_shape_fn((n, n), |(i, j)| {
        let (x, y) = (i as f32 / n as f32, j as f32 / n as f32);
        let disc = if (x - 0.4).powi(2) + (y - 0.6).powi(2) < 0.05 {
            1.0
        } else {
            0.0
        };
        disc + 0.3 * (40.0 * x).sin() * (25.0 * y).cos() + ((i * 7 + j * 13) % 17) as f32 / 170.0
    })
}

/// A normalised Gaussian filter of `k` by `k` points.
fn gaussian(k: usize) -> Array2<f32> {
    let sigma = k as f32 / 6.0;
    let c = (k / 2) as f32;
    let g = Array2::from_shape_fn((k, k), |(i, j)| {
        (-((i as f32 - c).powi(2) + (j as f32 - c).powi(2)) / (2.0 * sigma * sigma)).exp()
    });
    let total = g.sum();
    g / total
}

/// The largest difference between `blurred` (the `same` convolution of `img` with `filter`) and
/// a direct convolution over a crop of `crop` by `crop` points at the image's centre.
fn check(img: &Array2<f32>, filter: &Array2<f32>, blurred: &Array2<f32>, crop: usize) -> f32 {
    let (n, k) = (img.nrows(), filter.nrows());
    let (h, r0) = ((k - 1) / 2, n / 2 - crop / 2);
    let window = img.slice(s![
        r0 - h..r0 + crop + k - 1 - h,
        r0 - h..r0 + crop + k - 1 - h
    ]);
    let direct =
        signal::convolve(&window, filter, Mode::Valid, Method::Direct).expect("direct convolution");
    let fft = blurred.slice(s![r0..r0 + crop, r0..r0 + crop]);
    (&direct - &fft).iter().fold(0.0f32, |m, d| m.max(d.abs()))
}

/// The blur on `cuda`, step by step; `Err` without a device.
fn blur_cuda(img: &Array2<f32>, filter: &Array2<f32>) -> Result<Array2<f32>> {
    let (n, k) = (img.nrows(), filter.nrows());
    let full = n + k - 1;
    let fast = fft::next_fast_len_real(full).expect("a fast length");
    let (d_img, d_filter) = (to_device(img)?, to_device(filter)?);
    let before = cuda_counters();
    let padded = FftOptions::new().s(&[fast, fast]);
    let spectrum = fft::device::rfft2_with(&d_img, &padded)?;
    let filter_spectrum = fft::device::rfft2_with(&d_filter, &padded)?;
    let product = multiply::on_device(&spectrum, &filter_spectrum)?;
    let result = fft::device::irfft2_with(&product, &padded)?;
    let moved = cuda_counters().host_to_device - before.host_to_device;
    assert_eq!(moved, 0, "nothing is uploaded between the transforms");
    let start = (full - n) / 2;
    let whole = result.copy_to_host()?;
    Ok(whole
        .slice(s![start..start + n, start..start + n])
        .to_owned())
}

fn run(n: usize, k: usize, crop: usize) -> Result<Vec<(String, f64, f32)>> {
    let (img, filter) = (image(n), gaussian(k));
    let mut rows = Vec::new();
    for target in [Target::Cpu, Target::Parallel] {
        let options = ConvOptions::new(Mode::Same)
            .method(Method::Fft)
            .target(target);
        let t = Instant::now();
        let blurred = signal::convolve_with(&img, &filter, &options)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        rows.push((target.to_string(), ms, check(&img, &filter, &blurred, crop)));
    }
    match blur_cuda(&img, &filter) {
        Ok(_) => {
            // Once to compile and plan, then timed.
            let t = Instant::now();
            let blurred = blur_cuda(&img, &filter)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            rows.push((
                "cuda (steps)".into(),
                ms,
                check(&img, &filter, &blurred, crop),
            ));
            let (d_img, d_filter) = (to_device(&img)?, to_device(&filter)?);
            signal::device::fftconvolve(&d_img, &d_filter, Mode::Same)?;
            let t = Instant::now();
            let blurred = signal::device::fftconvolve(&d_img, &d_filter, Mode::Same)?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let blurred = blurred.copy_to_host()?;
            rows.push((
                "cuda (fftconvolve, device data)".into(),
                ms,
                check(&img, &filter, &blurred, crop),
            ));
        }
        Err(Error::NoCudaDevice { reason }) => println!("cuda: skipped ({reason})"),
        Err(e) => return Err(e),
    }
    Ok(rows)
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut n, mut k) = (2048, 31);
    while let Some(a) = args.next() {
        let value = args.next().and_then(|v| v.parse().ok());
        match (a.as_str(), value) {
            ("--size", Some(v)) => n = v,
            ("--kernel", Some(v)) => k = v,
            _ => {
                eprintln!("usage: fft_convolution [--size N] [--kernel K]");
                std::process::exit(2);
            }
        }
    }
    if k % 2 == 0 || k > n / 2 {
        eprintln!("the kernel size must be odd and at most half the image size");
        std::process::exit(2);
    }
    let crop = 64.min(n / 2);
    if ufunc::cuda::cuda_simulated() {
        println!("cuda runs on the host simulator (UFUNC_CUDA_SIM=1): its times are not a GPU's");
    }
    println!(
        "blurring a {n}x{n} float32 image with a {k}x{k} Gaussian (FFT convolution, mode same)"
    );
    for (target, ms, err) in run(n, k, crop)? {
        println!(
            "{target:>32}: {ms:8.1} ms, max |fft - direct| on a {crop}x{crop} crop: {err:.2e}"
        );
        assert!(err < 1e-4, "{target}: the FFT convolution is off by {err}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// Every target (cuda where there is a device or the simulator) agrees with the direct
    /// convolution on a small image.
    #[test]
    fn blurs_agree_with_direct_convolution() {
        let rows = super::run(96, 7, 32).expect("runs");
        assert!(rows.len() >= 2);
        for (target, _, err) in rows {
            assert!(err < 1e-4, "{target}: {err}");
        }
    }
}
