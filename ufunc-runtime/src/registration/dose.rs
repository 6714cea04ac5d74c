//! Exposure (dose) weighting of an aligned sum, after Grant and Grigorieff (2015, eLife
//! 4:e06980), as RELION's motion correction and Unblur make it: each frame's spectrum is
//! weighted by how much of the specimen's signal at each frequency its electrons have not yet
//! destroyed, so the high frequencies come from the first frames and the low ones from all.

use super::align::{
    check_frames, host_threads, streamed_sum, streamed_sums, FrameSource, Sums, Wanted,
};
use super::pcc::ImagePlan;
use super::upsample::signed_bin;
use crate::alloc::try_zeroed_fft;
use crate::error::{Error, Result};
use crate::parallel::Threads;
use crate::Target;
use ndarray::{Array2, Ix2};
use num_complex::Complex;
use rayon::prelude::*;

/// How a movie was exposed, for [`dose_weighted_sum`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DoseWeighting {
    /// Electrons per Å² in each frame (> 0).
    pub exposure_per_frame: f64,
    /// Electrons per Å² the specimen received before the first frame (default 0). It lowers
    /// every frame's weights by the same factor, which the sum's normalisation cancels: it is
    /// kept for the record and checked, and changes no sum.
    pub pre_exposure: f64,
    /// The microscope's accelerating voltage in kV: 300 (the measured model) or 200 (its
    /// exposures count 1/0.8 as much, as RELION and cisTEM count them). Lower voltages are
    /// refused: the tools scale them differently (at 100 kV RELION by 1/0.64, cisTEM by
    /// 1/0.532; MotionCor3 at 120 kV by 1/0.45).
    pub voltage_kv: f64,
    /// The frames' pixel size in Å.
    pub pixel_size: f64,
}

impl DoseWeighting {
    /// `exposure_per_frame` e/Å² per frame of `pixel_size` Å at 300 kV, none before.
    pub fn new(exposure_per_frame: f64, pixel_size: f64) -> DoseWeighting {
        DoseWeighting {
            exposure_per_frame,
            pre_exposure: 0.0,
            voltage_kv: 300.0,
            pixel_size,
        }
    }

    /// The critical exposure `Ne(k) = 0.245 k^-1.665 + 2.81` e/Å² at spatial frequency `k`
    /// in 1/Å (Grant and Grigorieff's fit at 300 kV): infinite at `k = 0`.
    ///
    /// ```
    /// use ufunc_runtime::registration::DoseWeighting;
    /// let ne = DoseWeighting::critical_exposure(0.25); // at 4 Å
    /// assert!((ne - 5.274).abs() < 1e-3); // 0.245 * 4^1.665 + 2.81
    /// ```
    pub fn critical_exposure(frequency: f64) -> f64 {
        0.245 * frequency.powf(-1.665) + 2.81
    }

    /// The 300-kV-equivalent exposure at the end of frame `frame` (from 0), e/Å²; an error
    /// where the weighting's values are not ones it can weigh by.
    pub fn exposure_after(&self, frame: usize) -> Result<f64> {
        self.check()?;
        Ok(self.equivalent_exposure(frame))
    }

    /// Frame `frame`'s weight at spatial frequency `frequency` (1/Å): `exp(-N / (2 Ne))`,
    /// `N` its [`exposure_after`](Self::exposure_after).
    pub fn weight(&self, frame: usize, frequency: f64) -> Result<f64> {
        let exposure = self.exposure_after(frame)?;
        Ok((-exposure / (2.0 * Self::critical_exposure(frequency))).exp())
    }

    /// [`exposure_after`](Self::exposure_after) of checked values.
    fn equivalent_exposure(&self, frame: usize) -> f64 {
        let exposure = self.pre_exposure + self.exposure_per_frame * (frame + 1) as f64;
        // At 200 kV an electron damages as 1/0.8 of one at 300 kV (RELION's and cisTEM's).
        let voltage_factor = if (self.voltage_kv - 200.0).abs() <= 2.0 {
            0.8
        } else {
            1.0
        };
        exposure / voltage_factor
    }

