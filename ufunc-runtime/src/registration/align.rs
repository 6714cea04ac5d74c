//! Movie alignment: every frame's drift by phase correlation, against the first frame
//! (scikit-image parity) or, by default, iteratively against the sum of all the other frames
//! as currently aligned, as MotionCor2 does, with a B-factor weighting of the cross-power
//! spectrum. The aligned sum applies the sub-pixel shifts by a Fourier shift.

use super::pcc::{half_power, half_product_peak, normalise, threads_of, ImagePlan, Scratch};
use super::upsample::signed_bin;
use super::{Normalization, PccOptions};
use crate::error::{Error, Result};
use crate::parallel::Threads;
use crate::Target;
use ndarray::{Array2, Array3, ArrayView3, ArrayViewMut2};
use num_complex::Complex;
use rayon::prelude::*;
use std::f64::consts::PI;

/// What each frame is registered against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reference {
    /// The sum of all the other frames as currently aligned, iterated until the shifts settle
    /// (what makes low-dose movies work).
    #[default]
    Sum,
    /// The first frame: each frame is `phase_cross_correlation(frame 0, frame i)`, scikit-image's
    /// result exactly (no B-factor, no iteration).
    First,
}

/// Options of [`align_movie`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlignOptions {
    /// The reference each frame is registered against.
    pub reference: Reference,
    /// Shifts are found to within `1 / upsample_factor` pixel (default 20).
    pub upsample_factor: u32,
    /// Phase correlation or plain cross-correlation (default: plain, better at low dose).
    pub normalization: Normalization,
    /// B-factor in pixels² of the Gaussian weight `exp(-B |f|² / 4)` (`f` in cycles per pixel)
    /// applied to the cross-power spectrum with [`Reference::Sum`]; 0 turns it off.
    pub bfactor: f64,
    /// The most passes over all frames with [`Reference::Sum`].
    pub max_iterations: usize,
    /// Stop when no frame's shift changes by more than this many pixels in a pass.
    pub tolerance: f64,
    /// Frames larger than this on an axis are aligned on their spectra cropped to this size
    /// there (Fourier binning: the low frequencies that carry the drift; shifts are scaled
    /// back, so they are quantised to `binning / upsample_factor`). The cropped spectra are all
    /// that stays in memory (`frames x size x (size/2+1) x 8` bytes at most); the full-size
    /// aligned sum is made by reading the frames once more.
    pub max_size: usize,
    /// `Cpu` or `Parallel` (frames are registered in parallel).
    pub target: Target,
}

impl Default for AlignOptions {
    fn default() -> Self {
        AlignOptions {
            reference: Reference::Sum,
            upsample_factor: 20,
            normalization: Normalization::Off,
            bfactor: 150.0,
            max_iterations: 10,
            tolerance: 0.05,
            max_size: 4096,
            target: Target::Parallel,
        }
    }
}

/// The result of [`align_movie`].
#[derive(Debug, Clone, PartialEq)]
pub struct Alignment {
    /// Per frame, the `(dy, dx)` shift that registers it onto frame 0 (frame 0 is `[0, 0]`).
    pub shifts: Vec<[f64; 2]>,
    /// Per frame, the height of its correlation peak relative to the energies of the two
    /// inputs (1: identical up to a shift; low for noisy frames).
    pub peaks: Vec<f64>,
    /// Passes made over the frames (1 with [`Reference::First`]).
    pub iterations: usize,
    /// The aligned sum: every frame moved by its shift (a Fourier shift) and added.
    pub sum: Array2<f32>,
    /// The `(rows, cols)` the frames were aligned at (smaller than theirs where cropped by
    /// [`AlignOptions::max_size`]).
    pub alignment_shape: (usize, usize),
}

/// Frames read one at a time: a 3-d array in memory, or a file that streams them.
pub trait FrameSource {
    /// `(rows, cols)` of every frame.
    fn frame_shape(&self) -> (usize, usize);
    /// The number of frames.
    fn len(&self) -> usize;
    /// Whether there are no frames.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Reads frame `index` into `out` (of [`frame_shape`](Self::frame_shape)).
    fn read_frame(
        &mut self,
        index: usize,
        out: ArrayViewMut2<'_, f32>,
    ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>>;
}

impl FrameSource for ArrayView3<'_, f32> {
    fn frame_shape(&self) -> (usize, usize) {
        (self.shape()[1], self.shape()[2])
    }
    fn len(&self) -> usize {
        self.shape()[0]
    }
    fn read_frame(
        &mut self,
        index: usize,
        mut out: ArrayViewMut2<'_, f32>,
    ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
        out.assign(&self.index_axis(ndarray::Axis(0), index));
        Ok(())
    }
}

