//! FFT and FFT-convolution benchmarks, side by side with the Python peers of
//! `bench/peers_fft.py` (numpy.fft, scipy.fft with all workers, pyfftw, mkl_fft,
//! scipy.signal's fftconvolve/oaconvolve).
//!
//! `cargo bench --bench fft -- [--json] [--quick] [--device-only]`: median milliseconds after
//! warm-up, with plans held (`FftPlan`, into a preallocated output) and through the plain
//! functions; on a GPU (or the host simulator, whose times mean nothing) also the transforms of
//! `ufunc::fft::device` on device data, each call waited for (CuPy's rows in
//! `bench/peers_fft.py` are timed the same way).

mod common;
use ndarray::{Array2, ArrayView2};
use num_complex::Complex;
use std::hint::black_box;
use ufunc::fft::{self, FftOptions, FftPlan};
use ufunc::signal::{self, ConvOptions, Method, Mode};
use ufunc::Target;

fn image(ny: usize, nx: usize, seed: u64) -> Array2<f32> {
    let mut s = seed;
    Array2::from_shape_simple_fn((ny, nx), || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 40) as f32 / (1u64 << 24) as f32
    })
}

struct Report {
    json: bool,
}

impl Report {
    /// One measurement of `case` (on `n` x `n` data).
    fn row(&self, case: &str, n: usize, imp: &str, ms: f64) {
        if self.json {
            println!("{{\"case\": \"{case}\", \"n\": {n}, \"impl\": \"{imp}\", \"ms\": {ms:.3}}}");
        } else {
            println!("{case:28} {imp:24} {ms:9.2} ms");
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let report = Report {
        json: args.iter().any(|a| a == "--json"),
    };
    let reps = if args.iter().any(|a| a == "--quick") {
        3
    } else {
        15
    };
    let img = image(2048, 2048, 1);
    let cimg = img.mapv(|v| Complex::new(v, 0.5 - v));
    device_rows(&report, reps, &img, &cimg);
    if args.iter().any(|a| a == "--device-only") {
        return;
    }
    let rows = image(4096, 4096, 2);
    for target in [Target::Parallel, Target::Cpu] {
        let name = |what: &str| format!("ufunc {target} {what}");
        let o = FftOptions::new().target(target);

        let plan = FftPlan::fftn(&[2048, 2048], &o).unwrap();
        let mut out = Array2::<Complex<f32>>::zeros((2048, 2048));
        let ms = common::median_ms(reps, || plan.execute_into(&cimg, &mut out).unwrap());
        report.row("fft2_c2c_2048_f32", 2048, &name("plan"), ms);
        let ms = common::median_ms(reps, || {
            black_box(fft::fft2_with(&cimg, &o).unwrap());
        });
        report.row("fft2_c2c_2048_f32", 2048, &name("fft2"), ms);

        let plan = FftPlan::rfftn(&[2048, 2048], &o).unwrap();
        let mut half = Array2::<Complex<f32>>::zeros((2048, 1025));
        let ms = common::median_ms(reps, || plan.execute_into(&img, &mut half).unwrap());
        report.row("rfft2_r2c_2048_f32", 2048, &name("plan"), ms);
        let ms = common::median_ms(reps, || {
            black_box(fft::rfft2_with(&img, &o).unwrap());
        });
        report.row("rfft2_r2c_2048_f32", 2048, &name("rfft2"), ms);

        let plan = FftPlan::irfftn(&[2048, 1025], &o.clone().s(&[2048, 2048])).unwrap();
        let mut back = Array2::<f32>::zeros((2048, 2048));
        let ms = common::median_ms(reps, || plan.execute_into(&half, &mut back).unwrap());
        report.row("irfft2_c2r_2048_f32", 2048, &name("plan"), ms);

        let rows_c: ArrayView2<'_, f32> = rows.view();
        let plan = FftPlan::fftn(&[4096, 4096], &o.clone().axis(1)).unwrap();
        let mut out = Array2::<Complex<f32>>::zeros((4096, 4096));
        let ms = common::median_ms(reps, || plan.execute_into(&rows_c, &mut out).unwrap());
        report.row("fft_rows_4096x4096_f32", 4096, &name("plan"), ms);
        let plan = FftPlan::rfftn(&[4096, 4096], &o.clone().axis(1)).unwrap();
        let mut out = Array2::<Complex<f32>>::zeros((4096, 2049));
        let ms = common::median_ms(reps, || plan.execute_into(&rows_c, &mut out).unwrap());
        report.row("rfft_rows_4096x4096_f32", 4096, &name("plan"), ms);

        // Along the outer axis (NumPy's `rfft(img, axis=0)`): columns, a block at a time.
        let plan = FftPlan::rfftn(&[2048, 2048], &o.clone().axis(0)).unwrap();
        let mut columns = Array2::<Complex<f32>>::zeros((1025, 2048));
        let ms = common::median_ms(reps, || plan.execute_into(&img, &mut columns).unwrap());
        report.row("rfft_axis0_2048_f32", 2048, &name("plan"), ms);
        let plan = FftPlan::irfftn(&[1025, 2048], &o.clone().axes(&[0]).s(&[2048])).unwrap();
        let ms = common::median_ms(reps, || plan.execute_into(&columns, &mut back).unwrap());
        report.row("irfft_axis0_2048_f32", 2048, &name("plan"), ms);

        let small = image(31, 31, 3);
        let big = image(2048, 2048, 4);
        for (case, kernel, mode) in [
            ("fftconvolve_2048_k31_same", &small, Mode::Same),
            ("fftconvolve_2048_k2048_full", &big, Mode::Full),
        ] {
            for method in [Method::Fft, Method::OverlapAdd] {
                let o = ConvOptions::new(mode).method(method).target(target);
                let ms = common::median_ms(reps.min(5), || {
                    black_box(signal::convolve_with(&img, kernel, &o).unwrap());
                });
                report.row(case, 2048, &name(&format!("{method:?}")), ms);
            }
        }
    }
}

/// The device transforms on data already on the device (skipped, with a note, without one).
fn device_rows(report: &Report, reps: usize, img: &Array2<f32>, cimg: &Array2<Complex<f32>>) {
    use ufunc::cuda::to_device;
    use ufunc::fft::device;
    let (d_img, d_cimg) = match (to_device(img), to_device(cimg)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return eprintln!("fft bench: no device rows ({e})"),
    };
    let name = |what: &str| {
        let sim = if ufunc::cuda::cuda_simulated() {
            " (simulator)"
        } else {
            ""
        };
        format!("ufunc cuda {what}{sim}")
    };
    let ms = common::median_ms(reps, || {
        black_box(device::fft2(&d_cimg).unwrap());
    });
    report.row("fft2_c2c_2048_f32", 2048, &name("fft2"), ms);
    let ms = common::median_ms(reps, || {
        black_box(device::rfft2(&d_img).unwrap());
    });
    report.row("rfft2_r2c_2048_f32", 2048, &name("rfft2"), ms);
    let half = device::rfft2(&d_img).unwrap();
    let ms = common::median_ms(reps, || {
        black_box(device::irfft2_with(&half, &FftOptions::new().s(&[2048, 2048])).unwrap());
    });
    report.row("irfft2_c2r_2048_f32", 2048, &name("irfft2"), ms);
    let small = to_device(&image(31, 31, 3)).unwrap();
    let ms = common::median_ms(reps.min(5), || {
        black_box(signal::device::fftconvolve(&d_img, &small, Mode::Same).unwrap());
    });
    report.row("fftconvolve_2048_k31_same", 2048, &name("fftconvolve"), ms);
}