    fn check(&self) -> Result<()> {
        let bad =
            |name: &'static str, message: String| Err(Error::InvalidArgument { name, message });
        let DoseWeighting {
            exposure_per_frame,
            pre_exposure,
            voltage_kv,
            pixel_size,
        } = *self;
        if !(exposure_per_frame > 0.0 && exposure_per_frame.is_finite()) {
            return bad(
                "exposure_per_frame",
                format!("must be a positive number of e/Å² per frame, got {exposure_per_frame}"),
            );
        }
        if !(pre_exposure >= 0.0 && pre_exposure.is_finite()) {
            return bad(
                "pre_exposure",
                format!("must be 0 or more e/Å², got {pre_exposure}"),
            );
        }
        if (voltage_kv - 300.0).abs() > 2.0 && (voltage_kv - 200.0).abs() > 2.0 {
            return bad(
                "voltage_kv",
                format!(
                    "must be 300 or 200 kV, where the tools agree on the exposure model, got \
                     {voltage_kv} kV"
                ),
            );
        }
        if !(pixel_size > 0.0 && pixel_size.is_finite()) {
            return bad(
                "pixel_size",
                format!("must be a positive number of Å, got {pixel_size}"),
            );
        }
        Ok(())
    }
}

/// The exposure-weighted aligned sum of `frames`, each moved by its `shift` (as
/// [`Alignment::shifts`](super::Alignment::shifts) gives them) by a Fourier shift: at every
/// frequency `k`, `Σ q_i(k) F_i(k) / sqrt(Σ q_i(k)²)`, `q_i` frame `i`'s
/// [`weight`](DoseWeighting::weight) (Grant and Grigorieff's equation 9, as RELION and
/// Unblur normalise it). At zero frequency every weight is 1, so the sum's mean is the plain
/// sum's over `sqrt(frames)`.
///
/// The frames are read once more, one at a time, and transformed on the host's cores (all of
/// them but with `Target::Cpu`, also with `Target::Cuda`).
///
/// ```
/// use ndarray::Array3;
/// use ufunc_runtime::registration::{dose_weighted_sum, DoseWeighting};
/// use ufunc_runtime::Target;
/// # fn main() -> Result<(), ufunc_runtime::Error> {
/// let mut movie = Array3::<f32>::from_elem((4, 8, 8), 1.0);
/// let dose = DoseWeighting::new(1.5, 1.0);
/// let sum = dose_weighted_sum(&mut movie, &[[0.0, 0.0]; 4], &dose, Target::Cpu)?;
/// assert!((sum[[3, 5]] - 2.0).abs() < 1e-5); // 4 frames of 1, over sqrt(4)
/// # Ok(())
/// # }
/// ```
pub fn dose_weighted_sum<S: FrameSource + ?Sized>(
    frames: &mut S,
    shifts: &[[f64; 2]],
    dose: &DoseWeighting,
    target: Target,
) -> Result<Array2<f32>> {
    dose.check()?;
    sum_at(frames, shifts, target, Some(dose))
}

/// The aligned sum of `frames`, each moved by its `shift` (as
/// [`Alignment::shifts`](super::Alignment::shifts) gives them) by a Fourier shift and added:
/// the alignment's sum made again, from shifts of one's own. The frames are read once, as
/// [`dose_weighted_sum`] reads them.
///
/// ```
/// use ndarray::Array3;
/// use ufunc_runtime::registration::shifted_sum;
/// use ufunc_runtime::Target;
/// # fn main() -> Result<(), ufunc_runtime::Error> {
/// let mut movie = Array3::<f32>::zeros((2, 8, 8));
/// movie[[0, 2, 3]] = 1.0;
/// movie[[1, 3, 3]] = 1.0; // the spot a row further on
/// let sum = shifted_sum(&mut movie, &[[0.0, 0.0], [-1.0, 0.0]], Target::Cpu)?;
/// assert!((sum[[2, 3]] - 2.0).abs() < 1e-5);
/// # Ok(())
/// # }
/// ```
pub fn shifted_sum<S: FrameSource + ?Sized>(
    frames: &mut S,
    shifts: &[[f64; 2]],
    target: Target,
) -> Result<Array2<f32>> {
    sum_at(frames, shifts, target, None)
}