impl FrameSource for Array3<f32> {
    fn frame_shape(&self) -> (usize, usize) {
        self.view().frame_shape()
    }
    fn len(&self) -> usize {
        self.shape()[0]
    }
    fn read_frame(
        &mut self,
        index: usize,
        out: ArrayViewMut2<'_, f32>,
    ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.view().read_frame(index, out)
    }
}

const CONTEXT: &str = "align_movie";

/// Aligns the frames of a movie: see [`AlignOptions`] and the [module docs](super).
///
/// ```
/// use ndarray::Array3;
/// use ufunc_runtime::registration::{align_movie, AlignOptions, Reference};
/// # fn main() -> Result<(), ufunc_runtime::Error> {
/// // A bright spot drifting one pixel down per frame.
/// let mut movie = Array3::<f32>::zeros((4, 32, 32));
/// for f in 0..4 {
///     for (dy, dx) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
///         movie[[f, 10 + f + dy, 12 + dx]] = 1.0;
///     }
/// }
/// let options = AlignOptions { reference: Reference::First, ..Default::default() };
/// let a = align_movie(&mut movie, &options)?;
/// assert_eq!(a.shifts[3], [-3.0, 0.0]);
/// assert!((a.sum[[10, 12]] - 4.0).abs() < 1e-5); // every spot moved onto frame 0's
/// assert_eq!(a.sum.shape(), &[32, 32]);
/// # Ok(())
/// # }
/// ```
pub fn align_movie<S: FrameSource + ?Sized>(
    frames: &mut S,
    options: &AlignOptions,
) -> Result<Alignment> {
    let threads = threads_of(options.target)?;
    check(frames, options)?;
    let (ny, nx) = frames.frame_shape();
    let (cy, cx) = (ny.min(options.max_size), nx.min(options.max_size));
    let full = ImagePlan::<f32>::new(ny, nx)?;
    let plan = ImagePlan::<f32>::new(cy, cx)?;
    let spectra = read_spectra(frames, &full, (cy, cx), threads)?;
    let pcc = PccOptions {
        upsample_factor: options.upsample_factor,
        normalization: options.normalization,
        ..Default::default()
    };
    let (mut shifts, peaks, iterations) = match options.reference {
        Reference::First => {
            let first = |_| spectra[0].clone();
            let (shifts, peaks) = register_all(&spectra, threads, first, &plan, &pcc, 0.0)?;
            (shifts, peaks, 1)
        }
        Reference::Sum => iterate_on_sum(&spectra, &plan, &pcc, options, threads)?,
    };
    let origin = shifts[0];
    let scale = [ny as f64 / cy as f64, nx as f64 / cx as f64];
    for s in &mut shifts {
        *s = [(s[0] - origin[0]) * scale[0], (s[1] - origin[1]) * scale[1]];
    }
    let sum = if (cy, cx) == (ny, nx) {
        aligned_sum(&spectra, &shifts, &full, threads)?
    } else {
        drop(spectra);
        streamed_sum(frames, &shifts, &full, threads)?
    };
    Ok(Alignment {
        shifts,
        peaks,
        iterations,
        sum,
        alignment_shape: (cy, cx),
    })
}

/// The half spectrum of a `(cy, cx)` image made of the low frequencies of a larger one's
/// (amplitudes are not rescaled: the correlation does not need it).
fn crop_half(spectrum: &Array2<Complex<f32>>, (cy, cx): (usize, usize)) -> Array2<Complex<f32>> {
    let ny = spectrum.nrows();
    Array2::from_shape_fn((cy, cx / 2 + 1), |(r, c)| {
        let source_row = if r < cy.div_ceil(2) { r } else { ny - (cy - r) };
        spectrum[[source_row, c]]
    })
}

/// Reads every frame again, moves it by its shift and adds it: the full-size aligned sum
/// with one frame's spectrum in memory per thread.
fn streamed_sum<S: FrameSource + ?Sized>(
    frames: &mut S,
    shifts: &[[f64; 2]],
    plan: &ImagePlan<f32>,
    threads: Threads,
) -> Result<Array2<f32>> {
    let (ny, nx) = (plan.height(), plan.width());
    let mut total = Array2::<Complex<f32>>::zeros((ny, plan.half_width()));
    let mut image = Array2::<f32>::zeros((ny, nx));
    let mut spectrum = total.clone();
    for (i, &shift) in shifts.iter().enumerate() {
        read_one(frames, i, &mut image)?;
        plan.forward(image.view(), &mut spectrum, threads)?;
        total += &fourier_shift(&spectrum, shift, nx);
    }
    let mut sum = Array2::zeros((ny, nx));
    plan.inverse(&total, &mut sum, threads)?;
    Ok(sum)
}

