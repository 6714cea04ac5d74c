//! Local (patch) alignment: [`align_patches`].

use super::align::{
    align_movie, check, host_threads, move_by, read_one, AlignOptions, Alignment, FrameSource,
    InnerFrameError,
};
use super::pcc::ImagePlan;
use crate::alloc::try_zeroed_fft;
use crate::error::{Error, Result};
use crate::parallel::Threads;
use crate::Target;
use ndarray::{s, Array2, Array3, ArrayView2, ArrayViewMut2, Axis, Ix2, Ix3};
use num_complex::Complex;
use rayon::prelude::*;

/// Options of [`align_patches`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PatchOptions {
    /// Patches along the rows and the columns (MotionCor2's `-Patch cols rows`, RELION's
    /// `--patch_y`, `--patch_x`): at least 3 each, as the model is quadratic in position. The
    /// frame is cut into this grid of shares without overlap (`rows / grid.0` by
    /// `cols / grid.1` pixels, the remainders spread over them); each patch is the largest
    /// side of at most its share whose real FFT is fast (a product of 2, 3 and 5), in its
    /// middle (at least 16 pixels).
    pub grid: (usize, usize),
    /// The largest rms residual of the model's fit, on either axis, in pixels, that the model
    /// is used with (RELION's 10): above it [`LocalMotion::Unfitted`] says so, and the sum is
    /// the whole frames'.
    pub max_fit_rms: f64,
    /// The edge taper of each patch's frames ([`AlignOptions::taper`]; default 0.1). A patch
    /// is cut at the same place from every frame, so its edges stay put while the specimen
    /// moves under them, and pull the patch's drift towards none: in the test, the model's
    /// error is 0.19 px untapered, 0.13 px at 0.1; larger tapers leave less of the patch to
    /// correlate, and noisier shifts (0.09 px at 0.2 against 0.08 on a movie without local
    /// motion). The drift left in a patch is small, so the taper's own pull on large drifts
    /// does not arise.
    pub taper: f64,
    /// How the whole frames, and then each patch's frames, are aligned (the same reference,
    /// B-factor, upsampling, groups and target for both, the taper aside).
    /// [`AlignOptions::memory_limit`] also bounds the patches' frames kept in memory together:
    /// where all of them do not fit, the movie is read once more for each set of patch rows
    /// that does. Each patch's alignment may keep its spectra within the limit besides, so the
    /// two together may reach twice it.
    pub align: AlignOptions,
}

impl Default for PatchOptions {
    fn default() -> Self {
        PatchOptions {
            grid: (5, 5),
            max_fit_rms: 10.0,
            taper: 0.1,
            align: AlignOptions::default(),
        }
    }
}

/// One patch's place and its frames' drift after the whole-frame alignment.
#[derive(Debug, Clone, PartialEq)]
pub struct PatchTrack {
    /// The first row and column of the patch in the frame.
    pub origin: (usize, usize),
    /// Its rows and columns.
    pub shape: (usize, usize),
    /// Per frame, the `(dy, dx)` shift that registers the patch, already moved by its frame's
    /// whole-frame shift, onto frame 0's patch: the drift left at this place.
    pub shifts: Vec<[f64; 2]>,
    /// Per frame, its registration's peak ([`Alignment::peaks`]); frames of peak 0 (nothing
    /// to register) are left out of the fit.
    pub peaks: Vec<f64>,
    /// Whether the patch's passes settled ([`Alignment::converged`]). A patch whose passes did
    /// not is left out of the fit, as RELION leaves it out.
    pub converged: bool,
}

impl PatchTrack {
    /// The patch's centre, `(y, x)` in pixels of the frame.
    pub fn centre(&self) -> [f64; 2] {
        [
            self.origin.0 as f64 + (self.shape.0 as f64 - 1.0) / 2.0,
            self.origin.1 as f64 + (self.shape.1 as f64 - 1.0) / 2.0,
        ]
    }
}

