//! Phase-correlation benchmarks, side by side with the Python pipelines of `bench/peers_registration.py`.
//!
//! `cargo bench --bench registration -- [--json] [--quick] [--device-only] [--startup]`: per
//! frame at 2048x2048 float32 against a fixed reference (its spectrum made once), with the
//! upsampled refinement at U = 20, after warm-up; and the start-up (plans, reference spectrum),
//! step by step on the device with `--startup` (alone, in a fresh process). On
//! `cpu`, `parallel` and, where there is a device, `cuda`, whose row also gives the time to copy
//! one frame to the device (issue 10's goal: a frame's registration within 1.2x of it).

mod common;
use ndarray::Array2;
use num_complex::Complex;
use std::hint::black_box;
use std::time::Instant;
use ufunc::cuda::{to_device_on, Stream};
use ufunc::fft::{device, FftOptions};
use ufunc::prelude::*;
use ufunc::registration::{align_movie, AlignOptions, Correlator, PccOptions, Reference};

/// A deterministic image with structure at every scale, and the same moved by `(dy, dx)`.
fn images(n: usize) -> (Array2<f32>, Array2<f32>) {
    let mut s = 12345u64;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 40) as f32 / (1u64 << 24) as f32
    };
    let noise = Array2::from_shape_simple_fn((n, n), &mut next);
    // A crude blur for large-scale structure, plus the noise for fine structure.
    let smooth = Array2::from_shape_fn((n, n), |(y, x)| {
        let (a, b) = ((y / 16) as f32, (x / 16) as f32);
        (a * 0.37 + b * 0.61).sin() + (a * 0.13 - b * 0.29).cos()
    });
    let reference = &smooth + &noise;
    let moving = Array2::from_shape_fn((n, n), |(y, x)| reference[[(y + n - 7) % n, (x + 3) % n]]);
    (reference, moving)
}

/// The phase normalisation of the cross-power spectrum, as the registration's own kernel.
#[vectorize(target = "cuda")]
fn cross_power(r: Complex<f32>, m: Complex<f32>) -> Complex<f32> {
    let z = r * m.conj();
    z / (z.re * z.re + z.im * z.im).sqrt().max(1.1920929e-5f32)
}

/// The coarse chain of a frame's registration on the device, step by step, each waited for:
/// what each costs alone, against the whole queued at once, shows how much of a frame is
/// kernels and how much the synchronisations between them.
fn steps(reference: &Array2<f32>, moving: &Array2<f32>, reps: usize) {
    let stream = Stream::new().unwrap();
    let n = reference.nrows();
    let o = FftOptions::new();
    let inverse = FftOptions::new().s(&[n, n]);
    let spectrum =
        device::rfft2_on(&stream, &to_device_on(&stream, reference).unwrap(), &o).unwrap();
    let frame = to_device_on(&stream, moving).unwrap();
    let moved = device::rfft2_on(&stream, &frame, &o).unwrap();
    let product = cross_power::on_stream(&stream, spectrum.view(), moved.view()).unwrap();
    let one = to_device_on(&stream, &ndarray::arr1(&[0.0f32])).unwrap();
    let wait = || stream.synchronize().unwrap();
    let timed = |what: &str, f: &dyn Fn()| {
        let ms = common::median_ms(reps, || {
            f();
            wait();
        });
        println!("ufunc cuda       step: {what:44} {ms:8.3} ms");
    };
    timed("upload (pageable, on the stream)", &|| {
        black_box(to_device_on(&stream, moving).unwrap());
    });
    timed("rfft2", &|| {
        black_box(device::rfft2_on(&stream, &frame, &o).unwrap());
    });
    timed("cross power (a #[vectorize] kernel)", &|| {
        black_box(cross_power::on_stream(&stream, spectrum.view(), moved.view()).unwrap());
    });
    timed("irfft2", &|| {
        black_box(device::irfft2_on(&stream, &product, &inverse).unwrap());
    });
    timed("a 4-byte read back", &|| {
        black_box(one.copy_to_host().unwrap());
    });
    timed("upload, rfft2, cross power, irfft2 queued", &|| {
        let frame = to_device_on(&stream, moving).unwrap();
        let moved = device::rfft2_on(&stream, &frame, &o).unwrap();
        let product = cross_power::on_stream(&stream, spectrum.view(), moved.view()).unwrap();
        black_box(device::irfft2_on(&stream, &product, &inverse).unwrap());
    });
}

