//! Image registration by phase correlation, with scikit-image's semantics, and the alignment of
//! movies (stacks of frames) built on it.
//!
//! [`phase_cross_correlation`] follows `skimage.registration.phase_cross_correlation`: the
//! returned `shift` is what to apply to `moving` to register it onto `reference`, in axis order
//! ((row, col) for images); the integer peak wraps to `(-n/2, n/2]`; with `upsample_factor` U > 1
//! the peak is refined on a grid of `ceil(1.5 U)` points spaced `1/U` pixel around it by the
//! upsampled matrix-multiply DFT of Guizar-Sicairos, Thurman and Fienup (2008), so the result is
//! quantised to `1/U`; `error` and `phasediff` use their formulas.
//!
//! [`align_movie`] aligns the frames of a movie and sums them; [`align_patches`] goes on to
//! align patches of them and sums them moved by a model of the local drift;
//! [`dose_weighted_sum`] sums them again weighted by the exposure each frame's electrons had
//! left the specimen.
//!
//! ```
//! use ndarray::Array2;
//! use ufunc_runtime::registration::{phase_cross_correlation, PccOptions};
//! # fn main() -> Result<(), ufunc_runtime::Error> {
//! // A blob, and the same blob moved by (+3, -2) pixels (periodically).
//! let blob = |y: f64, x: f64| (-((y - 16.0).powi(2) + (x - 20.0).powi(2)) / 18.0).exp();
//! let reference = Array2::from_shape_fn((40, 48), |(y, x)| blob(y as f64, x as f64));
//! let moving = Array2::from_shape_fn((40, 48), |(y, x)| blob(y as f64 - 3.0, x as f64 + 2.0));
//! let r = phase_cross_correlation(&reference, &moving, &PccOptions::default())?;
//! assert_eq!(r.shift, vec![-3.0, 2.0]); // move `moving` back by (-3, +2) to register it
//! # Ok(())
//! # }
//! ```

mod align;
mod device;
mod disambiguate;
mod dose;
mod group;
mod local;
mod pcc;
mod upsample;

pub use align::{align_movie, AlignOptions, Alignment, FrameSource, Reference, SpectraMemory};
pub use dose::{
    aligned_sums, dose_weighted_and_even_odd_sums, dose_weighted_sum, even_odd_sums, shifted_sum,
    AlignedSums, DoseWeighting, SumsWanted,
};
pub use local::{
    align_patches, CorrectedFrames, LocalAlignment, LocalMotion, MotionModel, PatchOptions,
    PatchTrack,
};
pub use pcc::{phase_cross_correlation, Correlator};

use crate::fft::FftReal;
use crate::Target;
use ndarray::ArrayView2;
use rayon::prelude::*;

/// Whether `image` holds a NaN. A contiguous image is read in pieces side by side, each folded
/// without an early exit so that it vectorises: `iter().any` over a 2048x2048 image took
/// 2.4 ms, a tenth of a registration's start-up.
fn contains_nan<T: FftReal>(image: ArrayView2<'_, T>) -> bool {
    contains(image, |v| v.is_nan())
}

/// Whether `image` holds a NaN or an infinity ([`contains_nan`]'s way).
fn contains_non_finite<T: FftReal>(image: ArrayView2<'_, T>) -> bool {
    contains(image, |v| !v.is_finite())
}

fn contains<T: FftReal>(image: ArrayView2<'_, T>, bad: impl Fn(T) -> bool + Sync) -> bool {
    const PIECE: usize = 1 << 16;
    match image.as_slice_memory_order() {
        Some(values) => values
            .par_chunks(PIECE)
            .any(|piece| piece.iter().fold(false, |found, &v| found | bad(v))),
        None => image.iter().any(|&v| bad(v)),
    }
}

/// Frees the device memory, page-locked host memory and streams that the last
/// [`align_movie`] call on `Target::Cuda` kept for the next call of the same kind; returns
/// whether there was any. Nothing else needs it: the next call makes them anew.
///
/// ```
/// let _ = ufunc_runtime::registration::release_device_memory();
/// assert!(!ufunc_runtime::registration::release_device_memory()); // nothing kept now
/// ```
pub fn release_device_memory() -> bool {
    device::release_kept_lanes()
}

/// How the cross-power spectrum is normalised before the inverse transform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Normalization {
    /// Phase correlation: each frequency divided by its magnitude (scikit-image's `"phase"`).
    #[default]
    Phase,
    /// Plain cross-correlation (scikit-image's `None`).
    Off,
}

/// Whether the inputs are images or their spectra.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Space {
    /// Images: they are transformed first.
    #[default]
    Real,
    /// Spectra, already transformed with `fft::fftn` (full, complex, unshifted).
    Fourier,
}

/// Options of [`phase_cross_correlation`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PccOptions {
    /// Register to within `1 / upsample_factor` of a pixel (1: whole pixels). Must be >= 1.
    pub upsample_factor: u32,
    /// Phase correlation (default) or plain cross-correlation.
    pub normalization: Normalization,
    /// Images (default) or spectra.
    pub space: Space,
    /// `Cpu`, `Parallel` (default) or `Cuda` (real 2-d `f32` images: the whole per-image
    /// chain on the GPU, the peak and its refinement found there: one small read per image).
    pub target: Target,
    /// scikit-image's `disambiguate`: a shift is found only modulo the image's size along each
    /// axis; with this, the candidate whose overlap of the two images correlates best in real
    /// space is returned (where no overlap decides it, the shift as found). Off by default.
    pub disambiguate: bool,
}

impl Default for PccOptions {
    fn default() -> Self {
        PccOptions {
            upsample_factor: 1,
            normalization: Normalization::Phase,
            space: Space::Real,
            target: Target::Parallel,
            disambiguate: false,
        }
    }
}

/// The result of [`phase_cross_correlation`].
#[derive(Debug, Clone, PartialEq)]
pub struct Pcc {
    /// The shift to apply to `moving` to register it onto `reference`, per axis.
    pub shift: Vec<f64>,
    /// The translation-invariant normalised RMS error between the two inputs.
    pub error: f64,
    /// The global phase difference of the two inputs (0 for non-negative images).
    pub phasediff: f64,
}