/// The sums of the even frames (0, 2, 4, ...) and of the odd frames of `frames`, each moved
/// by its `shift` as [`shifted_sum`] moves them, read once: two halves of the same exposure
/// with independent noise, as RELION's `--even_odd_split` and MotionCor2's `-SplitSum` make
/// them, for noise2noise denoising (cryoCARE, Topaz-Denoise) and for half-set resolution
/// estimates. With one frame the odd sum is zeros.
///
/// ```
/// use ndarray::Array3;
/// use ufunc_runtime::registration::even_odd_sums;
/// use ufunc_runtime::Target;
/// # fn main() -> Result<(), ufunc_runtime::Error> {
/// let mut movie = Array3::from_shape_fn((3, 4, 4), |(f, _, _)| f as f32 + 1.0);
/// let [even, odd] = even_odd_sums(&mut movie, &[[0.0, 0.0]; 3], Target::Cpu)?;
/// assert!((even[[1, 2]] - 4.0).abs() < 1e-5 && (odd[[1, 2]] - 2.0).abs() < 1e-5);
/// # Ok(())
/// # }
/// ```
pub fn even_odd_sums<S: FrameSource + ?Sized>(
    frames: &mut S,
    shifts: &[[f64; 2]],
    target: Target,
) -> Result<[Array2<f32>; 2]> {
    let wanted = SumsWanted {
        halves: true,
        ..Default::default()
    };
    let sums = aligned_sums(frames, shifts, &wanted, target)?;
    Ok(sums.halves.expect("halves asked for"))
}

/// [`dose_weighted_sum`] and [`even_odd_sums`] together, from one reading of the frames, each
/// transformed once for the three sums: `(weighted, [even, odd])`, as the two give them.
///
/// ```
/// use ndarray::Array3;
/// use ufunc_runtime::registration::{dose_weighted_and_even_odd_sums, DoseWeighting};
/// use ufunc_runtime::Target;
/// # fn main() -> Result<(), ufunc_runtime::Error> {
/// let mut movie = Array3::from_shape_fn((3, 4, 4), |(f, _, _)| f as f32 + 1.0);
/// let dose = DoseWeighting::new(1.5, 1.0);
/// let (weighted, [even, odd]) =
///     dose_weighted_and_even_odd_sums(&mut movie, &[[0.0, 0.0]; 3], &dose, Target::Cpu)?;
/// assert!((even[[1, 2]] - 4.0).abs() < 1e-5 && (odd[[1, 2]] - 2.0).abs() < 1e-5);
/// assert!(weighted[[1, 2]] > 0.0);
/// # Ok(())
/// # }
/// ```
pub fn dose_weighted_and_even_odd_sums<S: FrameSource + ?Sized>(
    frames: &mut S,
    shifts: &[[f64; 2]],
    dose: &DoseWeighting,
    target: Target,
) -> Result<(Array2<f32>, [Array2<f32>; 2])> {
    let wanted = SumsWanted {
        dose: Some(dose),
        halves: true,
        ..Default::default()
    };
    let sums = aligned_sums(frames, shifts, &wanted, target)?;
    let weighted = sums.weighted.expect("a weighted sum with a dose");
    Ok((weighted, sums.halves.expect("halves asked for")))
}

/// The sums that [`aligned_sums`] makes from one reading of the frames.
#[derive(Debug, Clone, Copy, Default)]
pub struct SumsWanted<'a> {
    /// The sum weighted by this exposure, as [`dose_weighted_sum`] makes it.
    pub dose: Option<&'a DoseWeighting>,
    /// The even and the odd frames' sums, as [`even_odd_sums`] makes them.
    pub halves: bool,
    /// The amplitude spectra of groups of this many consecutive frames (from frame 0; the
    /// last group may be short), each group's frames moved by their shifts and added, summed
    /// over the groups (see [`AlignedSums::spectrum`]).
    pub spectrum_group: Option<usize>,
}

/// What [`aligned_sums`] made, as [`SumsWanted`] asked.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AlignedSums {
    /// The sum weighted by exposure.
    pub weighted: Option<Array2<f32>>,
    /// The even and the odd frames' sums.
    pub halves: Option<[Array2<f32>; 2]>,
    /// The groups' amplitude spectra summed: the frame's full plane of frequencies, zero
    /// frequency at `(rows / 2, cols / 2)` (NumPy's `fftshift`), each group's spectrum divided
    /// by the frame's pixels, as RELION's motion correction sums them for CTFFIND
    /// (`--grouping_for_ps`). A frame's own spectrum shows the Thon rings under shot noise; a
    /// group's shows them above it, and the sum over the groups averages that noise.
    pub spectrum: Option<Array2<f32>>,
}

