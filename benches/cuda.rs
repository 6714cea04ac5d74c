//! GPU benchmarks of the `cuda` target (issue 4): `(a+b)**2` on device arrays of 2^28 f32 (each
//! call waiting, and 10 calls queued on a stream) against the driver's device-to-device copy and
//! a copy kernel, a full `add.reduce` of the same 2^28 f32 (issue 12: goal 80% of the copy's
//! bandwidth, its 4 bytes read per element against the copy's 8 moved), `add.accumulate` of
//! 2^24 f32 (the blocked scan; 8 bytes moved an element), `add.at` as a histogram of 2^22
//! points into 512x512 bins (end to end, the host's grouping of the points included, against
//! the host's `at`), and the first call in a fresh process (context creation and a kernel
//! loaded from the warm disk cache). Prints one JSON object per measurement; without a CUDA
//! device it says so and exits.
//!
//! `cargo bench --bench cuda` (needs libnvrtc.so.13 on LD_LIBRARY_PATH for the first compile).

mod common;

use common::median_ms;
use std::time::Instant;
use ufunc::cuda::{device_array, to_device, Stream};
use ufunc::prelude::*;

#[vectorize(targets = ["cuda"])]
fn square_sum(a: f32, b: f32) -> f32 {
    (a + b) * (a + b)
}

#[vectorize(targets = ["cuda"])]
fn copy(a: f32) -> f32 {
    a
}

/// Declared associative, so that its accumulation of a long row is the blocked scan.
#[vectorize(targets = ["cuda"], identity = 0.0, associative = true)]
fn add(a: f32, b: f32) -> f32 {
    a + b
}

fn first_call(started: Instant) {
    let x = ndarray::Array1::from_elem(1024, 1.0f32);
    let y = square_sum::on_device(&x, 2.0f32).and_then(|d| d.copy_to_host());
    let ms = started.elapsed().as_secs_f64() * 1e3;
    match y {
        Ok(y) => {
            assert_eq!(y[0], 9.0);
            println!("{{\"case\": \"first_call\", \"n\": 1024, \"impl\": \"ufunc-cuda\", \"ms\": {ms:.2}, \"compiles\": {}}}",
                ufunc::cuda::cuda_counters().compiles);
        }
        Err(e) => eprintln!("first call failed: {e}"),
    }
}

