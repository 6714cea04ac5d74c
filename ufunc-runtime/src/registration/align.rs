//! Movie alignment: every frame's drift by phase correlation, against the first frame
//! (scikit-image's `phase_cross_correlation`, the frames' means left out) or, by default, iteratively against the sum of all the other frames
//! as currently aligned, as MotionCor2 does, with a B-factor weighting of the cross-power
//! spectrum. The aligned sum applies the sub-pixel shifts by a Fourier shift.

use super::dose::{DoseWeighting, FrameWeights};
use super::local::CorrectedFrames;
use super::pcc::{half_product_peak, normalise, row_power, threads_of, ImagePlan, ScratchPool};
use super::upsample::signed_bin;
use super::{Normalization, PccOptions};
use crate::alloc::try_zeroed_fft;
use crate::error::{Error, Result};
use crate::parallel::Threads;
use crate::Target;
use ndarray::{Array2, Array3, ArrayView2, ArrayView3, ArrayViewMut2, Ix2};
use num_complex::Complex;
use rayon::prelude::*;
use std::f64::consts::PI;

/// What each frame is registered against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reference {
    /// The sum of all the other frames as currently aligned, iterated until the shifts settle
    /// (what makes low-dose movies work). A frame whose step goes back along its last one
    /// by more than half a pixel goes half way: a large drift or a jump can split the frames into
    /// groups that otherwise trade places from pass to pass.
    #[default]
    Sum,
    /// The first frame: each frame is `phase_cross_correlation(frame 0, frame i)`, scikit-image's
    /// result (no B-factor, no iteration). The frames' means, which add only a constant to the
    /// correlation, are left out of it: in `f32` that constant swamped the correlation of
    /// frames far from zero mean.
    First,
}

/// Options of [`align_movie`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlignOptions {
    /// The reference each frame is registered against.
    pub reference: Reference,
    /// Shifts are found to within `1 / upsample_factor` pixel of the frames as aligned
    /// ([`Alignment::alignment_shape`]; default 20).
    pub upsample_factor: u32,
    /// Phase correlation or plain cross-correlation (default: plain, better at low dose).
    pub normalization: Normalization,
    /// B-factor in pixels² of the Gaussian weight `exp(-B |f|² / 4)` (`f` in cycles per pixel
    /// of the frames, also when they are aligned cropped by [`AlignOptions::max_size`])
    /// applied to the cross-power spectrum with [`Reference::Sum`]; 0 turns it off.
    pub bfactor: f64,
    /// The most passes over all frames with [`Reference::Sum`].
    pub max_iterations: usize,
    /// Stop when no frame's shift changes by more than this many pixels in a pass (and none
    /// was damped: see [`Reference::Sum`]).
    pub tolerance: f64,
    /// Frames larger than this on an axis are aligned on their spectra cropped to this size
    /// there (Fourier binning: the low frequencies that carry the drift; shifts are scaled
    /// back, so they are quantised to `binning / upsample_factor`). With [`Reference::Sum`]
    /// the frames' full spectra are kept between passes where they fit in
    /// [`AlignOptions::memory_limit`], and the aligned sum comes from the last pass; otherwise
    /// (and with a `taper` or `group`, whose sums are made apart) the cropped ones are all
    /// that stays in memory (`frames x size x (size/2+1) x 8` bytes at most), and the
    /// full-size aligned sum is made by reading the frames once more (as it is where a frame
    /// had nothing to register). Shifts are the same either way, up to rounding.
    ///
    /// With [`Reference::Sum`], lengths of 256 pixels or more are also cropped to the largest
    /// whose transforms are fast (products of 2, 3, 5, 7 and 11: at most 1.6% smaller for the
    /// cameras' sizes), as RELION picks its correlations' sizes: a K2 frame's 3710 x 3838
    /// pixels are aligned at 3696 x 3780, whose transforms take a quarter of the time, and the
    /// frequencies cut off carry a weight of about 1e-4 at the default B-factor. The passes
    /// read this crop out of the spectra kept, so it costs no reading of the frames. The same
    /// on every target (cuFFT, too, is fastest on products of 2, 3, 5 and 7).
    pub max_size: usize,
    /// `Cpu`, `Parallel` (frames are registered in parallel) or `Cuda` (each frame's
    /// registration on the GPU, frames uploaded on two streams in turn; the spectra kept in
    /// device memory within `memory_limit`).
    pub target: Target,
    /// A raised-cosine edge taper applied to each frame (less its mean) before it is
    /// registered, rising over this fraction of each axis from each edge (0 to 0.5; default 0,
    /// off). Where a frame's edges carry strong contrast that does not move with the specimen
    /// (an illumination gradient, a cut-off specimen), they pull the shifts towards zero; a
    /// taper of 0.2-0.25 removes that pull (20x lower error in the test), at the cost of
    /// some accuracy on frames without such edges: with [`Reference::Sum`], the windows of
    /// the other frames, moved into the reference, pull a drift of a tenth of the frame or more
    /// towards its middle by up to a tenth of it, most at tapers of 0.05-0.1. The sum is made
    /// from the frames as they are.
    pub taper: f64,
    /// The frames' half spectra (full-size, or cropped by [`AlignOptions::max_size`]) are kept
    /// in memory between passes when they fit in this many bytes (`frames x rows x (cols/2+1)
    /// x 8`); otherwise every pass reads and transforms the frames again, so that memory stays
    /// bounded by a few frames per thread however long the movie (default 2 GiB).
    /// [`AlignOptions::spectra_memory`] says which, for a movie.
    pub memory_limit: usize,
    /// Frames added per registration (MotionCor2's `-Group`; default 1, each frame alone):
    /// consecutive frames are added into groups of this many (the frames left over handed
    /// to the later groups, as RELION's motion correction hands them), the
    /// groups are aligned as frames, and each frame's shift is interpolated linearly between
    /// the shifts of the groups' middle frames (extrapolated past the first and last). For
    /// movies whose frames hold too few counts each for a peak; the drift must be smooth over a
    /// group. The sum adds the frames at their own shifts, read once more (on the host's cores
    /// with `Target::Cuda`); [`Alignment::peaks`] gives each frame its group's (a blank frame
    /// in a group that is not blank is aligned as its group). At least two groups are needed.
    pub group: usize,
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
            memory_limit: 2 << 30,
            taper: 0.0,
            group: 1,
        }
    }
}

/// The result of [`align_movie`].
#[derive(Debug, Clone, PartialEq)]
pub struct Alignment {
    /// Per frame, the `(dy, dx)` shift that registers it onto frame 0 (frame 0 is `[0, 0]`).
    /// A blank frame (one value everywhere, as a zero-filled frame of an aborted acquisition),
    /// or a frame whose reference is blank (the other frames all blank), has nothing to
    /// register: it is `[0, 0]` with peak 0, and if frame 0 is such a frame the shifts are
    /// relative to the first frame that is not. With [`Reference::First`], a blank frame 0 is
    /// an error.
    pub shifts: Vec<[f64; 2]>,
    /// Per frame, the height of its correlation peak relative to the energies of the two
    /// inputs, their means left out (1: identical up to a shift; low for noisy frames; 0 with
    /// nothing to register).
    pub peaks: Vec<f64>,
    /// Passes made over the frames (1 with [`Reference::First`]). A pass that damped a frame
    /// is followed by one more reading of the frames, to add them up at the damped shifts
    /// (read from the source again where the spectra are not kept), not counted here.
    pub iterations: usize,
    /// Whether the passes settled: the last one moved no frame by more than
    /// [`AlignOptions::tolerance`], and damped none. `false` when they stopped at
    /// [`AlignOptions::max_iterations`], whose shifts may not be final. Always `true` with
    /// [`Reference::First`].
    pub converged: bool,
    /// The aligned sum: every frame moved by its shift (a Fourier shift) and added.
    pub sum: Array2<f32>,
    /// The `(rows, cols)` the frames were aligned at (smaller than theirs where cropped by
    /// [`AlignOptions::max_size`], or to lengths whose transforms are fast).
    pub alignment_shape: (usize, usize),
}

