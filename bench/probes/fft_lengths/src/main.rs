//! ns per point of rustfft's forward f32 complex transform, in place, one thread, over 16 M
//! points of lines of each length (the mean of 3 runs after one): the cameras' lengths (K2
//! 3710 x 3838, a real transform of 1919 complex points, K3 4092 rows) against the lengths of
//! small factors the alignment crops them to (3696, 3780 = 2 x 1890, 4050) and other
//! neighbours (bench/RESULTS.md).
use rustfft::{num_complex::Complex, FftPlanner};
use std::time::Instant;

fn main() {
    let mut planner = FftPlanner::<f32>::new();
    for n in [
        4096usize, 4092, 4050, 4032, 4000, 3838, 3780, 3750, 3710, 3696, 3640, 3600, 1875, 1890, 1919,
    ] {
        let fft = planner.plan_fft_forward(n);
        let lines = (16_000_000 / n).max(1);
        let mut data = vec![Complex::new(1.0f32, 0.5); n * lines];
        let mut scratch = vec![Complex::new(0.0f32, 0.0); fft.get_inplace_scratch_len()];
        fft.process_with_scratch(&mut data, &mut scratch);
        let start = Instant::now();
        for _ in 0..3 {
            fft.process_with_scratch(&mut data, &mut scratch);
        }
        let ns = start.elapsed().as_nanos() as f64 / 3.0 / (n * lines) as f64;
        println!("{n:5}: {ns:.2} ns per point");
    }
}
