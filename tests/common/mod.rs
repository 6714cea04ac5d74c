//! What the integration tests share (each test crate uses part of it).
#![allow(dead_code)]

/// Distance between two f32 in representable values (0 for equal values or two NaNs).
pub fn ulps(a: f32, b: f32) -> u32 {
    if a == b || (a.is_nan() && b.is_nan()) {
        return 0;
    }
    let key = |x: f32| {
        let i = x.to_bits() as i32;
        (if i < 0 { i32::MIN - i } else { i }) as i64
    };
    (key(a) - key(b)).unsigned_abs().min(u32::MAX as u64) as u32
}

/// A deterministic pseudo-random stream (a 64-bit LCG), for test data.
pub struct Lcg(pub u64);

impl Lcg {
    /// The next value, uniform in [0, 1).
    pub fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The next value, uniform in `0..m`.
    pub fn below(&mut self, m: u64) -> u64 {
        (self.next() * m as f64) as u64
    }

    /// A Poisson sample of `mean` (Knuth's method: fine for the small means of low-dose data).
    pub fn poisson(&mut self, mean: f64) -> f64 {
        let limit = (-mean).exp();
        let (mut k, mut p) = (0.0, 1.0);
        loop {
            p *= self.next();
            if p <= limit {
                return k;
            }
            k += 1.0;
        }
    }
}

/// A fixture array (`{"shape": [...], "values": [...]}`, complex values as `[re, im]` pairs)
/// as its shape and complex f64 values.
pub fn fixture_values(v: &serde_json::Value) -> (Vec<usize>, Vec<num_complex::Complex<f64>>) {
    let shape = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap() as usize)
        .collect();
    let vals = v["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| match x.as_array() {
            Some(p) => num_complex::Complex::new(p[0].as_f64().unwrap(), p[1].as_f64().unwrap()),
            None => num_complex::Complex::new(x.as_f64().unwrap(), 0.0),
        })
        .collect();
    (shape, vals)
}

// Synthetic movies (tests/align.rs, tests/patches.rs, tests/cuda/registration.rs).

/// A Gaussian blob of a specimen: `(row, col, sigma, amplitude)`.
pub type Blob = (f64, f64, f64, f64);

/// A specimen of Gaussian blobs, sampled at `(y, x) - shift` (so the frame shows the specimen
/// moved by `shift`), scaled to a mean of about `dose` counts per pixel, with shot noise.
pub fn frame(
    shape: (usize, usize),
    shift: [f64; 2],
    dose: f64,
    blobs: &[Blob],
    rng: &mut Lcg,
) -> ndarray::Array2<f32> {
    warped_frame(shape, |_, _| shift, dose, blobs, rng)
}

/// [`frame`] with a shift of its own at each pixel: `shift_at(row, col)`.
pub fn warped_frame(
    shape: (usize, usize),
    shift_at: impl Fn(f64, f64) -> [f64; 2],
    dose: f64,
    blobs: &[Blob],
    rng: &mut Lcg,
) -> ndarray::Array2<f32> {
    ndarray::Array2::from_shape_fn(shape, |(y, x)| {
        let shift = shift_at(y as f64, x as f64);
        let v = specimen(shape, blobs, y as f64 - shift[0], x as f64 - shift[1]);
        rng.poisson(dose * (0.3 + v)) as f32
    })
}

/// The blobs' sum at `(y, x)`, periodic: each blob at its nearest image, so that a shifted
/// frame is exactly the specimen translated (no edges that stay put while the content moves).
pub fn specimen(shape: (usize, usize), blobs: &[Blob], y: f64, x: f64) -> f64 {
    let near = |d: f64, n: usize| d - n as f64 * (d / n as f64).round();
    blobs
        .iter()
        .map(|&(cy, cx, s, a)| {
            let (dy, dx) = (near(y - cy, shape.0), near(x - cx, shape.1));
            a * (-(dy * dy + dx * dx) / (2.0 * s * s)).exp()
        })
        .sum()
}

/// A drift like beam-induced motion: fast at first, then slowing; frame 0 at the origin.
pub fn drift(i: usize) -> [f64; 2] {
    let t = 1.0 - (-(i as f64) / 6.0).exp();
    [3.7 * t + 0.05 * i as f64, -2.9 * t + 0.11 * i as f64]
}

pub fn movie(frames: usize, shape: (usize, usize), dose: f64, seed: u64) -> ndarray::Array3<f32> {
    movie_along(
        &(0..frames).map(drift).collect::<Vec<_>>(),
        shape,
        dose,
        seed,
    )
}

/// A movie of `frames.len()` frames, frame `i` showing the specimen moved by `frames[i]`.
pub fn movie_along(
    frames: &[[f64; 2]],
    shape: (usize, usize),
    dose: f64,
    seed: u64,
) -> ndarray::Array3<f32> {
    let mut rng = Lcg(seed);
    let blobs = blobs(60, shape, &mut rng);
    let mut m = ndarray::Array3::zeros((frames.len(), shape.0, shape.1));
    for (i, &shift) in frames.iter().enumerate() {
        m.index_axis_mut(ndarray::Axis(0), i)
            .assign(&frame(shape, shift, dose, &blobs, &mut rng));
    }
    m
}

/// `count` Gaussian blobs `(row, col, sigma, amplitude)` placed at random in a frame of `shape`.
pub fn blobs(count: usize, shape: (usize, usize), rng: &mut Lcg) -> Vec<Blob> {
    (0..count)
        .map(|_| {
            (
                rng.next() * shape.0 as f64,
                rng.next() * shape.1 as f64,
                1.5 + 3.0 * rng.next(),
                0.5 + rng.next(),
            )
        })
        .collect()
}

/// A JSON list of numbers (a fixture's), as `f64`s.
pub fn numbers(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

/// A movie held in memory whose frame `frame` cannot be read, for the reason `error` gives.
pub struct FailsAt {
    pub movie: ndarray::Array3<f32>,
    pub frame: usize,
    pub error: fn() -> Box<dyn std::error::Error + Send + Sync>,
}

impl ufunc::registration::FrameSource for FailsAt {
    fn frame_shape(&self) -> (usize, usize) {
        self.movie.frame_shape()
    }
    fn len(&self) -> usize {
        ufunc::registration::FrameSource::len(&self.movie)
    }
    fn read_frame(
        &mut self,
        index: usize,
        out: ndarray::ArrayViewMut2<'_, f32>,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        match index == self.frame {
            true => Err((self.error)()),
            false => self.movie.read_frame(index, out),
        }
    }
}

/// Counts the reads of a movie held in memory.
pub struct CountingReads {
    pub movie: ndarray::Array3<f32>,
    pub reads: usize,
}

impl CountingReads {
    pub fn new(movie: ndarray::Array3<f32>) -> Self {
        CountingReads { movie, reads: 0 }
    }
}

impl ufunc::registration::FrameSource for CountingReads {
    fn frame_shape(&self) -> (usize, usize) {
        self.movie.frame_shape()
    }
    fn len(&self) -> usize {
        ufunc::registration::FrameSource::len(&self.movie)
    }
    fn read_frame(
        &mut self,
        index: usize,
        out: ndarray::ArrayViewMut2<'_, f32>,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.reads += 1;
        self.movie.read_frame(index, out)
    }
}
