//! Phase-correlation benchmarks, side by side with the Python pipelines of `bench/peers_registration.py`.
//!
//! `cargo bench --bench registration -- [--json] [--quick] [--device-only]`: per frame at
//! 2048x2048 float32 against a fixed reference (its spectrum made once), with the upsampled
//! refinement at U = 20, after warm-up; and the start-up (plans, reference spectrum). On
//! `cpu`, `parallel` and, where there is a device, `cuda`, whose row also gives the time to copy
//! one frame to the device (issue 10's goal: a frame's registration within 1.2x of it).

mod common;
use ndarray::Array2;
use std::hint::black_box;
use std::time::Instant;
use ufunc::registration::{Correlator, PccOptions};
use ufunc::Target;

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
            println!("{{\"case\": \"pcc_startup_2048_u20\", \"n\": {n}, \"impl\": \"{imp}\", \"ms\": {startup_ms:.3}}}");
        } else {
            println!("{imp:16} per frame {ms:8.2} ms   start-up (plans, reference, first frame) {startup_ms:8.2} ms");
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
            let ratio = ms / copy_ms;
            if json {
                println!("{{\"case\": \"frame_copy_2048\", \"n\": {n}, \"impl\": \"{imp}\", \"ms\": {copy_ms:.3}}}");
            } else {
                println!("{imp:16} frame copy {copy_ms:8.2} ms   registration / copy {ratio:.2}x");
            }
        }
    }
}