impl Alignment {
    /// `frames` (the movie aligned) moved by their shifts (a Fourier shift each), as a frame
    /// source: the aligned frames one at a time, as MotionCor2's `-OutStack` writes them. An
    /// error where `frames` are not those aligned (another count or frame shape).
    ///
    /// ```
    /// use ndarray::{Array2, Array3};
    /// use ufunc_runtime::registration::{align_movie, AlignOptions, FrameSource};
    /// use ufunc_runtime::Target;
    /// # fn main() -> Result<(), ufunc_runtime::Error> {
    /// let spot = |row: usize| Array2::from_shape_fn((32, 32), |(y, x)| {
    ///     (-(((y as f32 - row as f32).powi(2) + (x as f32 - 16.0).powi(2)) / 8.0)).exp()
    /// });
    /// let mut movie = Array3::zeros((2, 32, 32));
    /// movie.index_axis_mut(ndarray::Axis(0), 0).assign(&spot(14));
    /// movie.index_axis_mut(ndarray::Axis(0), 1).assign(&spot(17)); // 3 rows further on
    /// let alignment = align_movie(&mut movie, &AlignOptions::default())?;
    /// let mut aligned = alignment.corrected(&mut movie, Target::Cpu)?;
    /// let mut frame = Array2::zeros((32, 32));
    /// aligned.read_frame(1, frame.view_mut()).expect("frame 1");
    /// assert!((&frame - &spot(14)).iter().all(|d| d.abs() < 1e-3));
    /// # Ok(())
    /// # }
    /// ```
    pub fn corrected<'a, S: FrameSource + ?Sized>(
        &'a self,
        frames: &'a mut S,
        target: Target,
    ) -> Result<CorrectedFrames<'a, S>> {
        CorrectedFrames::new(frames, &self.shifts, self.sum.dim(), None, target)
    }

    /// The frames that had nothing to register (peak 0; see [`Alignment::shifts`]).
    pub fn unregistered_frames(&self) -> Vec<usize> {
        (0..self.peaks.len())
            .filter(|&i| nothing_registered(self.peaks[i]))
            .collect()
    }
}

/// Whether a registration's peak says there was nothing to register: a blank frame or
/// reference ([`super::pcc::Peak::correlation`] is exactly 0 for those alone).
pub(super) fn nothing_registered(peak: f64) -> bool {
    peak == 0.0
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

/// Values per piece where a frame is copied or checked in pieces side by side.
const FRAME_PIECE: usize = 1 << 16;

/// `from` copied over `to` (of the same shape), contiguous frames in pieces side by side: one
/// core copies a large frame at a fraction of the memory's (and the device upload's) speed.
pub(super) fn copy_frame(mut to: ArrayViewMut2<'_, f32>, from: ArrayView2<'_, f32>) {
    match (to.as_slice_mut(), from.as_slice()) {
        (Some(to), Some(from)) if to.len() == from.len() => to
            .par_chunks_mut(FRAME_PIECE)
            .zip(from.par_chunks(FRAME_PIECE))
            .for_each(|(to, from)| to.copy_from_slice(from)),
        _ => to.assign(&from),
    }
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
        out: ArrayViewMut2<'_, f32>,
    ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
        copy_frame(out, self.index_axis(ndarray::Axis(0), index));
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

/// Aligns the frames of a movie: see [`AlignOptions`] and the [module docs](super).
///
/// On `cuda`, a successful call keeps, for the next one with the same frame shape, registered
/// shape ([`Alignment::alignment_shape`]) and [`AlignOptions::upsample_factor`] (the next
/// movie of a batch), its two streams with their cuFFT plans and the plans' work areas (device memory of
/// the order of a few frames), two page-locked frame buffers (`2 * ny * nx * 4` bytes of host
/// memory) and the registrations' workspaces; that call then skips their set-up (45-60 ms at
/// 2048x2048 on an H100). One such set is kept per process: a call with another key frees it
/// and keeps its own; [`super::release_device_memory`] frees it at once.
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
    if options.group > 1 {
        return super::group::align_grouped(frames, options);
    }
    align_each_frame(frames, options, Summed::Yes)
}

/// Whether [`align_each_frame`] makes the aligned sum, or leaves [`Alignment::sum`] empty
/// (0x0) for a caller that makes its own (frame groups: a sum of the groups would cost a
/// reading of the movie where the frames were cropped or tapered, and be thrown away).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Summed {
    Yes,
    No,
}

/// [`align_movie`] of every frame on its own (`options.group` is not read).
pub(super) fn align_each_frame<S: FrameSource + ?Sized>(
    frames: &mut S,
    options: &AlignOptions,
    summed: Summed,
) -> Result<Alignment> {
    if options.target == Target::Cuda {
        return super::device::align_on_device(frames, options, summed);
    }
    let threads = threads_of(options.target)?;
    check(frames, options)?;
    let (ny, nx) = frames.frame_shape();
    let (shapes, keep) = storage(options, frames.len(), (ny, nx), summed);
    let Shapes { stored, aligned } = shapes;
    let full = ImagePlan::<f32>::new(ny, nx)?;
    let cropped = if aligned == (ny, nx) {
        None
    } else {
        Some(ImagePlan::<f32>::new(aligned.0, aligned.1)?)
    };
    let plan = cropped.as_ref().unwrap_or(&full);
    let pcc = PccOptions {
        upsample_factor: options.upsample_factor,
        normalization: options.normalization,
        ..Default::default()
    };
    let taper = (options.taper > 0.0).then(|| Taper::new((ny, nx), options.taper));
    let mut spectra = Spectra::new(frames, &full, shapes, taper.as_ref(), threads, keep)?;
    let scratch = ScratchPool::new();
    let weights = |bfactor| bfactor_weights(bfactor, (aligned.0, aligned.1 / 2 + 1), (ny, nx));
    let Registered {
        mut shifts,
        peaks,
        iterations,
        converged,
        total,
    } = match options.reference {
        Reference::First => {
            let first = spectra.first()?;
            let ones = weights(0.0);
            let register =
                |_: usize, s: &Spectrum| register(&first, None, s, (plan, &scratch), &pcc, &ones);
            let (found, total) = spectra.pass(threads, register, |r| r.0)?;
            Registered::one_pass(found, total)
        }
        Reference::Sum => {
            let n = spectra.len();
            let mut passes = HostPasses {
                spectra: &mut spectra,
                buffers: (plan, &scratch),
                pcc: &pcc,
                weights: &weights(options.bfactor),
                threads,
            };
            iterate_on_sum(&mut passes, n, options)?
        }
    };
    let origin = relative_to_first(&mut shifts, &peaks, options.reference, aligned, (ny, nx))?;
    let unregistered = peaks.iter().any(|&p| nothing_registered(p));
    let sum = match &taper {
        _ if summed == Summed::No => Array2::zeros((0, 0)),
        // The last pass added every frame's full spectrum moved by its shift: moving that
        // sum by -origin makes it frame 0's, as the shifts are (unless a frame with nothing to
        // register was added at a shift that is now reported as none).
        None if stored == (ny, nx) && !unregistered => {
            let mut total = total;
            let origin = shapes.to_stored(origin);
            move_by(&mut total, [-origin[0], -origin[1]], nx);
            let mut sum = try_zeroed_fft(&Ix2(ny, nx))?;
            full.inverse(&total, &mut sum, threads)?;
            sum
        }
        // Aligned on cropped or tapered spectra: the sum is made from the frames read again.
        _ => streamed_sum(spectra.into_frames(), &shifts, &full, threads, None)?,
    };
    Ok(Alignment {
        shifts,
        peaks,
        iterations,
        converged,
        sum,
        alignment_shape: aligned,
    })
}