/// The local drift of every pixel of every frame, after the whole-frame shifts: RELION's
/// `ThirdOrderPolynomialModel`. With `z` the frame's index and `x = column / cols - 0.5`,
/// `y = row / rows - 0.5`, each axis's shift is
/// `Σ_j (c[3j] z + c[3j+1] z² + c[3j+2] z³) t_j` over the terms `t = (1, x, x², y, y², xy)`,
/// so it is 0 for frame 0 (also where frame 0 is blank and the shifts are relative to the
/// first frame that is not, [`Alignment::shifts`]: then the fit is a little off for the
/// frames before that one). The coefficients are RELION's, in the same order (its
/// `rlnMotionModelCoeff` lists the 18 of x, then the 18 of y).
#[derive(Debug, Clone, PartialEq)]
pub struct MotionModel {
    /// The coefficients of the row shift (`dy`).
    pub coefficients_y: [f64; 18],
    /// The coefficients of the column shift (`dx`).
    pub coefficients_x: [f64; 18],
    /// The `(rows, cols)` of the frames the positions are relative to.
    pub frame_shape: (usize, usize),
    /// The root-mean-square difference of the fitted drift from the patches' own, `(dy, dx)`
    /// in pixels, over the observations fitted.
    pub rms: [f64; 2],
}

/// The polynomial's terms: 18 columns.
const TERMS: usize = 18;

impl MotionModel {
    /// The model's `(dy, dx)` at frame `frame` and pixel `(row, col)` (not necessarily whole).
    pub fn shift_at(&self, frame: f64, row: f64, col: f64) -> [f64; 2] {
        let terms = terms(
            frame,
            row / self.frame_shape.0 as f64 - 0.5,
            col / self.frame_shape.1 as f64 - 0.5,
        );
        let dot = |c: &[f64; TERMS]| c.iter().zip(&terms).map(|(c, t)| c * t).sum();
        [dot(&self.coefficients_y), dot(&self.coefficients_x)]
    }

    /// Per spatial term `(1, x, x², y, y², xy)`, its factor at frame `frame` for each axis.
    fn at_frame(&self, frame: f64) -> [[f64; 6]; 2] {
        let powers = [frame, frame * frame, frame * frame * frame];
        let factors = |c: &[f64; TERMS]| {
            std::array::from_fn(|j| (0..3).map(|p| c[3 * j + p] * powers[p]).sum())
        };
        [factors(&self.coefficients_y), factors(&self.coefficients_x)]
    }
}

/// RELION's 18 terms at frame `z` and normalised position `(y, x)`.
fn terms(z: f64, y: f64, x: f64) -> [f64; TERMS] {
    let spatial = [1.0, x, x * x, y, y * y, x * y];
    std::array::from_fn(|k| spatial[k / 3] * z.powi(k as i32 % 3 + 1))
}

/// Whether, and why not, a model was fitted to the patches' drift.
#[derive(Debug, Clone, PartialEq)]
pub enum LocalMotion {
    /// The model, which the sum follows.
    Fitted(Box<MotionModel>),
    /// Too few patches settled, or too few frames were registered in them, to fit the model
    /// (the reason, in words): the sum is the whole-frame alignment's.
    Unfitted(String),
}

impl LocalMotion {
    /// The model, where one was fitted.
    pub fn model(&self) -> Option<&MotionModel> {
        match self {
            LocalMotion::Fitted(model) => Some(model),
            LocalMotion::Unfitted(_) => None,
        }
    }
}

/// The result of [`align_patches`].
#[derive(Debug, Clone, PartialEq)]
pub struct LocalAlignment {
    /// The whole frames' alignment, with its sum.
    pub global: Alignment,
    /// The patches, row by row.
    pub patches: Vec<PatchTrack>,
    /// The model of the local drift, or why there is none.
    pub motion: LocalMotion,
    /// The frames moved by their whole-frame shifts and then, pixel by pixel, by the model,
    /// and added (the whole-frame sum where no model was fitted).
    pub sum: Array2<f32>,
}

impl LocalAlignment {
    /// `frames` (the movie aligned) as this alignment moves them, as a frame source: each
    /// frame read is moved by its whole-frame shift (a Fourier shift) and by the model. For
    /// [`super::dose_weighted_sum`] and [`super::even_odd_sums`] with shifts of 0, or to
    /// write the aligned frames out. An error where `frames` are not those aligned (another
    /// count or frame shape).
    pub fn corrected<'a, S: FrameSource + ?Sized>(
        &'a self,
        frames: &'a mut S,
        target: Target,
    ) -> Result<CorrectedFrames<'a, S>> {
        CorrectedFrames::new(
            frames,
            &self.global.shifts,
            self.global.sum.dim(),
            self.motion.model(),
            target,
        )
    }
}