fn read_one<S: FrameSource + ?Sized>(
    frames: &mut S,
    index: usize,
    image: &mut Array2<f32>,
) -> Result<()> {
    frames
        .read_frame(index, image.view_mut())
        .map_err(|e| Error::InvalidArgument {
            name: "frames",
            message: format!("frame {index} could not be read: {e}"),
        })?;
    if image.iter().any(|v| v.is_nan()) {
        return Err(Error::NotFinite {
            context: CONTEXT,
            name: "frames",
        });
    }
    Ok(())
}

fn check<S: FrameSource + ?Sized>(frames: &S, options: &AlignOptions) -> Result<()> {
    let (ny, nx) = frames.frame_shape();
    if frames.is_empty() || ny == 0 || nx == 0 {
        return Err(Error::InvalidArgument {
            name: "frames",
            message: format!(
                "a movie needs at least one frame of at least 1x1 pixels, got {} frames of {ny}x{nx}",
                frames.len()
            ),
        });
    }
    if options.upsample_factor == 0 {
        return Err(Error::InvalidArgument {
            name: "upsample_factor",
            message: "must be at least 1 (1: whole pixels), got 0".into(),
        });
    }
    if options.max_size < 2 {
        return Err(Error::InvalidArgument {
            name: "max_size",
            message: format!(
                "frames cannot be aligned at fewer than 2 pixels, got {}",
                options.max_size
            ),
        });
    }
    if !(options.bfactor >= 0.0 && options.bfactor.is_finite()) {
        return Err(Error::InvalidArgument {
            name: "bfactor",
            message: format!("must be a finite number >= 0, got {}", options.bfactor),
        });
    }
    if options.tolerance.is_nan() || options.tolerance < 0.0 || options.max_iterations == 0 {
        return Err(Error::InvalidArgument {
            name: "tolerance",
            message: format!(
                "needs tolerance >= 0 and at least one iteration, got {} and {}",
                options.tolerance, options.max_iterations
            ),
        });
    }
    Ok(())
}

/// Every frame's half spectrum (cropped to `crop`), read in order and transformed in parallel
/// batches.
fn read_spectra<S: FrameSource + ?Sized>(
    frames: &mut S,
    plan: &ImagePlan<f32>,
    crop: (usize, usize),
    threads: Threads,
) -> Result<Vec<Array2<Complex<f32>>>> {
    let (ny, nx) = frames.frame_shape();
    let batch = match threads {
        Threads::One => 1,
        Threads::All => 2 * rayon::current_num_threads(),
    };
    let mut spectra = Vec::with_capacity(frames.len());
    let mut images: Vec<Array2<f32>> = (0..batch.min(frames.len()))
        .map(|_| Array2::zeros((ny, nx)))
        .collect();
    for start in (0..frames.len()).step_by(batch) {
        let count = batch.min(frames.len() - start);
        for (k, image) in images.iter_mut().take(count).enumerate() {
            read_one(frames, start + k, image)?;
        }
        let transform = |image: &Array2<f32>| -> Result<Array2<Complex<f32>>> {
            let mut s = Array2::zeros((ny, plan.half_width()));
            plan.forward(image.view(), &mut s, Threads::One)?;
            Ok(if crop == (ny, nx) {
                s
            } else {
                crop_half(&s, crop)
            })
        };
        let batch_spectra: Result<Vec<_>> = match threads {
            Threads::One => images[..count].iter().map(transform).collect(),
            Threads::All => images[..count].par_iter().map(transform).collect(),
        };
        spectra.extend(batch_spectra?);
    }
    Ok(spectra)
}

/// Registers every frame against `reference_of(frame)`, frames in parallel.
fn register_all(
    spectra: &[Array2<Complex<f32>>],
    threads: Threads,
    reference_of: impl Fn(usize) -> Array2<Complex<f32>> + Sync,
    plan: &ImagePlan<f32>,
    pcc: &PccOptions,
    bfactor: f64,
) -> Result<(Vec<[f64; 2]>, Vec<f64>)> {
    let one = |i: usize| register(&reference_of(i), &spectra[i], plan, pcc, bfactor);
    let results: Result<Vec<([f64; 2], f64)>> = match threads {
        Threads::One => (0..spectra.len()).map(one).collect(),
        Threads::All => (0..spectra.len()).into_par_iter().map(one).collect(),
    };
    Ok(results?.into_iter().unzip())
}