/// The shapes of [`align_each_frame`]'s images: `stored`, whose half spectra the passes keep
/// or read (the frames', or their crop to [`AlignOptions::max_size`]: see
/// [`alignment_shapes`]), and `aligned`, the correlations' (the crop to `max_size`, or within
/// it to lengths whose transforms are fast).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shapes {
    pub(super) stored: (usize, usize),
    pub(super) aligned: (usize, usize),
}

impl Shapes {
    /// A shift in the aligned images' pixels, in the stored images'.
    pub(super) fn to_stored(self, shift: [f64; 2]) -> [f64; 2] {
        [
            shift[0] * self.stored.0 as f64 / self.aligned.0 as f64,
            shift[1] * self.stored.1 as f64 / self.aligned.1 as f64,
        ]
    }
}

/// Lengths from which [`Reference::Sum`] aligns frames at lengths whose transforms are fast;
/// below it the transforms are cheap whatever their factors.
const FAST_CROP_FROM: usize = 256;

/// The length, at most `n`, that [`Reference::Sum`] aligns an axis of `n` pixels at (`n` below
/// [`FAST_CROP_FROM`]): the largest product of 2, 3, 5, 7 and 11
/// ([`crate::fft::prev_fast_len`]), but for an even number of columns, whose real transform
/// is a complex one of half their length, twice the largest such product within half of `n`.
fn fast_alignment_length(n: usize, axis: Axis) -> usize {
    match axis {
        _ if n < FAST_CROP_FROM => n,
        Axis::Columns if n % 2 == 0 => 2 * crate::fft::prev_fast_len(n / 2),
        _ => crate::fft::prev_fast_len(n),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Axis {
    Rows,
    Columns,
}

/// How [`align_each_frame`] (and the device's) hold the spectra of `frames` frames of
/// `frame` shape: their [`Shapes`], and whether they are kept between passes. The largest
/// that fit in [`AlignOptions::memory_limit`] (of the device's memory on `Target::Cuda`) are
/// kept: the frames' own where the sum comes from the passes (it is `summed`, and no taper
/// means the frames are read again for it), else their crop to `max_size`. One pass (the
/// first frame as reference) gains nothing from keeping any.
pub(super) fn storage(
    options: &AlignOptions,
    frames: usize,
    frame: (usize, usize),
    summed: Summed,
) -> (Shapes, bool) {
    let from_passes = summed == Summed::Yes && options.taper == 0.0;
    let shapes = alignment_shapes(frame, options);
    let fits = |shape| {
        options.reference == Reference::Sum
            && spectra_bytes(frames, shape) <= options.memory_limit as u128
    };
    if from_passes && fits(frame) {
        let stored = frame;
        (Shapes { stored, ..shapes }, true)
    } else {
        (shapes, fits(shapes.stored))
    }
}

/// What [`align_movie`] keeps of a movie in memory between passes: see
/// [`AlignOptions::spectra_memory`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpectraMemory {
    /// One pass over the frames (the first frame as reference): nothing is kept.
    OnePass,
    /// The frames' half spectra are kept: this many bytes (of the device's memory on
    /// `Target::Cuda`).
    Kept(u128),
    /// The spectra, this many bytes, exceed [`AlignOptions::memory_limit`]: every pass reads
    /// and transforms the frames again, holding a few at a time.
    Streamed(u128),
}

impl AlignOptions {
    /// What [`align_movie`] with these options keeps in memory between its passes over a
    /// movie of `frames` frames of `frame_shape` (rows, columns), for a movie it accepts
    /// (with `group`, at least two groups): for planning the memory a long movie takes, or a
    /// `memory_limit` that keeps its spectra.
    ///
    /// ```
    /// use ufunc_runtime::registration::{AlignOptions, SpectraMemory};
    /// let options = AlignOptions::default(); // memory_limit: 2 GiB
    /// // 40 frames of 4096 x 4096: 8 bytes for each of 4096 x 2049 points per frame.
    /// let bytes = 40 * 4096 * 2049 * 8;
    /// assert_eq!(options.spectra_memory(40, (4096, 4096)), SpectraMemory::Streamed(bytes));
    /// let roomy = AlignOptions { memory_limit: 4 << 30, ..options };
    /// assert_eq!(roomy.spectra_memory(40, (4096, 4096)), SpectraMemory::Kept(bytes));
    /// ```
    pub fn spectra_memory(&self, frames: usize, frame_shape: (usize, usize)) -> SpectraMemory {
        // Frame groups are aligned as frames of their own, their sum made apart.
        let (frames, summed) = match self.group {
            0 | 1 => (frames, Summed::Yes),
            group => (frames / group, Summed::No),
        };
        let (shapes, keep) = storage(self, frames, frame_shape, summed);
        let bytes = spectra_bytes(frames, shapes.stored);
        match (self.reference, keep) {
            (Reference::First, _) => SpectraMemory::OnePass,
            (_, true) => SpectraMemory::Kept(bytes),
            (_, false) => SpectraMemory::Streamed(bytes),
        }
    }
}

/// The [`Shapes`] a movie of `(ny, nx)` frames is aligned at with `options`, its spectra
/// stored cropped to `max_size` (see [`storage`] for those kept).
pub(super) fn alignment_shapes((ny, nx): (usize, usize), options: &AlignOptions) -> Shapes {
    let stored = (ny.min(options.max_size), nx.min(options.max_size));
    let aligned = match options.reference {
        Reference::Sum => (
            fast_alignment_length(stored.0, Axis::Rows),
            fast_alignment_length(stored.1, Axis::Columns),
        ),
        Reference::First => stored,
    };
    Shapes { stored, aligned }
}

type Spectrum = Array2<Complex<f32>>;

/// A frame's registration: its shift and peak height (0 where there was nothing to register).
pub(super) type Found = ([f64; 2], f64);

/// Makes shifts found at `crop` relative to frame 0's and scales them to `frame`; returns
/// the shift, as found, of the frame they are now relative to. That is frame 0 unless it had
/// nothing to register (peak 0: blank, or registered against a blank reference), then the
/// first frame that had; frames with nothing registered are reported unmoved. With
/// [`Reference::First`] a blank frame 0 leaves nothing to align to, and is an error.
pub(super) fn relative_to_first(
    shifts: &mut [[f64; 2]],
    peaks: &[f64],
    reference: Reference,
    crop: (usize, usize),
    frame: (usize, usize),
) -> Result<[f64; 2]> {
    let blank = |i: usize| nothing_registered(peaks[i]);
    if reference == Reference::First && shifts.len() > 1 && blank(0) {
        return Err(Error::InvalidArgument {
            name: "frames",
            message: "frame 0, the reference, is blank (its variance is below 1e-12 of its \
                      squared mean): there is nothing to align the other frames to; use the \
                      sum of the frames as the reference"
                .into(),
        });
    }
    let origin = (0..shifts.len())
        .find(|&i| !blank(i))
        .map_or([0.0; 2], |i| shifts[i]);
    let scale = [
        frame.0 as f64 / crop.0 as f64,
        frame.1 as f64 / crop.1 as f64,
    ];
    for (i, s) in shifts.iter_mut().enumerate() {
        *s = match blank(i) {
            true => [0.0; 2],
            false => [(s[0] - origin[0]) * scale[0], (s[1] - origin[1]) * scale[1]],
        };
    }
    Ok(origin)
}

/// The largest change of any frame's shift between two passes, blank frames (peak 0, whose
/// shifts mean nothing) left out.
fn largest_change(found: &[Found], shifts: &[[f64; 2]]) -> f64 {
    found
        .iter()
        .zip(shifts)
        .filter(|(a, _)| !nothing_registered(a.1))
        .map(|(a, b)| (a.0[0] - b[0]).abs().max((a.0[1] - b[1]).abs()))
        .fold(0.0, f64::max)
}

/// Whether a pass whose largest change was `change` ends the passes. Shifts lie on the
/// `1 / upsample` grid, and two of them one step apart differ by a hair more than the step
/// in f64: a tolerance of one step (the default) must still stop there.
fn settled(change: f64, tolerance: f64) -> bool {
    change <= tolerance + 1e-9
}

/// A spectrum's energy less its zero frequency's power, both in f64: 0 for a blank frame
/// (the same value everywhere), whose other frequencies hold only the transform's rounding
/// (below 4e-14 of the whole, measured up to 3838x3710). Such a frame's variance is below
/// 1e-12 of its squared mean.
pub(super) fn energy_without_mean(energy: f64, mean_power: f64) -> f64 {
    let rest = energy - mean_power;
    if rest <= BLANK_ENERGY * energy {
        0.0
    } else {
        rest
    }
}

/// See [`energy_without_mean`]; the device's `ufunc_reg_zero_mean` uses the same bound.
pub(super) const BLANK_ENERGY: f64 = 1e-12;

/// The Gaussian weight `exp(-B |f|² / 4)` of a half spectrum of `rows x cols` points, factored
/// into a row and a column weight: the spectrum of a `frame = (ny, nx)` image, or its Fourier
/// crop to `rows` rows, so that `f` is in cycles per pixel of the frame and `B` in the frame's
/// pixels² whether or not it is aligned cropped.
pub(super) fn bfactor_weights(
    bfactor: f64,
    (rows, cols): (usize, usize),
    (ny, nx): (usize, usize),
) -> (Vec<f32>, Vec<f32>) {
    let weight = |k: f64, n: usize| (-bfactor * (k / n as f64).powi(2) / 4.0).exp() as f32;
    let wy = (0..rows).map(|k| weight(signed_bin(k, rows), ny)).collect();
    let wx = (0..cols).map(|k| weight(k as f64, nx)).collect();
    (wy, wx)
}

/// Row and column weights of the cross-power spectrum ([`bfactor_weights`]).
type HostWeights = (Vec<f32>, Vec<f32>);

/// The bytes of `frames` half spectra of `(cy, cx)` images.
pub(super) fn spectra_bytes(frames: usize, (cy, cx): (usize, usize)) -> u128 {
    frames as u128 * cy as u128 * (cx / 2 + 1) as u128 * size_of::<Complex<f32>>() as u128
}

/// The frames' half spectra at [`Shapes::stored`], as the passes over the movie see them:
/// kept in memory when they fit in [`AlignOptions::memory_limit`], else read and transformed
/// again for every pass, so that memory stays bounded by a batch of frames whatever the
/// movie's length. The passes' sums are of the stored shape, the shifts of the aligned.
struct Spectra<'a, S: FrameSource + ?Sized> {
    frames: &'a mut S,
    plan: &'a ImagePlan<f32>,
    shapes: Shapes,
    taper: Option<&'a Taper>,
    kept: Option<Vec<Spectrum>>,
}