/// The sums `wanted` asks for, of `frames` each moved by its `shift`, from one reading of the
/// frames (none where nothing is asked for), each frame transformed once for all of them.
///
/// ```
/// use ndarray::Array3;
/// use ufunc_runtime::registration::{aligned_sums, SumsWanted};
/// use ufunc_runtime::Target;
/// # fn main() -> Result<(), ufunc_runtime::Error> {
/// let mut movie = Array3::from_shape_fn((3, 4, 6), |(f, y, x)| (f + y * x) as f32);
/// let wanted = SumsWanted { halves: true, spectrum_group: Some(2), ..Default::default() };
/// let sums = aligned_sums(&mut movie, &[[0.0, 0.0]; 3], &wanted, Target::Cpu)?;
/// let spectrum = sums.spectrum.expect("asked for");
/// assert_eq!(spectrum.dim(), (4, 6));
/// // At zero frequency: the means of frames 0 + 1 and of frame 2.
/// let mean = |f: f32| f + 1.5 * 2.5;
/// assert!((spectrum[[2, 3]] - (mean(0.0) + mean(1.0) + mean(2.0))).abs() < 1e-4);
/// assert!(sums.halves.is_some() && sums.weighted.is_none());
/// # Ok(())
/// # }
/// ```
pub fn aligned_sums<S: FrameSource + ?Sized>(
    frames: &mut S,
    shifts: &[[f64; 2]],
    wanted: &SumsWanted<'_>,
    target: Target,
) -> Result<AlignedSums> {
    if let Some(dose) = wanted.dose {
        dose.check()?;
    }
    if wanted.spectrum_group == Some(0) {
        return Err(Error::InvalidArgument {
            name: "spectrum_group",
            message: "a group of 0 frames: at least 1 is needed".into(),
        });
    }
    let (plan, threads) = prepared(frames, shifts, target)?;
    let parts = if wanted.halves { 2 } else { 0 };
    if wanted.dose.is_none() && parts == 0 && wanted.spectrum_group.is_none() {
        return Ok(AlignedSums::default());
    }
    let pass = Wanted {
        dose: wanted.dose,
        parts,
        spectrum_group: wanted.spectrum_group,
    };
    let Sums {
        weighted,
        plain,
        amplitudes,
    } = streamed_sums(frames, shifts, &plan, threads, pass)?;
    Ok(AlignedSums {
        weighted,
        halves: plain.try_into().ok(),
        spectrum: amplitudes.map(|half| centred_plane(&half, plan.width())),
    })
}

/// The full plane of a real image's `half` spectrum (`cols / 2 + 1` columns) of values that
/// are the same at a frequency and its opposite (amplitudes), zero frequency at the centre.
fn centred_plane(half: &Array2<f32>, cols: usize) -> Array2<f32> {
    let rows = half.nrows();
    Array2::from_shape_fn((rows, cols), |(r, c)| {
        let ky = (r + rows - rows / 2) % rows;
        let kx = c as isize - (cols / 2) as isize;
        match kx >= 0 {
            true => half[[ky, kx as usize]],
            false => half[[(rows - ky) % rows, kx.unsigned_abs()]],
        }
    })
}

/// The frames streamed once, moved by `shifts`, weighted by `dose` where given, and added, on
/// the host's cores (all but with `Target::Cpu`).
fn sum_at<S: FrameSource + ?Sized>(
    frames: &mut S,
    shifts: &[[f64; 2]],
    target: Target,
    dose: Option<&DoseWeighting>,
) -> Result<Array2<f32>> {
    let (plan, threads) = prepared(frames, shifts, target)?;
    streamed_sum(frames, shifts, &plan, threads, dose)
}

/// The plan and threads of a sum of `frames` at `shifts` on `target`, both checked.
fn prepared<S: FrameSource + ?Sized>(
    frames: &S,
    shifts: &[[f64; 2]],
    target: Target,
) -> Result<(ImagePlan<f32>, Threads)> {
    check_frames(frames)?;
    if shifts.len() != frames.len() {
        return Err(Error::InvalidArgument {
            name: "shifts",
            message: format!(
                "one per frame is needed: {} shifts for {} frames",
                shifts.len(),
                frames.len()
            ),
        });
    }
    let threads = host_threads(target);
    let (ny, nx) = frames.frame_shape();
    Ok((ImagePlan::<f32>::new(ny, nx)?, threads))
}

/// Per frequency of a half spectrum: the weight of the frame being added, what it is
/// multiplied by from one frame to the next (exposures grow by the same step), and the sum
/// of the squared weights so far.
pub(super) struct FrameWeights {
    weight: Array2<f32>,
    step: Array2<f32>,
    squares: Array2<f32>,
}