/// What the first use of the device costs, step by step, in a process that has not used it
/// yet (`--startup`, which runs nothing else): the context, the first copy, cuFFT's first
/// plans, the registration's kernels and reference spectrum, its first frames, and the fixed
/// cost of an `align_movie` call (streams, page-locked buffers, workspaces; the first call
/// also loads the kernels that move frames into the sum, which `Correlator` does not use).
fn startup_steps(reference: &Array2<f32>, moving: &Array2<f32>) {
    let mut last = Instant::now();
    let mut lap = |what: &str| {
        let ms = last.elapsed().as_secs_f64() * 1e3;
        println!("ufunc cuda       start-up: {what:46} {ms:8.2} ms");
        last = Instant::now();
    };
    let stream = match Stream::new() {
        Ok(s) => s,
        Err(e) => return eprintln!("cuda: skipped, no device ({e})"),
    };
    lap("the context and a stream");
    let n = reference.nrows();
    let frame = to_device_on(&stream, moving).unwrap();
    stream.synchronize().unwrap();
    lap("the first copy of a frame");
    let half = device::rfft2_on(&stream, &frame, &FftOptions::new()).unwrap();
    stream.synchronize().unwrap();
    lap("the first rfft2 (cuFFT loaded, a plan)");
    black_box(device::irfft2_on(&stream, &half, &FftOptions::new().s(&[n, n])).unwrap());
    stream.synchronize().unwrap();
    lap("the first irfft2 (a plan)");
    let options = PccOptions {
        upsample_factor: 20,
        target: Target::Cuda,
        ..Default::default()
    };
    let correlator = Correlator::new(reference, &options).unwrap();
    lap("Correlator::new (kernels loaded, reference)");
    black_box(correlator.register(moving).unwrap());
    lap("its first frame");
    black_box(correlator.register(moving).unwrap());
    lap("its second frame");
    let movie = ndarray::Array3::from_shape_fn((2, n, n), |(_, y, x)| moving[[y, x]]);
    let options = AlignOptions {
        reference: Reference::First,
        target: Target::Cuda,
        upsample_factor: 20,
        ..Default::default()
    };
    black_box(align_movie(&mut movie.view(), &options).unwrap());
    lap("align_movie, 2 frames, first call (+ its kernels)");
    black_box(align_movie(&mut movie.view(), &options).unwrap());
    lap("align_movie, 2 frames, second call");
}