impl<'a, S: FrameSource + ?Sized> Spectra<'a, S> {
    fn new(
        frames: &'a mut S,
        plan: &'a ImagePlan<f32>,
        shapes: Shapes,
        taper: Option<&'a Taper>,
        threads: Threads,
        keep: bool,
    ) -> Result<Self> {
        let mut spectra = Spectra {
            frames,
            plan,
            shapes,
            taper,
            kept: None,
        };
        if keep {
            let mut kept = Vec::with_capacity(spectra.frames.len());
            spectra.each_batch(threads, |batch| {
                kept.extend(batch);
                Ok(())
            })?;
            spectra.kept = Some(kept);
        }
        Ok(spectra)
    }

    fn len(&self) -> usize {
        self.frames.len()
    }

    /// Frame 0's spectrum.
    fn first(&mut self) -> Result<Spectrum> {
        if let Some(kept) = &self.kept {
            return Ok(kept[0].clone());
        }
        let (ny, nx) = self.frames.frame_shape();
        let mut image = try_zeroed_fft(&Ix2(ny, nx))?;
        read_one(self.frames, 0, image.view_mut())?;
        transform(
            self.plan,
            self.shapes.stored,
            self.taper,
            &mut image,
            Threads::All,
        )
    }

    /// Reads the frames in order, a batch at a time, transforms each batch (in parallel) and
    /// hands it to `take`.
    fn each_batch(
        &mut self,
        threads: Threads,
        mut take: impl FnMut(Vec<Spectrum>) -> Result<()>,
    ) -> Result<()> {
        let (ny, nx) = self.frames.frame_shape();
        let n = self.frames.len();
        let batch = match threads {
            Threads::One => 1,
            Threads::All => 2 * rayon::current_num_threads(),
        };
        let mut images: Vec<Array2<f32>> = (0..batch.min(n))
            .map(|_| try_zeroed_fft(&Ix2(ny, nx)))
            .collect::<Result<_>>()?;
        for start in (0..n).step_by(batch) {
            let count = batch.min(n - start);
            for (k, image) in images.iter_mut().take(count).enumerate() {
                read_one(self.frames, start + k, image.view_mut())?;
            }
            let (plan, stored, taper) = (self.plan, self.shapes.stored, self.taper);
            let transform =
                |image: &mut Array2<f32>| transform(plan, stored, taper, image, Threads::One);
            let spectra: Result<Vec<_>> = match threads {
                Threads::One => images[..count].iter_mut().map(transform).collect(),
                Threads::All => images[..count].par_iter_mut().map(transform).collect(),
            };
            take(spectra?)?;
        }
        Ok(())
    }

    /// One pass over the movie: `visit(i, spectrum)` for every frame (in parallel), and the
    /// sum of the spectra each moved by `shift_of` its result (in the aligned images' pixels;
    /// added in frame order, so the sum does not depend on the thread count).
    fn pass<R: Send>(
        &mut self,
        threads: Threads,
        visit: impl Fn(usize, &Spectrum) -> Result<R> + Sync,
        shift_of: impl Fn(&R) -> [f64; 2],
    ) -> Result<(Vec<R>, Spectrum)> {
        let (shapes, width) = (self.shapes, self.shapes.stored.1);
        let mut total = try_zeroed_fft(&Ix2(shapes.stored.0, width / 2 + 1))?;
        let mut results = Vec::with_capacity(self.len());
        let mut visit_all = |first: usize, spectra: &[Spectrum]| -> Result<()> {
            let one = |(k, s): (usize, &Spectrum)| visit(first + k, s);
            let found: Result<Vec<R>> = match threads {
                Threads::One => spectra.iter().enumerate().map(one).collect(),
                Threads::All => spectra.par_iter().enumerate().map(one).collect(),
            };
            for (s, r) in spectra.iter().zip(found?) {
                let shift = shapes.to_stored(shift_of(&r));
                add_shifted(&mut total, s, shift, width, threads, None);
                results.push(r);
            }
            Ok(())
        };
        match self.kept.take() {
            Some(kept) => {
                let done = visit_all(0, &kept);
                self.kept = Some(kept);
                done?;
            }
            None => {
                let mut next = 0;
                self.each_batch(threads, |batch| {
                    visit_all(next, &batch)?;
                    next += batch.len();
                    Ok(())
                })?;
            }
        }
        Ok((results, total))
    }