impl FrameWeights {
    /// The weights of frame 0 of a `(ny, nx)` movie, for its half spectra, of checked
    /// `dose`. Every frame's weights are scaled so that frame 0's are 1 (a factor common to
    /// all frames, which the normalisation cancels): the first frame's own, after a large
    /// pre-exposure, would underflow in f32 at high frequencies, and their squares with them.
    pub(super) fn new(
        dose: &DoseWeighting,
        (ny, nx): (usize, usize),
        threads: Threads,
    ) -> Result<FrameWeights> {
        let shape = Ix2(ny, nx / 2 + 1);
        let mut weights = FrameWeights {
            weight: try_zeroed_fft(&shape)?,
            step: try_zeroed_fft(&shape)?,
            squares: try_zeroed_fft(&shape)?,
        };
        let step = dose.equivalent_exposure(1) - dose.equivalent_exposure(0);
        let pixel = dose.pixel_size;
        weights
            .par_rows()
            .enumerate()
            .with_min_len(threads.min_len())
            .for_each(|(ky, row)| {
                let fy = signed_bin(ky, ny) / ny as f64;
                row.weight.fill(1.0);
                for (kx, s) in row.step.iter_mut().enumerate() {
                    let fx = kx as f64 / nx as f64;
                    let frequency = fy.hypot(fx) / pixel;
                    // 1 / (2 Ne): 0 at zero frequency, where Ne is infinite.
                    let rate = 0.5 / DoseWeighting::critical_exposure(frequency);
                    *s = (-step * rate).exp() as f32;
                }
            });
        Ok(weights)
    }

    /// The rows of the weights, for [`WeightRow::add`] side by side.
    pub(super) fn par_rows(&mut self) -> impl IndexedParallelIterator<Item = WeightRow<'_>> {
        let cols = self.weight.ncols().max(1);
        let standard = "weights made in standard layout";
        let weight = self.weight.as_slice_mut().expect(standard);
        let step = self.step.as_slice_mut().expect(standard);
        let squares = self.squares.as_slice_mut().expect(standard);
        weight
            .par_chunks_mut(cols)
            .zip(step.par_chunks_mut(cols))
            .zip(squares.par_chunks_mut(cols))
            .map(|((weight, step), squares)| WeightRow {
                weight,
                step,
                squares,
            })
    }

    /// Divides every frequency of `total` by the root of its squared weights (at least 1:
    /// frame 0's).
    pub(super) fn normalise(&self, total: &mut Array2<Complex<f32>>, threads: Threads) {
        let total = total.as_slice_mut().expect("a standard-layout spectrum");
        let squares = self
            .squares
            .as_slice()
            .expect("weights made in standard layout");
        total
            .par_iter_mut()
            .zip(squares)
            .with_min_len(threads.min_len())
            .for_each(|(t, &q)| *t /= q.sqrt());
    }
}

/// One row of [`FrameWeights`].
pub(super) struct WeightRow<'a> {
    weight: &'a mut [f32],
    step: &'a mut [f32],
    squares: &'a mut [f32],
}