/// A movie's frames moved by their whole-frame shifts and, where there is one, a local model:
/// see [`Alignment::corrected`] and [`LocalAlignment::corrected`].
pub struct CorrectedFrames<'a, S: FrameSource + ?Sized> {
    frames: &'a mut S,
    shifts: &'a [[f64; 2]],
    model: Option<&'a MotionModel>,
    plan: ImagePlan<f32>,
    threads: Threads,
    image: Array2<f32>,
    spectrum: Array2<Complex<f32>>,
}

impl<'a, S: FrameSource + ?Sized> CorrectedFrames<'a, S> {
    /// `frames` moved by `shifts` and `model`, which were found for frames of `aligned`
    /// `(rows, cols)`.
    pub(super) fn new(
        frames: &'a mut S,
        shifts: &'a [[f64; 2]],
        aligned: (usize, usize),
        model: Option<&'a MotionModel>,
        target: Target,
    ) -> Result<Self> {
        let (ny, nx) = frames.frame_shape();
        if shifts.len() != frames.len() || aligned != (ny, nx) {
            return Err(Error::InvalidArgument {
                name: "frames",
                message: format!(
                    "the alignment is of {} frames of {}x{}, not of these {} frames of {ny}x{nx}",
                    shifts.len(),
                    aligned.0,
                    aligned.1,
                    frames.len()
                ),
            });
        }
        let plan = ImagePlan::<f32>::new(ny, nx)?;
        Ok(CorrectedFrames {
            frames,
            shifts,
            model,
            threads: host_threads(target),
            image: try_zeroed_fft(&Ix2(ny, nx))?,
            spectrum: try_zeroed_fft(&Ix2(ny, plan.half_width()))?,
            plan,
        })
    }

    /// Frame `index` moved by its whole-frame shift alone, into `self.image`.
    fn read_moved(&mut self, index: usize) -> Result<()> {
        read_one(self.frames, index, self.image.view_mut())?;
        let shift = self.shifts[index];
        if shift != [0.0; 2] {
            let nx = self.plan.width();
            self.plan
                .forward(self.image.view(), &mut self.spectrum, self.threads)?;
            move_by(&mut self.spectrum, shift, nx);
            self.plan
                .inverse(&self.spectrum, &mut self.image, self.threads)?;
        }
        Ok(())
    }
}

impl<S: FrameSource + ?Sized> FrameSource for CorrectedFrames<'_, S> {
    fn frame_shape(&self) -> (usize, usize) {
        self.frames.frame_shape()
    }
    fn len(&self) -> usize {
        self.frames.len()
    }
    fn read_frame(
        &mut self,
        index: usize,
        mut out: ArrayViewMut2<'_, f32>,
    ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.read_moved(index).map_err(InnerFrameError)?;
        match self.model {
            Some(model) => interpolate(self.image.view(), model, index, out, self.threads),
            None => out.assign(&self.image),
        }
        Ok(())
    }
}