    fn into_frames(self) -> &'a mut S {
        self.frames
    }
}

/// The threads of the host's share of work on `target`: all of them but with `Target::Cpu`
/// (with `Target::Cuda` too, for what runs on the host).
pub(super) fn host_threads(target: Target) -> Threads {
    match target {
        Target::Cpu => Threads::One,
        _ => Threads::All,
    }
}

/// Reads every frame again, moves it by its shift and adds it (weighted by its exposure with
/// `dose`): the full-size aligned sum with one frame's spectrum in memory per thread.
pub(super) fn streamed_sum<S: FrameSource + ?Sized>(
    frames: &mut S,
    shifts: &[[f64; 2]],
    plan: &ImagePlan<f32>,
    threads: Threads,
    dose: Option<&DoseWeighting>,
) -> Result<Array2<f32>> {
    let wanted = Wanted {
        dose,
        parts: usize::from(dose.is_none()),
        spectrum_group: None,
    };
    let mut sums = streamed_sums(frames, shifts, plan, threads, wanted)?;
    Ok(match sums.weighted {
        Some(weighted) => weighted,
        None => sums.plain.remove(0),
    })
}

/// What one [`streamed_sums`] pass makes: the sum weighted by `dose` where given, `parts`
/// plain sums (frame `i` added to sum `i % parts`), and with a `spectrum_group` the amplitude
/// spectra of groups of that many frames, summed.
#[derive(Debug, Clone, Copy)]
pub(super) struct Wanted<'a> {
    pub dose: Option<&'a DoseWeighting>,
    pub parts: usize,
    pub spectrum_group: Option<usize>,
}

/// What [`streamed_sums`] makes, as [`Wanted`]: the amplitudes as a half spectrum, divided by
/// the frame's pixels (a forward-normalised transform's).
pub(super) struct Sums {
    pub weighted: Option<Array2<f32>>,
    pub plain: Vec<Array2<f32>>,
    pub amplitudes: Option<Array2<f32>>,
}

/// [`streamed_sum`] into the sums `wanted` asks for: each frame read and transformed once for
/// all of them.
pub(super) fn streamed_sums<S: FrameSource + ?Sized>(
    frames: &mut S,
    shifts: &[[f64; 2]],
    plan: &ImagePlan<f32>,
    threads: Threads,
    wanted: Wanted<'_>,
) -> Result<Sums> {
    let Wanted {
        dose,
        parts,
        spectrum_group,
    } = wanted;
    debug_assert!(
        parts > 0 || dose.is_some() || spectrum_group.is_some(),
        "a pass that sums nothing"
    );
    let (ny, nx) = (plan.height(), plan.width());
    let zeroed = || try_zeroed_fft::<Complex<f32>, _>(&Ix2(ny, plan.half_width()));
    let mut totals = (0..parts).map(|_| zeroed()).collect::<Result<Vec<_>>>()?;
    let mut weighted = match dose {
        Some(dose) => Some((zeroed()?, FrameWeights::new(dose, (ny, nx), threads)?)),
        None => None,
    };
    // The group's sum so far, and the amplitudes of the groups summed.
    let mut grouped = match spectrum_group {
        Some(group) => Some((
            group.max(1),
            zeroed()?,
            try_zeroed_fft::<f32, _>(&Ix2(ny, plan.half_width()))?,
        )),
        None => None,
    };
    let mut image = try_zeroed_fft::<f32, _>(&Ix2(ny, nx))?;
    let mut spectrum = try_zeroed_fft::<Complex<f32>, _>(&Ix2(ny, plan.half_width()))?;
    for (i, &shift) in shifts.iter().enumerate() {
        read_one(frames, i, image.view_mut())?;
        plan.forward(image.view(), &mut spectrum, threads)?;
        if let Some((total, weights)) = &mut weighted {
            add_shifted(total, &spectrum, shift, nx, threads, Some(weights));
        }
        if parts > 0 {
            add_shifted(&mut totals[i % parts], &spectrum, shift, nx, threads, None);
        }
        if let Some((group, total, amplitudes)) = &mut grouped {
            add_shifted(total, &spectrum, shift, nx, threads, None);
            if (i + 1) % *group == 0 || i + 1 == shifts.len() {
                let scale = 1.0 / (ny * nx) as f32;
                take_amplitudes(amplitudes, total, scale, threads);
            }
        }
    }
    let inverse = |total: &Spectrum| -> Result<Array2<f32>> {
        let mut sum = try_zeroed_fft(&Ix2(ny, nx))?;
        plan.inverse(total, &mut sum, threads)?;
        Ok(sum)
    };
    let weighted = match weighted {
        Some((mut total, weights)) => {
            weights.normalise(&mut total, threads);
            Some(inverse(&total)?)
        }
        None => None,
    };
    // Each spectrum freed once inverted.
    let plain = totals
        .into_iter()
        .map(|t| inverse(&t))
        .collect::<Result<_>>()?;
    Ok(Sums {
        weighted,
        plain,
        amplitudes: grouped.map(|(_, _, amplitudes)| amplitudes),
    })
}

/// Adds `scale` times the amplitudes of `total` to `amplitudes`, and zeroes `total`.
fn take_amplitudes(
    amplitudes: &mut Array2<f32>,
    total: &mut Spectrum,
    scale: f32,
    threads: Threads,
) {
    let cols = total.ncols().max(1);
    let total = total.as_slice_mut().expect("a standard-layout spectrum");
    let amplitudes = amplitudes
        .as_slice_mut()
        .expect("standard-layout amplitudes");
    amplitudes
        .par_chunks_mut(cols)
        .zip(total.par_chunks_mut(cols))
        .with_min_len(threads.min_len())
        .for_each(|(a, t)| {
            for (a, t) in a.iter_mut().zip(t) {
                *a += scale * t.norm();
                *t = Complex::new(0.0, 0.0);
            }
        });
}

/// `error` and what caused it, outermost first (`"frame 3: cannot decode the page: ..."`): a
/// source's error with context shows only the context when displayed alone. A cause that an
/// error already prints as part of its own message is not repeated.
fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        let message = e.to_string();
        if !text.ends_with(&message) {
            text = format!("{text}: {message}");
        }
        cause = e.source();
    }
    text
}

/// A frame that a source made of another source (a group's frames added, the frames moved by
/// a local alignment) could not read, as [`read_one`] says it of the inner source (naming the
/// frame), passed through the outer reading unchanged.
#[derive(Debug)]
pub(super) struct InnerFrameError(pub(super) Error);

impl std::fmt::Display for InnerFrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for InnerFrameError {}