/// The shift that registers `moving` onto `reference` (both half spectra), and the peak height.
fn register(
    reference: &Array2<Complex<f32>>,
    moving: &Array2<Complex<f32>>,
    plan: &ImagePlan<f32>,
    pcc: &PccOptions,
    bfactor: f64,
) -> Result<([f64; 2], f64)> {
    let (ny, nx) = (plan.height(), plan.width());
    let amplitudes = (half_power(reference, nx), half_power(moving, nx));
    let mut scratch = Scratch::new(plan);
    // The Gaussian weight exp(-B |f|² / 4) factors into a row and a column weight.
    let weight = |k: f64, n: usize| (-bfactor * (k / n as f64).powi(2) / 4.0).exp() as f32;
    let wy: Vec<f32> = (0..ny).map(|k| weight(signed_bin(k, ny), ny)).collect();
    let wx: Vec<f32> = (0..reference.ncols())
        .map(|k| weight(k as f64, nx))
        .collect();
    ndarray::Zip::indexed(scratch.product_mut())
        .and(reference)
        .and(moving)
        .for_each(|(ky, kx), p, &r, &m| {
            *p = normalise(r * m.conj(), pcc.normalization) * (wy[ky] * wx[kx]);
        });
    let peak = half_product_peak(
        plan,
        &mut scratch,
        pcc.upsample_factor,
        amplitudes,
        Threads::One,
    )?;
    let s = peak.shift(&[ny, nx], pcc.upsample_factor);
    Ok(([s[0], s[1]], peak.correlation()))
}

/// MotionCor2's scheme: each frame against the sum of the others as aligned, repeated until
/// the largest change is below the tolerance.
fn iterate_on_sum(
    spectra: &[Array2<Complex<f32>>],
    plan: &ImagePlan<f32>,
    pcc: &PccOptions,
    options: &AlignOptions,
    threads: Threads,
) -> Result<(Vec<[f64; 2]>, Vec<f64>, usize)> {
    let n = spectra.len();
    let mut shifts = vec![[0.0f64; 2]; n];
    let mut peaks = vec![0.0; n];
    let mut iterations = 0;
    while iterations < options.max_iterations {
        iterations += 1;
        let total = shifted_sum(spectra, &shifts, plan.width());
        // Frame i's reference: the sum of the others, each moved by its current shift.
        let others = |i: usize| &total - &fourier_shift(&spectra[i], shifts[i], plan.width());
        let (new, p) = register_all(spectra, threads, others, plan, pcc, options.bfactor)?;
        let change = new
            .iter()
            .zip(&shifts)
            .map(|(a, b)| (a[0] - b[0]).abs().max((a[1] - b[1]).abs()))
            .fold(0.0, f64::max);
        shifts = new;
        peaks = p;
        if change <= options.tolerance || n == 1 {
            break;
        }
    }
    Ok((shifts, peaks, iterations))
}

/// The half spectrum of the image moved by `shift` = (dy, dx): `F(k) exp(-2πi k·shift / n)`.
fn fourier_shift(
    spectrum: &Array2<Complex<f32>>,
    shift: [f64; 2],
    nx: usize,
) -> Array2<Complex<f32>> {
    let ny = spectrum.nrows();
    let row_phase: Vec<Complex<f64>> = (0..ny)
        .map(|k| Complex::from_polar(1.0, -2.0 * PI * signed_bin(k, ny) * shift[0] / ny as f64))
        .collect();
    let col_phase: Vec<Complex<f64>> = (0..spectrum.ncols())
        .map(|k| Complex::from_polar(1.0, -2.0 * PI * k as f64 * shift[1] / nx as f64))
        .collect();
    let mut out = spectrum.clone();
    for ((ky, kx), z) in out.indexed_iter_mut() {
        let p = row_phase[ky] * col_phase[kx];
        *z *= Complex::new(p.re as f32, p.im as f32);
    }
    out
}

/// The spectrum of every frame moved by its shift, added.
fn shifted_sum(
    spectra: &[Array2<Complex<f32>>],
    shifts: &[[f64; 2]],
    nx: usize,
) -> Array2<Complex<f32>> {
    let mut total = Array2::<Complex<f32>>::zeros(spectra[0].raw_dim());
    for (s, &shift) in spectra.iter().zip(shifts) {
        total += &fourier_shift(s, shift, nx);
    }
    total
}

/// Every frame moved by its shift and added, back in real space.
fn aligned_sum(
    spectra: &[Array2<Complex<f32>>],
    shifts: &[[f64; 2]],
    plan: &ImagePlan<f32>,
    threads: Threads,
) -> Result<Array2<f32>> {
    let total = shifted_sum(spectra, shifts, plan.width());
    let mut sum = Array2::zeros((plan.height(), plan.width()));
    plan.inverse(&total, &mut sum, threads)?;
    Ok(sum)
}