/// `out` = `image` moved by `model` at frame `frame`: each pixel takes the bilinear
/// interpolation of `image` at itself less the model's shift there (the nearest edge pixel
/// where that lies outside, as RELION takes it).
fn interpolate(
    image: ArrayView2<'_, f32>,
    model: &MotionModel,
    frame: usize,
    mut out: ArrayViewMut2<'_, f32>,
    threads: Threads,
) {
    let (ny, nx) = image.dim();
    let [fy, fx] = model.at_frame(frame as f64);
    let at = |f: &[f64; 6], y: f64, x: f64| {
        f[0] + f[1] * x + f[2] * x * x + f[3] * y + f[4] * y * y + f[5] * x * y
    };
    let clamp = |v: f64, n: usize| v.clamp(0.0, (n - 1) as f64);
    let value = |row: usize, col: usize| {
        let (y, x) = (row as f64 / ny as f64 - 0.5, col as f64 / nx as f64 - 0.5);
        let sy = clamp(row as f64 - at(&fy, y, x), ny);
        let sx = clamp(col as f64 - at(&fx, y, x), nx);
        let (y0, x0) = (sy.floor() as usize, sx.floor() as usize);
        let (y1, x1) = ((y0 + 1).min(ny - 1), (x0 + 1).min(nx - 1));
        let (ty, tx) = ((sy - y0 as f64) as f32, (sx - x0 as f64) as f32);
        let top = image[[y0, x0]] + tx * (image[[y0, x1]] - image[[y0, x0]]);
        let bottom = image[[y1, x0]] + tx * (image[[y1, x1]] - image[[y1, x0]]);
        top + ty * (bottom - top)
    };
    match out.as_slice_mut() {
        Some(values) => values
            .par_chunks_mut(nx)
            .with_min_len(threads.min_len())
            .enumerate()
            .for_each(|(row, line)| {
                for (col, v) in line.iter_mut().enumerate() {
                    *v = value(row, col);
                }
            }),
        None => out
            .indexed_iter_mut()
            .for_each(|((row, col), v)| *v = value(row, col)),
    }
}

/// The patches' rows or columns along an axis of `n` pixels cut in `parts`: `(start, len)`.
/// Each part is the largest length of at most its share whose real transform is fast (a
/// product of 2, 3 and 5), in the middle of its share: 2048 cut in 5 parts of 409 (a prime)
/// or 410 took the patches' cutting and alignment 1.3-1.5x as long as parts of 405.
fn cuts(n: usize, parts: usize) -> Vec<(usize, usize)> {
    (0..parts)
        .map(|i| {
            let (start, share) = (i * n / parts, (i + 1) * n / parts - i * n / parts);
            let fast = crate::fft::prev_fast_len_real(share);
            (start + (share - fast) / 2, fast)
        })
        .collect()
}

/// Smallest side of a patch, in pixels: a smaller one holds too little of the specimen for a
/// correlation peak.
const MIN_PATCH: usize = 16;

/// Local (patch) alignment, as RELION's motion correction and MotionCor2's `-Patch` make it:
/// the frames are aligned whole ([`align_movie`]), moved by those shifts, and cut into a grid
/// of patches ([`PatchOptions`]); each patch's stack of frames is aligned on its own, giving
/// the drift left at that place; a polynomial in time and position ([`MotionModel`], RELION's
/// third-order model) is fitted to those local drifts, and every frame is moved pixel by pixel
/// by the model (bilinear interpolation after the whole-frame Fourier shift) before it is
/// added. A specimen that deforms or turns under the beam (a doming ice layer) drifts
/// differently in each part of the frame; one shift per frame leaves the rest blurred.
///
/// The movie is read once for the whole-frame alignment (as [`align_movie`] reads it), once
/// (or once per set of patch rows that fits in [`AlignOptions::memory_limit`]) to cut the
/// patches, and once more for the sum.
///
/// ```
/// use ndarray::Array3;
/// use ufunc_runtime::registration::{align_patches, LocalMotion, PatchOptions};
/// # fn main() -> Result<(), ufunc_runtime::Error> {
/// // A random texture (a hash of the pixel), all of it moving a pixel per frame to the right.
/// let texture = |y: usize, x: usize| ((y * 96 + x) as f32 * 0.618).sin().mul_add(4e4, 0.0).fract();
/// let mut movie = Array3::from_shape_fn((6, 96, 96), |(f, y, x)| texture(y, (x + 96 - f) % 96));
/// let options = PatchOptions { grid: (3, 3), ..Default::default() };
/// let local = align_patches(&mut movie, &options)?;
/// assert_eq!(local.global.shifts[5], [0.0, -5.0]);
/// let LocalMotion::Fitted(model) = &local.motion else { panic!("no model") };
/// assert!(model.shift_at(5.0, 40.0, 70.0)[1].abs() < 0.1); // nothing left once moved whole
/// # Ok(())
/// # }
/// ```
pub fn align_patches<S: FrameSource + ?Sized>(
    frames: &mut S,
    options: &PatchOptions,
) -> Result<LocalAlignment> {
    check(frames, &options.align)?;
    check(
        frames,
        &AlignOptions {
            taper: options.taper,
            ..options.align
        },
    )?;
    let (ny, nx) = frames.frame_shape();
    let (gy, gx) = options.grid;
    if gy < 3 || gx < 3 || ny / gy < MIN_PATCH || nx / gx < MIN_PATCH {
        return Err(Error::InvalidArgument {
            name: "grid",
            message: format!(
                "the local model needs at least 3 rows and 3 columns of patches of at least \
                 {MIN_PATCH}x{MIN_PATCH} pixels: {gy} rows and {gx} columns of patches of a \
                 {ny}x{nx} frame are {}x{} pixels",
                ny / gy.max(1),
                nx / gx.max(1)
            ),
        });
    }
    if options.max_fit_rms.is_nan() || options.max_fit_rms <= 0.0 {
        return Err(Error::InvalidArgument {
            name: "max_fit_rms",
            message: format!(
                "must be a number of pixels > 0, got {}",
                options.max_fit_rms
            ),
        });
    }
    if frames.len() < 4 {
        return Err(Error::InvalidArgument {
            name: "frames",
            message: format!(
                "the local model is cubic in time and needs at least 4 frames, got {}",
                frames.len()
            ),
        });
    }
    let global = align_movie(frames, &options.align)?;
    let patches = align_each_patch(frames, &global.shifts, options)?;
    let motion = match fit(&patches, frames.len(), (ny, nx), options.max_fit_rms) {
        Ok(model) => LocalMotion::Fitted(Box::new(model)),
        Err(reason) => LocalMotion::Unfitted(reason),
    };
    let sum = match &motion {
        LocalMotion::Fitted(model) => {
            let mut corrected = CorrectedFrames::new(
                frames,
                &global.shifts,
                (ny, nx),
                Some(model),
                options.align.target,
            )?;
            added(&mut corrected)?
        }
        LocalMotion::Unfitted(_) => global.sum.clone(),
    };
    Ok(LocalAlignment {
        global,
        patches,
        motion,
        sum,
    })
}