pub(super) fn read_one<S: FrameSource + ?Sized>(
    frames: &mut S,
    index: usize,
    mut image: ArrayViewMut2<'_, f32>,
) -> Result<()> {
    frames.read_frame(index, image.view_mut()).map_err(|e| {
        match e.downcast::<InnerFrameError>() {
            // An inner source's frame, which names itself.
            Ok(inner) => inner.0,
            Err(e) => Error::InvalidArgument {
                name: "frames",
                message: format!("frame {index} could not be read: {}", with_causes(&*e)),
            },
        }
    })?;
    // An infinity would make every correlation NaN, and the whole alignment with it.
    let found = match super::contains_non_finite(image.view()) {
        true => image.indexed_iter().find(|(_, v)| !v.is_finite()),
        false => None,
    };
    match found {
        Some(((y, x), v)) => Err(Error::InvalidArgument {
            name: "frames",
            message: format!("frame {index} holds {v} at row {y}, column {x}"),
        }),
        None => Ok(()),
    }
}

pub(super) fn check<S: FrameSource + ?Sized>(frames: &S, options: &AlignOptions) -> Result<()> {
    check_frames(frames)?;
    let (ny, nx) = alignment_shapes(frames.frame_shape(), options).aligned;
    super::pcc::check_upsample(options.upsample_factor, &[ny, nx])?;
    if options.max_size < 2 {
        return Err(Error::InvalidArgument {
            name: "max_size",
            message: format!(
                "frames cannot be aligned at fewer than 2 pixels, got {}",
                options.max_size
            ),
        });
    }
    if options.group == 0 {
        return Err(Error::InvalidArgument {
            name: "group",
            message: "frames are added in groups of at least 1 (1: each frame alone), got 0".into(),
        });
    }
    if !(0.0..=0.5).contains(&options.taper) {
        return Err(Error::InvalidArgument {
            name: "taper",
            message: format!(
                "is the fraction of each axis the edge taper rises over, from 0 (none) to 0.5, got {}",
                options.taper
            ),
        });
    }
    if !(options.bfactor >= 0.0 && options.bfactor.is_finite()) {
        return Err(Error::InvalidArgument {
            name: "bfactor",
            message: format!("must be a finite number >= 0, got {}", options.bfactor),
        });
    }
    if options.tolerance.is_nan() || options.tolerance < 0.0 {
        return Err(Error::InvalidArgument {
            name: "tolerance",
            message: format!("must be a number >= 0, got {}", options.tolerance),
        });
    }
    if options.max_iterations == 0 {
        return Err(Error::InvalidArgument {
            name: "max_iterations",
            message: "must be at least 1, got 0".into(),
        });
    }
    Ok(())
}

/// An error unless there is at least one frame of at least 1x1 pixels.
pub(super) fn check_frames<S: FrameSource + ?Sized>(frames: &S) -> Result<()> {
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
    Ok(())
}

/// The half spectrum of `image` (tapered first, where asked), cropped to `crop`.
fn transform(
    plan: &ImagePlan<f32>,
    crop: (usize, usize),
    taper: Option<&Taper>,
    image: &mut Array2<f32>,
    threads: Threads,
) -> Result<Spectrum> {
    if let Some(taper) = taper {
        taper.apply(image.view_mut());
    }
    let (ny, nx) = image.dim();
    let mut s = try_zeroed_fft(&Ix2(ny, plan.half_width()))?;
    plan.forward(image.view(), &mut s, threads)?;
    Ok(if crop == (ny, nx) {
        s
    } else {
        crate::fft::crop_half_spectrum(&s, crop)?
    })
}

/// A raised-cosine edge window, as the product of a row and a column window.
pub(super) struct Taper {
    rows: Vec<f32>,
    cols: Vec<f32>,
}

impl Taper {
    pub(super) fn new((ny, nx): (usize, usize), fraction: f64) -> Taper {
        let window = |n: usize| -> Vec<f32> {
            let width = (fraction * n as f64).round().max(1.0) as usize;
            (0..n)
                .map(|i| {
                    let d = i.min(n - 1 - i);
                    if d >= width {
                        1.0
                    } else {
                        (0.5 - 0.5 * (PI * (d as f64 + 0.5) / width as f64).cos()) as f32
                    }
                })
                .collect()
        };
        Taper {
            rows: window(ny),
            cols: window(nx),
        }
    }

    /// `image` less its mean, times the window.
    pub(super) fn apply(&self, mut image: ArrayViewMut2<'_, f32>) {
        let mean = image.iter().map(|&v| v as f64).sum::<f64>() / image.len().max(1) as f64;
        let mean = mean as f32;
        for (mut row, &wy) in image.rows_mut().into_iter().zip(&self.rows) {
            for (v, &wx) in row.iter_mut().zip(&self.cols) {
                *v = (*v - mean) * (wy * wx);
            }
        }
    }
}

/// The shift that registers `moving` onto a reference, and the peak height. The reference is
/// `reference`, or with `leave_out = Some(shift)` the sum `reference` less `moving` moved by
/// `shift` (the sum of the other frames, formed element by element here). Both spectra are
/// of one shape, which is `plan`'s or larger: then they are read Fourier-cropped to `plan`'s
/// (the shifts are in its pixels).
fn register(
    reference: &Spectrum,
    leave_out: Option<[f64; 2]>,
    moving: &Spectrum,
    (plan, pool): (&ImagePlan<f32>, &ScratchPool<f32>),
    pcc: &PccOptions,
    (wy, wx): &HostWeights,
) -> Result<([f64; 2], f64)> {
    pool.with(plan, |scratch| {
        let (ny, nx) = (plan.height(), plan.width());
        let product = scratch.product_mut()?;
        let (cols, from) = (product.ncols(), reference.nrows());
        let phases = leave_out.map(|shift| shift_phases(shift, product.dim(), nx));
        // One row at a time while it is in cache: the reference (less the moving frame),
        // both powers, then the weighted cross-power spectrum.
        let (mut amplitudes, mut mean_powers) = ((0.0, 0.0), (0.0, 0.0));
        for (ky, mut p) in product.rows_mut().into_iter().enumerate() {
            let source = crate::fft::cropped_row_source(ky, ny, from);
            let (r, m) = (reference.row(source), moving.row(source));
            let (Some(p), Some(r), Some(m)) = (p.as_slice_mut(), r.as_slice(), m.as_slice()) else {
                unreachable!("spectra in standard layout");
            };
            let (r, m) = (&r[..cols], &m[..cols]);
            match &phases {
                Some((py, px)) => {
                    for (((p, &r), &m), &px) in p.iter_mut().zip(r).zip(m).zip(px) {
                        *p = r - m * (py[ky] * px);
                    }
                }
                None => p.copy_from_slice(r),
            }
            amplitudes.0 += row_power(p, nx);
            amplitudes.1 += row_power(m, nx);
            if ky == 0 {
                // The frames' means only add a constant to the correlation, one that swamps
                // its f32 values for frames far from zero mean (a mean of 1000 moved shifts by
                // tenths of a pixel): left out of the product and of the energies.
                // In f64, as `row_power` added them (an f32 square of a large mean is off
                // by more than a low-contrast frame's whole energy).
                let power = |z: Complex<f32>| (z.re as f64).powi(2) + (z.im as f64).powi(2);
                mean_powers = (power(p[0]), power(m[0]));
            }
            for ((p, &m), &wx) in p.iter_mut().zip(m).zip(wx) {
                *p = normalise(*p * m.conj(), pcc.normalization) * (wy[ky] * wx);
            }
            if ky == 0 {
                p[0] = Complex::new(0.0, 0.0);
            }
        }
        let amplitudes = (
            energy_without_mean(amplitudes.0, mean_powers.0),
            energy_without_mean(amplitudes.1, mean_powers.1),
        );
        let peak = half_product_peak(plan, scratch, pcc.upsample_factor, amplitudes)?;
        let s = peak.shift(&[ny, nx], pcc.upsample_factor);
        Ok(([s[0], s[1]], peak.correlation()))
    })
}