fn main() -> Result<(), ufunc::Error> {
    let started = Instant::now();
    if std::env::args().any(|a| a == "--first-call") {
        first_call(started);
        return Ok(());
    }
    if ufunc::cuda::cuda_simulated() {
        eprintln!(
            "cuda bench: UFUNC_CUDA_SIM=1, so these numbers time the host simulator, not a GPU"
        );
    }
    let n = 1usize << 28;
    let a = match device_array::<f32, _>(n) {
        Ok(a) => a,
        Err(Error::NoCudaDevice { reason }) => {
            eprintln!("cuda bench: no CUDA device ({reason}); nothing measured");
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let b = to_device(&ndarray::Array1::from_elem(n, 0.5f32))?;
    let mut c = device_array::<f32, _>(n)?;
    let ms = median_ms(10, || square_sum::out_device(&a, &b, &mut c).unwrap());
    let gbps = 12.0 * n as f64 / ms / 1e6;
    println!("{{\"case\": \"cuda_square_sum\", \"n\": {n}, \"impl\": \"ufunc-cuda-device\", \"ms\": {ms:.3}, \"gbps\": {gbps:.1}}}");
    let ms = median_ms(10, || copy::out_device(&a, &mut c).unwrap());
    let gbps = 8.0 * n as f64 / ms / 1e6;
    println!("{{\"case\": \"cuda_square_sum\", \"n\": {n}, \"impl\": \"d2d-copy-kernel\", \"ms\": {ms:.3}, \"gbps\": {gbps:.1}}}");
    // The reference of the goal: the driver's device-to-device copy (cuMemcpyDtoD).
    let ms = median_ms(10, || c.copy_from(&a).unwrap());
    let gbps = 8.0 * n as f64 / ms / 1e6;
    println!("{{\"case\": \"cuda_square_sum\", \"n\": {n}, \"impl\": \"d2d-memcpy\", \"ms\": {ms:.3}, \"gbps\": {gbps:.1}}}");
    let copy_gbps = gbps;
    let mut total = device_array::<f32, _>(())?;
    let ms = median_ms(10, || {
        add::reduce_out_device(&b, ufunc::Axes::All, &mut total).unwrap()
    });
    let sum = total.copy_to_host()?[()];
    assert!(
        (sum as f64 - 0.5 * n as f64).abs() <= 1e-6 * n as f64,
        "sum {sum}"
    );
    let gbps = 4.0 * n as f64 / ms / 1e6;
    let of_copy = 100.0 * gbps / copy_gbps;
    println!("{{\"case\": \"cuda_add_reduce_all\", \"n\": {n}, \"impl\": \"ufunc-cuda-device\", \"ms\": {ms:.3}, \"gbps\": {gbps:.1}, \"percent_of_memcpy\": {of_copy:.0}}}");
    // add.accumulate of 2^24 f32 (a new device array each call): 8 bytes moved an element.
    let m = 1usize << 24;
    let halves = to_device(&ndarray::Array1::from_elem(m, 0.5f32))?;
    let ms = median_ms(10, || drop(add::accumulate_device(&halves, 0).unwrap()));
    let running = add::accumulate_device(&halves, 0)?.copy_to_host()?;
    assert_eq!(running[m - 1], 0.5 * m as f32, "running sum");
    let gbps = 8.0 * m as f64 / ms / 1e6;
    let of_copy = 100.0 * gbps / copy_gbps;
    println!("{{\"case\": \"cuda_add_accumulate\", \"n\": {m}, \"impl\": \"ufunc-cuda-device\", \"ms\": {ms:.3}, \"gbps\": {gbps:.1}, \"percent_of_memcpy\": {of_copy:.0}}}");
    // add.at as a weighted 2-d histogram: 2^22 points into 512x512 bins (the points grouped
    // by bin on the host, a thread a bin), against the host's `at` (one thread, in order).
    let points = 1usize << 22;
    let ys: Vec<u32> = (0..points as u32)
        .map(|k| k.wrapping_mul(2_654_435_761) >> 23)
        .collect();
    let xs: Vec<u32> = (0..points as u32)
        .map(|k| k.wrapping_mul(40_503) % 512)
        .collect();
    let weights = ndarray::Array1::from_elem(points, 0.25f32);
    let dw = to_device(&weights)?;
    let mut hist = device_array::<f32, _>((512, 512))?;
    let ms = median_ms(5, || add::at_device(&mut hist, (&ys, &xs), &dw).unwrap());
    let mut host = ndarray::Array2::<f32>::zeros((512, 512));
    let host_ms = median_ms(3, || add::at(&mut host, (&ys, &xs), &weights).unwrap());
    let mut once = device_array::<f32, _>((512, 512))?;
    add::at_device(&mut once, (&ys, &xs), &dw)?;
    let mut want = ndarray::Array2::<f32>::zeros((512, 512));
    add::at(&mut want, (&ys, &xs), &weights)?;
    assert_eq!(once.copy_to_host()?, want, "histogram");
    println!("{{\"case\": \"cuda_add_at_histogram\", \"n\": {points}, \"impl\": \"ufunc-cuda-device, host grouping included\", \"ms\": {ms:.3}, \"host_ms\": {host_ms:.3}}}");
    // Queued on a stream: 10 calls, one sync.
    let stream = Stream::new()?;
    let ms = median_ms(3, || {
        for _ in 0..10 {
            square_sum::out_stream(&stream, &a, &b, &mut c).unwrap();
        }
        stream.synchronize().unwrap();
    }) / 10.0;
    let gbps = 12.0 * n as f64 / ms / 1e6;
    println!("{{\"case\": \"cuda_square_sum\", \"n\": {n}, \"impl\": \"ufunc-cuda-stream\", \"ms\": {ms:.3}, \"gbps\": {gbps:.1}}}");
    // The first call of a fresh process, the disk cache being warm from the calls above.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--first-call")
        .output()
        .expect("running the first-call child");
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    Ok(())
}