/// The frames of `source` added.
fn added<S: FrameSource + ?Sized>(source: &mut S) -> Result<Array2<f32>> {
    let (ny, nx) = source.frame_shape();
    let mut sum = try_zeroed_fft::<f32, _>(&Ix2(ny, nx))?;
    let mut frame = try_zeroed_fft::<f32, _>(&Ix2(ny, nx))?;
    for i in 0..source.len() {
        read_one(source, i, frame.view_mut())?;
        sum += &frame;
    }
    Ok(sum)
}

/// A patch's place, and its frames as cut so far.
type PatchStack = ((usize, usize), (usize, usize), Array3<f32>);

/// Cuts the frames, moved by `shifts`, into the patches and aligns each patch's stack.
fn align_each_patch<S: FrameSource + ?Sized>(
    frames: &mut S,
    shifts: &[[f64; 2]],
    options: &PatchOptions,
) -> Result<Vec<PatchTrack>> {
    let (ny, nx) = frames.frame_shape();
    let n = frames.len();
    let (rows, cols) = (cuts(ny, options.grid.0), cuts(nx, options.grid.1));
    let align = AlignOptions {
        taper: options.taper,
        ..options.align
    };
    // The patch rows whose stacks fit in the memory limit together (at least one).
    let row_bytes = |len: usize| (n * len * nx * size_of::<f32>()) as u128;
    let mut sets: Vec<Vec<(usize, usize)>> = vec![];
    let mut bytes = 0;
    for &row in &rows {
        match sets.last_mut() {
            Some(set) if bytes + row_bytes(row.1) <= options.align.memory_limit as u128 => {
                set.push(row)
            }
            _ => {
                sets.push(vec![row]);
                bytes = 0;
            }
        }
        bytes += row_bytes(row.1);
    }
    let mut moved = CorrectedFrames::new(frames, shifts, (ny, nx), None, options.align.target)?;
    let mut frame = try_zeroed_fft::<f32, _>(&Ix2(ny, nx))?;
    let mut tracks = vec![];
    for set in sets {
        let mut stacks: Vec<PatchStack> = set
            .iter()
            .flat_map(|&(y0, h)| cols.iter().map(move |&(x0, w)| ((y0, x0), (h, w))))
            .map(|(origin, shape)| Ok((origin, shape, try_zeroed_fft(&Ix3(n, shape.0, shape.1))?)))
            .collect::<Result<_>>()?;
        for i in 0..n {
            read_one(&mut moved, i, frame.view_mut())?;
            for ((y0, x0), (h, w), stack) in &mut stacks {
                stack
                    .index_axis_mut(Axis(0), i)
                    .assign(&frame.slice(s![*y0..*y0 + *h, *x0..*x0 + *w]));
            }
        }
        for (origin, shape, mut stack) in stacks {
            let aligned = align_movie(&mut stack, &align).map_err(|e| in_patch(e, origin))?;
            tracks.push(PatchTrack {
                origin,
                shape,
                shifts: aligned.shifts,
                peaks: aligned.peaks,
                converged: aligned.converged,
            });
        }
    }
    Ok(tracks)
}