/// MotionCor2's scheme: each frame against the sum of the others as aligned, repeated until
/// the largest change is within the tolerance. Each pass registers every frame against the
/// sum of the previous pass and adds up the frames moved by their new shifts for the next one.
/// A frame whose step reverses its last one goes only half way (see [`Damping`]).
pub(super) fn iterate_on_sum<P: SumPasses>(
    passes: &mut P,
    n: usize,
    options: &AlignOptions,
) -> Result<Registered<P::Total>> {
    let mut shifts = vec![[0.0f64; 2]; n];
    // A lone frame is its own reference, as frame 0 is with `Reference::First`: no pass.
    let mut peaks = vec![1.0; n];
    let mut total = passes.add_at(&shifts)?;
    let mut damping = Damping::new(n);
    let mut iterations = 0;
    let mut converged = n <= 1;
    while !converged && iterations < options.max_iterations {
        iterations += 1;
        let (mut found, next) = passes.register(&total, &shifts)?;
        let change = largest_change(&found, &shifts);
        let damped = damping.apply(&shifts, &mut found);
        converged = settled(change, options.tolerance) && !damped;
        (shifts, peaks) = found.into_iter().unzip();
        total = match damped {
            true => passes.add_at(&shifts)?,
            false => next,
        };
    }
    Ok(Registered {
        shifts,
        peaks,
        iterations,
        converged,
        total,
    })
}

/// The passes over a movie that [`iterate_on_sum`] makes, on the host or the device.
pub(super) trait SumPasses {
    /// The sum of the frames' spectra, each moved by its shift.
    type Total;
    /// Registers every frame `i` against `total` less the frame moved by `previous[i]` (the
    /// sum of the other frames): its shift and peak, and the new total of the frames moved by
    /// the shifts found.
    fn register(
        &mut self,
        total: &Self::Total,
        previous: &[[f64; 2]],
    ) -> Result<(Vec<Found>, Self::Total)>;
    /// The total of the frames moved by `shifts`.
    fn add_at(&mut self, shifts: &[[f64; 2]]) -> Result<Self::Total>;
}

/// Two groups of frames can swap places every pass: the first pass, against the unmoved sum,
/// registers each frame of a small group onto a larger one, and each later pass each group
/// onto the other's copies in the sum less the frame. A frame whose new step goes back along
/// its last one by more than half a pixel (of the frames as aligned, where cropped: see
/// [`AlignOptions::max_size`]) is moved only half way, where the groups meet.
struct Damping {
    last_step: Vec<[f64; 2]>,
}

impl Damping {
    fn new(frames: usize) -> Self {
        Damping {
            last_step: vec![[0.0; 2]; frames],
        }
    }

    /// Damps the reversed steps from `shifts` to `found`; whether there were any. Frames with
    /// nothing registered (peak 0) are left as found.
    fn apply(&mut self, shifts: &[[f64; 2]], found: &mut [Found]) -> bool {
        let mut damped = false;
        for ((last, (new, peak)), old) in self.last_step.iter_mut().zip(found).zip(shifts) {
            let step = [new[0] - old[0], new[1] - old[1]];
            // How far the step goes back along the last one.
            let back = -(step[0] * last[0] + step[1] * last[1]) / last[0].hypot(last[1]);
            if !nothing_registered(*peak) && back > 0.5 {
                *new = [old[0] + 0.5 * step[0], old[1] + 0.5 * step[1]];
                damped = true;
            }
            *last = [new[0] - old[0], new[1] - old[1]];
        }
        damped
    }
}

/// The host's passes: frames registered one per thread, from kept spectra or read again.
struct HostPasses<'s, 'a, S: FrameSource + ?Sized> {
    spectra: &'s mut Spectra<'a, S>,
    buffers: (&'s ImagePlan<f32>, &'s ScratchPool<f32>),
    pcc: &'s PccOptions,
    weights: &'s HostWeights,
    threads: Threads,
}

impl<S: FrameSource + ?Sized> SumPasses for HostPasses<'_, '_, S> {
    type Total = Spectrum;

    fn register(
        &mut self,
        total: &Spectrum,
        previous: &[[f64; 2]],
    ) -> Result<(Vec<Found>, Spectrum)> {
        let (buffers, pcc, weights) = (self.buffers, self.pcc, self.weights);
        let visit =
            |i: usize, s: &Spectrum| register(total, Some(previous[i]), s, buffers, pcc, weights);
        self.spectra.pass(self.threads, visit, |r| r.0)
    }

    fn add_at(&mut self, shifts: &[[f64; 2]]) -> Result<Spectrum> {
        let (_, total) = self
            .spectra
            .pass(self.threads, |i, _| Ok(i), |&i| shifts[i])?;
        Ok(total)
    }
}

/// The outcome of the passes: per frame the shift and peak, the passes made, whether they
/// settled, and the sum of the frames moved by their shifts.
pub(super) struct Registered<T> {
    pub(super) shifts: Vec<[f64; 2]>,
    pub(super) peaks: Vec<f64>,
    pub(super) converged: bool,
    pub(super) iterations: usize,
    pub(super) total: T,
}

impl<T> Registered<T> {
    /// One pass against a fixed reference (the first frame), which settles by itself.
    pub(super) fn one_pass(found: Vec<Found>, total: T) -> Self {
        let (shifts, peaks) = found.into_iter().unzip();
        Registered {
            shifts,
            peaks,
            iterations: 1,
            converged: true,
            total,
        }
    }
}

/// The row and column factors of the phase ramp `exp(-2πi k·shift / n)` that moves the image
/// of a half spectrum of `shape` (an image `nx` wide) by `shift` = (dy, dx).
pub(super) fn shift_phases(
    shift: [f64; 2],
    (rows, cols): (usize, usize),
    nx: usize,
) -> (Vec<Complex<f32>>, Vec<Complex<f32>>) {
    let ramp = |k: f64, d: f64, n: usize| {
        let z = Complex::from_polar(1.0, -2.0 * PI * k * d / n as f64);
        Complex::new(z.re as f32, z.im as f32)
    };
    let py = (0..rows)
        .map(|k| ramp(signed_bin(k, rows), shift[0], rows))
        .collect();
    let px = (0..cols).map(|k| ramp(k as f64, shift[1], nx)).collect();
    (py, px)
}

/// Moves the image of a half spectrum by `shift`.
pub(super) fn move_by(spectrum: &mut Spectrum, shift: [f64; 2], nx: usize) {
    let (py, px) = shift_phases(shift, spectrum.dim(), nx);
    for ((ky, kx), z) in spectrum.indexed_iter_mut() {
        *z *= py[ky] * px[kx];
    }
}

type RowPair<'a> = (&'a mut [Complex<f32>], &'a [Complex<f32>]);