/// The cost of a frame inside a movie: `align_movie` over `frames` copies of `moving` held in
/// host memory (no file to read), U = 20, the median of `reps` runs after a warm-up; with the
/// first frame as the reference (one pass) and with the iterated sum (its passes counted).
fn movie_rows(moving: &Array2<f32>, target: Target, frames: usize, reps: usize, json: bool) -> f64 {
    let (ny, nx) = moving.dim();
    let movie = ndarray::Array3::from_shape_fn((frames, ny, nx), |(_, y, x)| moving[[y, x]]);
    let imp = format!("ufunc {}", target.name());
    let mut first_ms = f64::NAN;
    for (name, reference) in [("first", Reference::First), ("sum", Reference::Sum)] {
        let options = AlignOptions {
            reference,
            target,
            upsample_factor: 20,
            ..Default::default()
        };
        let iterations = align_movie(&mut movie.view(), &options).unwrap().iterations;
        let total_ms = common::median_ms(reps, || {
            black_box(align_movie(&mut movie.view(), &options).unwrap());
        });
        let ms = total_ms / frames as f64;
        // A quarter of the movie again: what the frames add, apart from the call's fixed costs.
        let quarter = movie.slice(ndarray::s![..frames / 4, .., ..]);
        let quarter_ms = common::median_ms(reps, || {
            black_box(align_movie(&mut quarter.view(), &options).unwrap());
        });
        let added = (total_ms - quarter_ms) / (frames - frames / 4) as f64;
        if reference == Reference::First {
            first_ms = ms;
        }
        if json {
            println!("{{\"case\": \"movie_frame_2048_u20_{name}\", \"n\": {ny}, \"impl\": \"{imp}\", \"ms\": {ms:.3}, \"added_ms\": {added:.3}, \"frames\": {frames}, \"iterations\": {iterations}}}");
        } else {
            println!("{imp:16} per frame of a {frames}-frame movie in memory, reference {name:5} {ms:8.2} ms ({iterations} iterations; {added:.2} ms a frame beyond the first {})", frames / 4);
        }
    }
    first_ms
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let json = args.iter().any(|a| a == "--json");
    let reps = if args.iter().any(|a| a == "--quick") {
        3
    } else {
        15
    };
    let n = 2048;
    let (reference, moving) = images(n);
    if args.iter().any(|a| a == "--startup") {
        return startup_steps(&reference, &moving);
    }
    let targets: &[Target] = if args.iter().any(|a| a == "--device-only") {
        &[Target::Cuda]
    } else {
        &[Target::Cpu, Target::Parallel, Target::Cuda]
    };
    for &target in targets {
        let options = PccOptions {
            upsample_factor: 20,
            target,
            ..Default::default()
        };
        let start = Instant::now();
        let correlator = match Correlator::new(&reference, &options) {
            Err(ufunc::Error::NoCudaDevice { reason }) => {
                eprintln!("cuda: skipped, no device ({reason})");
                continue;
            }
            made => made.unwrap(),
        };
        let first = correlator.register(&moving).unwrap();
        let startup_ms = start.elapsed().as_secs_f64() * 1e3;
        assert!(
            (first.shift[0] + 7.0).abs() < 0.06 && (first.shift[1] - 3.0).abs() < 0.06,
            "{first:?}"
        );
        let ms = common::median_ms(reps, || {
            black_box(correlator.register(black_box(&moving)).unwrap());
        });
        let imp = format!("ufunc {}", target.name());
        if json {
            println!("{{\"case\": \"pcc_frame_2048_u20\", \"n\": {n}, \"impl\": \"{imp}\", \"ms\": {ms:.3}}}");
            println!("{{\"case\": \"pcc_startup_2048_u20\", \"n\": {n}, \"impl\": \"{imp}\", \"ms\": {startup_ms:.3}, \"beyond_a_frame_ms\": {:.3}}}", startup_ms - ms);
        } else {
            println!("{imp:16} per frame {ms:8.2} ms   start-up (plans, reference, first frame) {startup_ms:8.2} ms, {:.2} ms more than a frame", startup_ms - ms);
        }
        if target == Target::Cuda {
            // The frame's copy alone, from the same pageable host memory.
            let copy_ms = common::median_ms(reps, || {
                black_box(ufunc::cuda::to_device(black_box(&moving)).unwrap());
            });
            // Where the rest goes: the same registration without the upsampled refinement.
            let coarse = Correlator::new(
                &reference,
                &PccOptions {
                    upsample_factor: 1,
                    target,
                    ..Default::default()
                },
            )
            .unwrap();
            coarse.register(&moving).unwrap();
            let coarse_ms = common::median_ms(reps, || {
                black_box(coarse.register(black_box(&moving)).unwrap());
            });
            if json {
                println!("{{\"case\": \"pcc_frame_2048_u1\", \"n\": {n}, \"impl\": \"{imp}\", \"ms\": {coarse_ms:.3}}}");
            } else {
                println!("{imp:16} per frame without refinement (upsample 1) {coarse_ms:8.2} ms");
            }
            steps(&reference, &moving, reps);
            let in_movie = movie_rows(&moving, target, 24, reps.min(5), json);
            let ratio = ms / copy_ms;
            let movie_ratio = in_movie / copy_ms;
            if json {
                println!("{{\"case\": \"frame_copy_2048\", \"n\": {n}, \"impl\": \"{imp}\", \"ms\": {copy_ms:.3}}}");
            } else {
                println!("{imp:16} frame copy {copy_ms:8.2} ms   registration / copy {ratio:.2}x   in a movie (reference first) / copy {movie_ratio:.2}x");
            }
        }
    }
}