/// A patch's alignment error, saying which patch.
fn in_patch(error: Error, (y, x): (usize, usize)) -> Error {
    match error {
        Error::InvalidArgument { name, message } => Error::InvalidArgument {
            name,
            message: format!("the patch at row {y}, column {x}: {message}"),
        },
        other => other,
    }
}

/// The least-squares fit of RELION's model to the drift of the patches that settled (frames
/// with nothing registered, and frame 0, whose drift is 0 by definition as the model's is, left
/// out); the reason where the observations cannot determine it, or where it leaves more than
/// `max_rms` pixels rms on an axis.
fn fit(
    patches: &[PatchTrack],
    frames: usize,
    (ny, nx): (usize, usize),
    max_rms: f64,
) -> std::result::Result<MotionModel, String> {
    // (frame, centre, drift) of every observation fitted.
    let observations: Vec<(usize, [f64; 2], [f64; 2])> = patches
        .iter()
        .filter(|p| p.converged)
        .flat_map(|p| {
            let centre = p.centre();
            p.shifts
                .iter()
                .zip(&p.peaks)
                .enumerate()
                .filter(|&(z, (_, &peak))| z > 0 && !super::align::nothing_registered(peak))
                .map(move |(z, (&shift, _))| (z, centre, shift))
        })
        .collect();
    // Frames are scaled to at most 1 for the solve (z³ of 100 frames is 10⁶), and the
    // coefficients scaled back.
    let scale = (frames - 1).max(1) as f64;
    let rows: Vec<[f64; TERMS]> = observations
        .iter()
        .map(|&(z, [cy, cx], _)| {
            terms(z as f64 / scale, cy / ny as f64 - 0.5, cx / nx as f64 - 0.5)
        })
        .collect();
    let observed: Vec<[f64; 2]> = observations.iter().map(|o| o.2).collect();
    let settled = patches.iter().filter(|p| p.converged).count();
    let unfit = || {
        format!(
            "{settled} of {} patches settled, with {} registered frames after the first in \
             all: too few places and frames to fit the local drift",
            patches.len(),
            rows.len()
        )
    };
    let [mut cy, mut cx] = least_squares(&rows, &observed).ok_or_else(unfit)?;
    for c in [&mut cy, &mut cx] {
        for (k, v) in c.iter_mut().enumerate() {
            *v /= scale.powi(k as i32 % 3 + 1);
        }
    }
    let mut model = MotionModel {
        coefficients_y: cy,
        coefficients_x: cx,
        frame_shape: (ny, nx),
        rms: [0.0; 2],
    };
    let mut squares = [0.0; 2];
    for &(z, [cy, cx], shift) in &observations {
        let fitted = model.shift_at(z as f64, cy, cx);
        for axis in 0..2 {
            squares[axis] += (shift[axis] - fitted[axis]).powi(2);
        }
    }
    model.rms = squares.map(|s| (s / observations.len() as f64).sqrt());
    if model.rms.iter().any(|r| r.is_nan() || *r >= max_rms) {
        return Err(format!(
            "the model leaves {:.2} px (dy) and {:.2} px (dx) rms of the patches' drift, not \
             under the {max_rms} px allowed: the patches' drift is too noisy or not smooth",
            model.rms[0], model.rms[1]
        ));
    }
    Ok(model)
}