/// `total += spectrum` moved by `shift` = (dy, dx), rows split across threads; with
/// `weights`, each frequency weighted by the frame's (and the weights moved on to the next
/// frame's).
fn add_shifted(
    total: &mut Spectrum,
    spectrum: &Spectrum,
    shift: [f64; 2],
    nx: usize,
    threads: Threads,
    weights: Option<&mut FrameWeights>,
) {
    let (py, px) = shift_phases(shift, spectrum.dim(), nx);
    let cols = spectrum.ncols().max(1);
    let total = total.as_slice_mut().expect("a standard-layout spectrum");
    let spectrum = spectrum.as_slice().expect("a standard-layout spectrum");
    let min_rows = threads.min_len();
    let rows = total
        .par_chunks_mut(cols)
        .zip(spectrum.par_chunks(cols))
        .enumerate();
    match weights {
        None => rows
            .with_min_len(min_rows)
            .for_each(|(ky, (t, s)): (usize, RowPair<'_>)| {
                for ((t, &s), &p) in t.iter_mut().zip(s).zip(&px) {
                    *t += s * (py[ky] * p);
                }
            }),
        Some(weights) => rows
            .zip(weights.par_rows())
            .with_min_len(min_rows)
            .for_each(|((ky, (t, s)), w)| w.add(t, s, py[ky], &px)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sum_reference_aligns_at_fast_lengths_from_256_pixels() {
        use Axis::{Columns, Rows};
        // K2 (3710 x 3838), K3 (4092 rows), and lengths already fast or too short to crop.
        assert_eq!(fast_alignment_length(3710, Rows), 3696);
        assert_eq!(fast_alignment_length(3838, Columns), 3780);
        assert_eq!(fast_alignment_length(4092, Rows), 4050);
        assert_eq!(fast_alignment_length(4096, Columns), 4096);
        assert_eq!(fast_alignment_length(262, Rows), 256);
        assert_eq!(fast_alignment_length(279, Columns), 275);
        // 3776 holds 3773 = 7^3 x 11, but even columns stay even (half as costly).
        assert_eq!(fast_alignment_length(3776, Columns), 3750);
        assert_eq!(fast_alignment_length(3776, Rows), 3773);
        // The patches' widths (products of 2, 3 and 5) are left as they are.
        assert_eq!(fast_alignment_length(405, Columns), 405);
        assert_eq!(fast_alignment_length(255, Rows), 255);
        assert_eq!(fast_alignment_length(255, Columns), 255);
        let sum = AlignOptions::default();
        let first = AlignOptions {
            reference: Reference::First,
            ..sum
        };
        let cuda = AlignOptions {
            target: Target::Cuda,
            ..sum
        };
        let k2 = (3710, 3838);
        let shapes = |options| alignment_shapes(k2, &options);
        assert_eq!(shapes(sum).stored, k2);
        assert_eq!(shapes(sum).aligned, (3696, 3780));
        let cpu = AlignOptions {
            target: Target::Cpu,
            ..sum
        };
        assert_eq!(shapes(cpu).aligned, (3696, 3780));
        assert_eq!(shapes(first).aligned, k2);
        assert_eq!(shapes(cuda), shapes(sum));
        // Cropped to `max_size` first (stored so), then to fast lengths within it.
        let small = alignment_shapes(
            k2,
            &AlignOptions {
                max_size: 2000,
                ..sum
            },
        );
        assert_eq!((small.stored, small.aligned), ((2000, 2000), (2000, 2000)));
        let small = alignment_shapes(
            k2,
            &AlignOptions {
                max_size: 1919,
                ..sum
            },
        );
        assert_eq!((small.stored, small.aligned), ((1919, 1919), (1890, 1890)));
    }

    #[test]
    fn the_full_spectra_are_kept_only_where_the_sum_comes_from_the_passes() {
        let options = AlignOptions {
            max_size: 32,
            ..Default::default()
        };
        let stored = |options: &AlignOptions, summed| {
            let (shapes, keep) = storage(options, 12, (64, 48), summed);
            (shapes.stored, shapes.aligned, keep)
        };
        let (full, cropped) = ((64, 48), (32, 32));
        assert_eq!(stored(&options, Summed::Yes), (full, cropped, true));
        assert_eq!(stored(&options, Summed::No), (cropped, cropped, true));
        let tapered = AlignOptions {
            taper: 0.1,
            ..options
        };
        assert_eq!(stored(&tapered, Summed::Yes), (cropped, cropped, true));
        let cuda = AlignOptions {
            target: Target::Cuda,
            ..options
        };
        assert_eq!(stored(&cuda, Summed::Yes), (full, cropped, true));
        let tight = AlignOptions {
            memory_limit: spectra_bytes(12, full) as usize - 1,
            ..options
        };
        assert_eq!(stored(&tight, Summed::Yes), (cropped, cropped, true));
        let none = AlignOptions {
            memory_limit: 0,
            ..options
        };
        assert_eq!(stored(&none, Summed::Yes), (cropped, cropped, false));
        let first = AlignOptions {
            reference: Reference::First,
            ..options
        };
        assert_eq!(stored(&first, Summed::Yes), (cropped, cropped, false));
    }

    #[test]
    fn a_change_of_one_grid_step_is_within_a_tolerance_of_one_step() {
        // 2.35 - 2.3 is 0.050000000000000266 in f64: the default tolerance (one step of the
        // default upsample factor, 1/20) ran such movies to the pass limit.
        let change: f64 = 2.35 - 2.3;
        assert!(change > 0.05);
        assert!(settled(change, 0.05));
        assert!(!settled(0.051, 0.05));
    }

    #[test]
    fn only_a_step_back_of_more_than_half_a_pixel_is_damped() {
        let mut damping = Damping::new(5);
        // The first pass's steps from zero: nothing to reverse.
        let mut found = vec![
            ([4.0, -2.0], 0.5),
            ([0.4, 0.0], 0.5),
            ([3.0, 3.0], 0.0),
            ([1.0, 0.0], 0.5),
            ([1.0, 0.0], 0.5),
        ];
        assert!(!damping.apply(&[[0.0; 2]; 5], &mut found));
        let shifts: Vec<[f64; 2]> = found.iter().map(|f| f.0).collect();
        // Back by 4.5 px (halved), back by 0.4 px (kept), back with nothing registered
        // (kept), on in the same direction (kept), 3 px sideways and 0.1 px back (kept).
        let mut next = vec![
            ([0.0, 0.0], 0.5),
            ([0.0, 0.0], 0.5),
            ([0.0, 0.0], 0.0),
            ([3.0, 0.0], 0.5),
            ([0.9, 3.0], 0.5),
        ];
        assert!(damping.apply(&shifts, &mut next));
        let got: Vec<[f64; 2]> = next.iter().map(|f| f.0).collect();
        assert_eq!(
            got,
            [[2.0, -1.0], [0.0, 0.0], [0.0, 0.0], [3.0, 0.0], [0.9, 3.0]]
        );
        // The damped frame's last step is the half it took: going on the same way is no
        // reversal.
        let mut on = vec![
            ([0.0, 0.0], 0.5),
            ([0.0, 0.0], 0.5),
            ([0.0, 0.0], 0.0),
            ([3.0, 0.0], 0.5),
            ([0.9, 3.0], 0.5),
        ];
        assert!(!damping.apply(&got, &mut on));
        assert_eq!(on[0].0, [0.0, 0.0]);
    }

    #[test]
    fn a_cropped_spectrum_gets_the_frames_weights_at_its_frequencies() {
        // B in the frame's pixels²: aligning Fourier-cropped frames weights each frequency as
        // the full frames would (the crop keeps rows 0..16 and the last 16, columns 0..13).
        let (frame, b) = ((64, 48), 150.0);
        let (fy, fx) = bfactor_weights(b, (64, 25), frame);
        let (cy, cx) = bfactor_weights(b, (32, 13), frame);
        for (r, w) in cy.iter().enumerate() {
            let source = if r < 16 { r } else { 64 - (32 - r) };
            assert_eq!(*w, fy[source], "row {r}");
        }
        assert_eq!(cx[..], fx[..13]);
        assert!(fy[32] < fy[1] && fx[24] < fx[1] && fy[0] == 1.0);
    }
}