impl WeightRow<'_> {
    /// `total += weight * spectrum * py * px` (the row of a frame's spectrum moved by its
    /// shift's phase ramp, `py` the row's factor), and on to the next frame's weights.
    pub(super) fn add(
        self,
        total: &mut [Complex<f32>],
        spectrum: &[Complex<f32>],
        py: Complex<f32>,
        px: &[Complex<f32>],
    ) {
        let weights = self
            .weight
            .iter_mut()
            .zip(self.step.iter())
            .zip(self.squares.iter_mut());
        for (((t, &s), &p), ((w, &step), q)) in total.iter_mut().zip(spectrum).zip(px).zip(weights)
        {
            *t += s * (py * p) * *w;
            *q += *w * *w;
            *w *= step;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fft::{fft2, ifft2};
    use ndarray::Array3;
    use num_complex::Complex64;
    use std::f64::consts::PI;

    fn noise_movie(frames: usize, (ny, nx): (usize, usize), seed: u64) -> Array3<f32> {
        let mut state = seed;
        Array3::from_shape_fn((frames, ny, nx), |_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 24) as f32
        })
    }

    /// Equation 9 written out on full complex spectra in f64, each weight from
    /// [`DoseWeighting::weight`] directly.
    fn naive_sum(movie: &Array3<f32>, shifts: &[[f64; 2]], dose: &DoseWeighting) -> Array2<f64> {
        let (_, ny, nx) = movie.dim();
        let mut total = Array2::<Complex64>::zeros((ny, nx));
        let mut squares = Array2::<f64>::zeros((ny, nx));
        for (i, frame) in movie.outer_iter().enumerate() {
            let frame = frame.mapv(|v| Complex64::new(v as f64, 0.0));
            let spectrum = fft2(&frame).unwrap();
            for ((ky, kx), z) in spectrum.indexed_iter() {
                let (fy, fx) = (
                    signed_bin(ky, ny) / ny as f64,
                    signed_bin(kx, nx) / nx as f64,
                );
                let q = dose.weight(i, fy.hypot(fx) / dose.pixel_size).unwrap();
                let ramp =
                    Complex64::from_polar(1.0, -2.0 * PI * (fy * shifts[i][0] + fx * shifts[i][1]));
                total[[ky, kx]] += z * ramp * q;
                squares[[ky, kx]] += q * q;
            }
        }
        let total = ndarray::Zip::from(&total)
            .and(&squares)
            .map_collect(|t, q| t / q.sqrt());
        ifft2(&total).unwrap().mapv(|z| z.re)
    }

    /// Against equation 9 written out, at 300 and 200 kV, with a pre-exposure, odd sides with
    /// sub-pixel shifts and even sides with whole ones (whose Nyquist terms stay real).
    #[test]
    fn the_sum_is_equation_9() {
        let cases = [
            (
                (15, 21),
                [[0.0, 0.0], [0.4, -1.3], [-2.7, 0.6], [1.1, 2.2]],
                300.0,
                0.0,
            ),
            (
                (16, 20),
                [[0.0, 0.0], [1.0, -3.0], [-2.0, 5.0], [7.0, 1.0]],
                200.0,
                3.0,
            ),
            (
                (9, 1),
                [[0.0, 0.0], [0.5, 0.0], [-1.5, 0.0], [2.0, 0.0]],
                300.0,
                1.0,
            ),
        ];
        for (k, (shape, shifts, voltage_kv, pre_exposure)) in cases.into_iter().enumerate() {
            let mut movie = noise_movie(4, shape, 7 + k as u64);
            let dose = DoseWeighting {
                exposure_per_frame: 4.0,
                pre_exposure,
                voltage_kv,
                pixel_size: 1.3,
            };
            let want = naive_sum(&movie, &shifts, &dose);
            for target in [Target::Cpu, Target::Parallel] {
                let got = dose_weighted_sum(&mut movie, &shifts, &dose, target).unwrap();
                let scale = want.iter().fold(0f64, |m, v| m.max(v.abs()));
                let worst = ndarray::Zip::from(&got)
                    .and(&want)
                    .fold(0f64, |m, &g, &w| m.max((g as f64 - w).abs()));
                assert!(
                    worst < 1e-5 * scale,
                    "{shape:?} {target:?}: off by {worst} of {scale}"
                );
            }
        }
    }

    /// One frame's weights cancel: its weighted sum is the frame.
    #[test]
    fn one_frame_is_itself() {
        let mut movie = noise_movie(1, (12, 17), 3);
        let dose = DoseWeighting::new(30.0, 0.8);
        let got = dose_weighted_sum(&mut movie, &[[0.0, 0.0]], &dose, Target::Parallel).unwrap();
        let frame = movie.index_axis(ndarray::Axis(0), 0);
        let worst = ndarray::Zip::from(&got)
            .and(frame)
            .fold(0f32, |m, &g, &f| m.max((g - f).abs()));
        assert!(worst < 1e-5, "{worst}");
    }

    /// Later frames lose their high frequencies: a fine stripe pattern in the last frame only
    /// comes through far weaker than in the first only.
    #[test]
    fn later_frames_lose_the_high_frequencies() {
        let (ny, nx) = (16, 16);
        // Stripes 4 pixels apart at 1 Å: 1/4 Å⁻¹, where Ne is 5.3 e/Å².
        let stripes = |(_, x): (usize, usize)| (2.0 * PI * x as f64 / 4.0).cos() as f32;
        let amplitude = |frame: usize| {
            let mut movie = Array3::<f32>::zeros((10, ny, nx));
            movie
                .index_axis_mut(ndarray::Axis(0), frame)
                .assign(&Array2::from_shape_fn((ny, nx), stripes));
            let dose = DoseWeighting::new(2.0, 1.0);
            let sum = dose_weighted_sum(&mut movie, &[[0.0, 0.0]; 10], &dose, Target::Cpu).unwrap();
            sum[[0, 0]] as f64
        };
        let dose = DoseWeighting::new(2.0, 1.0);
        let (first, last) = (amplitude(0), amplitude(9));
        let want = dose.weight(9, 0.25).unwrap() / dose.weight(0, 0.25).unwrap();
        assert!(
            ((last / first) - want).abs() < 1e-4,
            "{last} / {first}, not {want}"
        );
        assert!(want < 0.2, "{want}");
    }

    #[test]
    fn exposures_and_voltages() {
        let dose = DoseWeighting {
            exposure_per_frame: 1.5,
            pre_exposure: 2.0,
            voltage_kv: 200.0,
            pixel_size: 1.0,
        };
        let exposure = |d: &DoseWeighting, frame| d.exposure_after(frame).unwrap();
        let weight = |d: &DoseWeighting, frame, k| d.weight(frame, k).unwrap();
        assert!((exposure(&dose, 0) - 3.5 / 0.8).abs() < 1e-12);
        assert!((exposure(&dose, 3) - 8.0 / 0.8).abs() < 1e-12);
        assert_eq!(weight(&dose, 5, 0.0), 1.0);
        let at_300 = DoseWeighting {
            voltage_kv: 300.0,
            ..dose
        };
        assert!((exposure(&at_300, 3) - 8.0).abs() < 1e-12);
        assert!(weight(&dose, 3, 0.3) < weight(&at_300, 3, 0.3));
        // Values the weighting cannot weigh by are errors here too, not a 300 kV weight.
        let at_120 = DoseWeighting {
            voltage_kv: 120.0,
            ..dose
        };
        assert!(at_120
            .weight(0, 0.1)
            .unwrap_err()
            .to_string()
            .contains("120 kV"));
    }

    /// A pre-exposure scales every frame's weights alike, which the normalisation cancels:
    /// however large (a late tilt of a tomogram), it leaves the sum as it is, though the
    /// first frame's own weight at high frequencies underflows in f32.
    #[test]
    fn a_large_pre_exposure_changes_nothing() {
        let mut movie = noise_movie(5, (24, 24), 11);
        let shifts = [[0.0, 0.0], [1.0, 2.0], [-1.0, 0.0], [2.0, -3.0], [0.0, 1.0]];
        let fresh = DoseWeighting::new(3.0, 0.5);
        let late = DoseWeighting {
            pre_exposure: 2000.0,
            ..fresh
        };
        assert_eq!(late.weight(0, 1.0).unwrap() as f32, 0.0);
        let mut sum = |dose| dose_weighted_sum(&mut movie, &shifts, &dose, Target::Cpu).unwrap();
        let (a, b) = (sum(fresh), sum(late));
        let worst = (&a - &b).iter().fold(0f32, |m, v| m.max(v.abs()));
        assert!(worst < 1e-5, "{worst}");
    }

    #[test]
    fn bad_input_is_an_error_naming_it() {
        let mut movie = noise_movie(3, (8, 8), 1);
        let good = DoseWeighting::new(1.0, 1.0);
        let zeros = [[0.0, 0.0]; 3];
        let cases = [
            (
                DoseWeighting {
                    exposure_per_frame: 0.0,
                    ..good
                },
                &zeros[..],
                "exposure_per_frame",
            ),
            (
                DoseWeighting {
                    pre_exposure: -1.0,
                    ..good
                },
                &zeros[..],
                "pre_exposure",
            ),
            (
                DoseWeighting {
                    voltage_kv: 120.0,
                    ..good
                },
                &zeros[..],
                "120 kV",
            ),
            (
                DoseWeighting {
                    pixel_size: f64::NAN,
                    ..good
                },
                &zeros[..],
                "pixel_size",
            ),
            (good, &zeros[..2], "2 shifts for 3 frames"),
        ];
        for (dose, shifts, named) in cases {
            let message = dose_weighted_sum(&mut movie, shifts, &dose, Target::Cpu)
                .unwrap_err()
                .to_string();
            assert!(message.contains(named), "{message}");
        }
        let mut empty = Array3::<f32>::zeros((0, 8, 8));
        assert!(dose_weighted_sum(&mut empty, &[], &good, Target::Cpu).is_err());
    }
}