/// The least-squares solutions of `rows · c = observed[.][axis]` for both axes, by Householder
/// QR in f64; `None` where the rows do not determine `c` (a pivot below 1e-9 of the largest).
fn least_squares(rows: &[[f64; TERMS]], observed: &[[f64; 2]]) -> Option<[[f64; TERMS]; 2]> {
    let m = rows.len();
    if m < TERMS {
        return None;
    }
    // Column by column: the 18 terms', then the two axes' observations (reflected alike).
    let mut columns: Vec<Vec<f64>> = (0..TERMS)
        .map(|k| rows.iter().map(|r| r[k]).collect())
        .chain((0..2).map(|axis| observed.iter().map(|o| o[axis]).collect()))
        .collect();
    for k in 0..TERMS {
        let rest = &mut columns[k..];
        let pivot = &rest[0];
        let norm = pivot[k..].iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm == 0.0 {
            return None;
        }
        let alpha = if pivot[k] > 0.0 { -norm } else { norm };
        // The reflection of v = column[k..] - alpha e_k takes the column to alpha e_k.
        let mut v = pivot[k..].to_vec();
        v[0] -= alpha;
        let vv: f64 = v.iter().map(|x| x * x).sum();
        if vv == 0.0 {
            continue;
        }
        for column in rest.iter_mut() {
            let d = 2.0 * column[k..].iter().zip(&v).map(|(a, b)| a * b).sum::<f64>() / vv;
            for (a, b) in column[k..].iter_mut().zip(&v) {
                *a -= d * b;
            }
        }
    }
    let largest = (0..TERMS).fold(0.0f64, |l, k| l.max(columns[k][k].abs()));
    if (0..TERMS).any(|k| columns[k][k].abs() <= 1e-9 * largest) {
        return None;
    }
    let mut c = [[0.0; TERMS]; 2];
    for (axis, c) in c.iter_mut().enumerate() {
        let b = &columns[TERMS + axis];
        for k in (0..TERMS).rev() {
            let rest: f64 = (k + 1..TERMS).map(|j| columns[j][k] * c[j]).sum();
            c[k] = (b[k] - rest) / columns[k][k];
        }
    }
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(y: [f64; TERMS], x: [f64; TERMS], shape: (usize, usize)) -> MotionModel {
        MotionModel {
            coefficients_y: y,
            coefficients_x: x,
            frame_shape: shape,
            rms: [0.0; 2],
        }
    }

    #[test]
    fn the_model_is_relions_polynomial() {
        let c: [f64; TERMS] = std::array::from_fn(|k| 0.1 * (k as f64 + 1.0) - 0.7);
        let m = model(c, c.map(|v| -2.0 * v), (200, 100));
        let (z, row, col) = (3.5, 150.0, 20.0);
        let (x, y) = (col / 100.0 - 0.5, row / 200.0 - 0.5);
        // RELION's getShiftAt, written out.
        let (z2, z3) = (z * z, z * z * z);
        let relion = (c[0] * z + c[1] * z2 + c[2] * z3)
            + (c[3] * z + c[4] * z2 + c[5] * z3) * x
            + (c[6] * z + c[7] * z2 + c[8] * z3) * x * x
            + (c[9] * z + c[10] * z2 + c[11] * z3) * y
            + (c[12] * z + c[13] * z2 + c[14] * z3) * y * y
            + (c[15] * z + c[16] * z2 + c[17] * z3) * x * y;
        let [dy, dx] = m.shift_at(z, row, col);
        assert!((dy - relion).abs() < 1e-12 && (dx + 2.0 * relion).abs() < 1e-12);
        assert_eq!(m.shift_at(0.0, row, col), [0.0, 0.0]);
    }

    #[test]
    fn the_fit_recovers_a_model_from_its_own_values() {
        let truth: [f64; TERMS] = std::array::from_fn(|k| ((k * 7 % 11) as f64 - 5.0) * 0.01);
        let shape = (300, 400);
        let want = model(truth, truth.map(|v| v * 0.5 + 0.001), shape);
        let patches: Vec<PatchTrack> = (0..4)
            .flat_map(|py| (0..3).map(move |px| (py, px)))
            .map(|(py, px)| {
                let track = PatchTrack {
                    origin: (py * 75, px * 133),
                    shape: (75, 133),
                    shifts: vec![],
                    peaks: vec![1.0; 30],
                    converged: true,
                };
                let [cy, cx] = track.centre();
                PatchTrack {
                    shifts: (0..30).map(|z| want.shift_at(z as f64, cy, cx)).collect(),
                    ..track
                }
            })
            .collect();
        let got = fit(&patches, 30, shape, 10.0).unwrap();
        for k in 0..TERMS {
            assert!(
                (got.coefficients_y[k] - want.coefficients_y[k]).abs() < 1e-9,
                "{k}"
            );
            assert!(
                (got.coefficients_x[k] - want.coefficients_x[k]).abs() < 1e-9,
                "{k}"
            );
        }
        assert!(got.rms[0] < 1e-9 && got.rms[1] < 1e-9);
        // Two columns of patches cannot give x²: no model, and the reason.
        let two: Vec<_> = patches
            .iter()
            .filter(|p| p.origin.1 < 200)
            .cloned()
            .collect();
        let reason = fit(&two, 30, shape, 10.0).unwrap_err();
        assert!(reason.contains("8 of 8 patches settled"), "{reason}");
        // Unsettled patches are left out.
        let mut unsettled = patches.clone();
        unsettled[2].converged = false;
        unsettled[2].shifts = vec![[9.0, 9.0]; 30];
        assert!(fit(&unsettled, 30, shape, 10.0).unwrap().rms[0] < 1e-9);
        // A fit that leaves more than the allowed rms is refused, saying how much.
        let mut noisy = patches.clone();
        for (k, p) in noisy.iter_mut().enumerate() {
            for (i, s) in p.shifts.iter_mut().enumerate().skip(1) {
                s[1] += if (i + k) % 2 == 0 { 1.0 } else { -1.0 };
            }
        }
        let reason = fit(&noisy, 30, shape, 0.5).unwrap_err();
        assert!(
            reason.contains("px (dx) rms") && reason.contains("under the 0.5 px allowed"),
            "{reason}"
        );
        let rms = fit(&noisy, 30, shape, 1.5).unwrap().rms;
        assert!(rms[0] < 1e-9 && rms[1] > 0.9 && rms[1] < 1.0, "{rms:?}");
    }

    #[test]
    fn interpolation_moves_by_the_model_and_clamps_at_the_edges() {
        let image = Array2::from_shape_fn((8, 10), |(y, x)| (10 * y + x) as f32);
        // A uniform shift of (+1.25, -0.5) at frame 1: coefficient 0 is z's alone.
        let mut y = [0.0; TERMS];
        let mut x = [0.0; TERMS];
        y[0] = 1.25;
        x[0] = -0.5;
        let m = model(y, x, (8, 10));
        let mut out = Array2::zeros((8, 10));
        interpolate(image.view(), &m, 1, out.view_mut(), Threads::One);
        // out(r, c) = image(r - 1.25, c + 0.5), linear in both: 10 (r - 1.25) + c + 0.5.
        assert!((out[[4, 3]] - (10.0 * 2.75 + 3.5)).abs() < 1e-5);
        assert_eq!(out[[0, 2]], image[[0, 2]] + 0.5); // row -1.25 clamped to 0
        assert_eq!(out[[3, 9]], image[[2, 9]] - 2.5); // column 9.5 clamped to 9
        interpolate(image.view(), &m, 0, out.view_mut(), Threads::All);
        assert_eq!(out, image); // frame 0 does not move
    }

    #[test]
    fn patches_are_fast_lengths_in_the_middle_of_their_shares() {
        assert_eq!(cuts(10, 3), [(0, 3), (3, 3), (6, 4)]);
        assert_eq!(cuts(9, 3), [(0, 3), (3, 3), (6, 3)]);
        // 409 and 410 are cut to 405 (3^4 5), in the middle of their shares.
        assert_eq!(
            cuts(2048, 5),
            [(2, 405), (411, 405), (821, 405), (1230, 405), (1640, 405)]
        );
        assert_eq!(cuts(256, 4), [(0, 64), (64, 64), (128, 64), (192, 64)]);
        assert_eq!(cuts(14, 2), [(0, 6), (7, 6)]); // 7 is not fast
    }
}
