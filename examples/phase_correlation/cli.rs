//! The command line: options (clap), the `--shard K/N` selection, and their translation into
//! the registration's `AlignOptions`. The options' ranges are checked here, when the command
//! line is parsed, so that a bad value is refused naming its flag before any movie is read; what
//! only the alignment can check (the memory `--upsample` needs for a movie's frames) is told with
//! the flag too, by [`name_the_flag`].

use clap::{Parser, ValueEnum};
use std::path::PathBuf;
use std::str::FromStr;
use ufunc::registration::{AlignOptions, Normalization, Reference};
use ufunc::Target;

// The numeric options (and `--shard`) take values that begin with '-' (`--tolerance -1`), so
// that a negative value is refused by the option's own check, naming the flag, rather than
// taken for an unknown flag; a missing value (`--taper --force`) is refused by that check too.

/// Drift correction of electron-microscopy movies by phase correlation: every frame is
/// registered (sub-pixel) and the aligned frames are summed. For each movie NAME.ext it writes
/// NAME.shifts.csv, NAME.shifts.json, NAME.aligned.mrc, NAME.aligned.png and NAME.drift.png
/// (and NAME.aligned_DW.mrc with --dose-per-frame, NAME.star with --relion-star,
/// NAME.patches.csv and NAME.patches.png with --patches, NAME.aligned_EVN.mrc and
/// NAME.aligned_ODD.mrc with --split-sums, NAME.aligned_stack.mrcs with --aligned-stack,
/// NAME.aligned_PS.mrc with --ps-grouping).
/// With no movie, it runs on a built-in synthetic movie and reports the error against the truth.
#[derive(Parser, Debug, Clone)]
#[command(name = "phase_correlation", version)]
pub struct Args {
    /// Movies (.npy, .tif/.tiff, .mrc/.mrcs/.st, .eer, .dm4/.dm3): files, folders (every movie
    /// in them) or glob patterns such as 'session/*.tif'; a folder or glob leaves out MRC and DM
    /// files of a single image (gain references, defect maps).
    pub movies: Vec<String>,
    /// Output folder [default: beside each movie; target/phase_correlation_demo for the demo].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// What each frame is registered against: the sum of the other aligned frames (iterated),
    /// or the first frame.
    #[arg(long, value_enum, default_value_t = ReferenceArg::Sum)]
    pub reference: ReferenceArg,
    /// Shifts are found to within 1/N pixel.
    #[arg(long, allow_hyphen_values = true, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub upsample: u32,
    /// Phase correlation, or plain cross-correlation (better at low dose) [default: none].
    #[arg(long, value_enum)]
    pub normalization: Option<NormalizationArg>,
    /// B-factor (pixels²) of the Gaussian weighting of the cross-power spectrum with the sum
    /// reference; 0 turns it off [default: 150].
    #[arg(long, allow_hyphen_values = true, value_name = "B", value_parser = bfactor)]
    pub bfactor: Option<f64>,
    /// The most passes over the frames with the sum reference [default: 10].
    #[arg(long, allow_hyphen_values = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub iterations: Option<u32>,
    /// Stop iterating when no shift changes by more than this many pixels [default: 0.05].
    #[arg(long, allow_hyphen_values = true, value_name = "PX", value_parser = tolerance)]
    pub tolerance: Option<f64>,
    /// Frames larger than this (pixels, per axis, at least 2) are aligned on their
    /// Fourier-cropped spectra; the alignment keeps the cropped ones alone (and the sum reads
    /// the movie again) where their full spectra do not fit in --memory-limit, and with
    /// --taper or --group (--reference first keeps none). With the sum reference, lengths of
    /// 256 or more whose transforms are slow are also aligned at the largest fast length
    /// within them (K2's 3710 x 3838 at 3696 x 3780) [default: 4096].
    #[arg(long, allow_hyphen_values = true, value_name = "PX", value_parser = align_size)]
    pub align_size: Option<usize>,
    /// The frames' spectra stay in memory between passes when they fit in this many MiB;
    /// otherwise each pass reads the movie again, so memory stays bounded by a few frames
    /// [default: half the memory free to the process (the system's available memory, or a
    /// Slurm job's or container's room within its limit), at least 2048; with --target cuda
    /// the least of that and half the device's free memory, at least 2048, for the spectra
    /// are kept on the device and --patches' stacks on the host].
    #[arg(long, allow_hyphen_values = true, value_name = "MIB", value_parser = mebibytes)]
    pub memory_limit: Option<usize>,
    /// Taper each frame's edges (a raised cosine over this fraction of each axis, 0 to 0.5)
    /// before registering it: for frames whose edges do not move with the specimen
    /// (illumination gradients), which otherwise pull the shifts towards zero [default: 0].
    #[arg(long, allow_hyphen_values = true, value_name = "FRACTION", value_parser = taper)]
    pub taper: Option<f64>,
    /// Add this many consecutive frames before registering them (MotionCor2's -Group), and
    /// interpolate each frame's shift between the groups': for movies of too few counts per
    /// frame (fine frame rates, EER). The drift must be smooth over a group [default: 1].
    #[arg(long, allow_hyphen_values = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub group: Option<u32>,
    /// Also align patches (local motion, as MotionCor2's -Patch X Y and RELION's
    /// --patch_x/--patch_y): after the whole-frame alignment, cut the frames into X columns by
    /// Y rows of patches (5x5, or 5 for 5x5; at least 3 each), align each patch's frames, fit
    /// RELION's polynomial model of the drift left at each place, and sum the frames moved
    /// pixel by pixel by it. For specimens that bend or turn under the beam. Writes
    /// NAME.patches.csv (each patch's drift per frame and the model's fit to it) and
    /// NAME.patches.png (both plotted at the patches' places).
    #[arg(long, allow_hyphen_values = true, value_name = "XxY", value_parser = patch_grid)]
    pub patches: Option<PatchGrid>,
    /// Where the registration runs.
    #[arg(long, value_enum, default_value_t = TargetArg::Parallel)]
    pub target: TargetArg,
    /// Overwrite existing results (by default a movie whose results all exist is skipped).
    #[arg(long)]
    pub force: bool,
    /// Process only every N-th movie starting at the K-th (K from 0), e.g. a Slurm array task's
    /// `$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT`.
    #[arg(long, allow_hyphen_values = true, value_name = "K/N")]
    pub shard: Option<Shard>,
    /// Fourier-crop the aligned sum by this factor (MotionCor2's -FtBin), e.g. 2 for a
    /// super-resolution movie; its sides stay even, shrink alike (else refused) and its pixel
    /// size grows by as much.
    #[arg(long, allow_hyphen_values = true, value_name = "FACTOR", default_value_t = 1.0, value_parser = bin_factor)]
    pub bin: f64,
    /// The movie's pixel size in Å, which the aligned sum's MRC header gives (times the --bin
    /// factor) [default: the movie's MRC header's, or a DM file's calibration; unknown, the
    /// header says 1].
    #[arg(long, allow_hyphen_values = true, value_name = "ANGSTROM", value_parser = pixel_size)]
    pub pixel_size: Option<f32>,
    /// Also write NAME.aligned_DW.mrc, the sum weighted by exposure (Grant & Grigorieff 2015,
    /// as MotionCor2's -FmDose and RELION's --dose_per_frame): electrons per Å² in each frame.
    /// Needs the pixel size (the movie's header's, or --pixel-size where it says none or 1 Å).
    #[arg(long, allow_hyphen_values = true, value_name = "E_PER_A2", value_parser = exposure)]
    pub dose_per_frame: Option<f64>,
    /// Electrons per Å² before the first frame, for --dose-per-frame: recorded, but it changes
    /// nothing in the weighted sum (it lowers every frame's weights alike) [default: 0].
    #[arg(long, allow_hyphen_values = true, value_name = "E_PER_A2", value_parser = pre_exposure, requires = "dose_per_frame")]
    pub pre_exposure: Option<f64>,
    /// The microscope's voltage for --dose-per-frame: 300 or 200 kV (the tools disagree on
    /// lower ones) [default: 300].
    #[arg(long, allow_hyphen_values = true, value_name = "KV", value_parser = voltage, requires = "dose_per_frame")]
    pub voltage: Option<f64>,
    /// Also write NAME.aligned_EVN.mrc and NAME.aligned_ODD.mrc: the aligned sums of the even
    /// frames (0, 2, 4, ... from the first summed) and of the odd ones, not weighted by dose
    /// (RELION's --even_odd_split, MotionCor2's -SplitSum): two halves of the exposure with
    /// independent noise, for noise2noise denoising (cryoCARE, Topaz-Denoise). The movie is
    /// read once more (once for these and the --dose-per-frame sum).
    #[arg(long)]
    pub split_sums: bool,
    /// Also write NAME.aligned_stack.mrcs: the frames as aligned (each moved by its shift,
    /// and by the local model with --patches), binned as the sum, not weighted by dose, as
    /// MotionCor2's -OutStack 1 writes them: for tools that take aligned frames, or to look at
    /// them. As large as the summed frames in float32 (binned; half that with --float16); the
    /// movie is read once more (once for it and the other sums).
    #[arg(long)]
    pub aligned_stack: bool,
    /// With --aligned-stack, sum every N consecutive aligned frames into one frame of the stack
    /// (MotionCor2's -OutStack 1 N), the last holding the frames left over, as MotionCor3 groups
    /// them: a stack N times smaller [default: 1].
    #[arg(long, allow_hyphen_values = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), requires = "aligned_stack")]
    pub stack_group: Option<u32>,
    /// Also write NAME.aligned_PS.mrc, the power spectrum for CTF estimation that RELION's
    /// motion correction writes (--grouping_for_ps; its GUI's "sum power spectra every E
    /// e/Å²" is N = E over the dose per frame, rounded, at least 1): the amplitude spectra of
    /// groups of N aligned
    /// frames, summed; of the frames binned by --bin, made square, cut to CTFFIND's 1.4 Å
    /// where the pixels are smaller, and resampled to --ps-size pixels. Its header gives the
    /// pixel size CTFFIND reads it at; --relion-micrographs lists it (rlnCtfPowerSpectrum),
    /// for RELION's CTFFIND job with --use_given_ps. Needs the pixel size. The movie is read
    /// once more (once for it and the other sums).
    #[arg(long, allow_hyphen_values = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub ps_grouping: Option<u32>,
    /// The side of --ps-grouping's power spectrum in pixels (even; RELION's --ps_size)
    /// [default: 512].
    #[arg(long, allow_hyphen_values = true, value_name = "PX", value_parser = ps_size, requires = "ps_grouping")]
    pub ps_size: Option<usize>,
    /// Write the sums and the aligned stack in float16 (MRC mode 12), in half the space, as
    /// RELION's --float16 writes them (a sum with values beyond float16's 65504 fails); the
    /// power spectrum stays float32.
    /// CTFFIND cannot read float16 micrographs, so with --relion-micrographs it needs
    /// --ps-grouping, as RELION requires.
    #[arg(long)]
    pub float16: bool,
    /// Also write NAME.star, RELION's motion-correction metadata of the movie (its global
    /// shift per frame, as RELION's MotionCorr job writes it), for RELION's Bayesian polishing.
    #[arg(long)]
    pub relion_star: bool,
    /// With --relion-star, also write FILE: RELION's micrographs STAR of this run's movies
    /// (done, or skipped as finished), as its MotionCorr job's corrected_micrographs.star: the
    /// optics groups, and each movie's sums, NAME.star and accumulated motion, for RELION's CTF
    /// estimation and Bayesian polishing. Needs --dose-per-frame and --cs; rewritten by each run.
    #[arg(long, value_name = "FILE", requires_all = ["relion_star", "dose_per_frame", "cs"])]
    pub relion_micrographs: Option<PathBuf>,
    /// The microscope's spherical aberration in mm, for --relion-micrographs (RELION requires
    /// it of every optics group).
    #[arg(long, allow_hyphen_values = true, value_name = "MM", value_parser = spherical_aberration, requires = "relion_micrographs")]
    pub cs: Option<f64>,
    /// The amplitude contrast, for --relion-micrographs [default: 0.1, as RELION's import].
    #[arg(long, allow_hyphen_values = true, value_name = "FRACTION", value_parser = amplitude_contrast, requires = "relion_micrographs")]
    pub amplitude_contrast: Option<f64>,
    /// Replace hot pixels in every frame: those of the movie's unaligned sum above its mean by
    /// more than SIGMA standard deviations (RELION's motion correction uses 6), each by a good
    /// neighbour's value, as RELION does; with --gain, the pixels the gain zeroes too. They
    /// would pull the shifts towards zero. The movie is read once more to find them.
    #[arg(long, allow_hyphen_values = true, value_name = "SIGMA", value_parser = hot_pixel_sigma)]
    pub hot_pixels: Option<f64>,
    /// Replace the pixels FILE lists in every frame, as --hot-pixels does: a defect map (MRC,
    /// TIFF or DM4 of the frames' size, read as they are; not 0: a defect) or MotionCor2's defect file
    /// (.txt, a line `x y w h` per rectangle, x the column and y the row of the frames as read,
    /// an upsampled EER movie's as rendered); with --gain, the pixels the gain zeroes too.
    #[arg(long, value_name = "FILE")]
    pub defects: Option<PathBuf>,
    /// Gain reference (MRC, TIFF or Gatan's DM4, one frame of the movies' size) multiplied into
    /// every frame; a DM4 (as GMS and SerialEM save K2 and K3 gains) is read as IMOD's dm2mrc
    /// converts it, upside down as DigitalMicrograph shows it; for EER movies also Thermo
    /// Fisher's .gain, and one of the detector's size with --eer-upsampling 2 or 3. (RELION divides by an EER movie's gain when it is not a .gain
    /// file: give it here as its reciprocal.)
    #[arg(long, value_name = "FILE")]
    pub gain: Option<PathBuf>,
    /// Turn the gain reference counter-clockwise by 0, 90, 180 or 270 degrees as IMOD shows it
    /// (MotionCor2's -RotGain and RELION's --gain_rot, times 90), before any flip.
    #[arg(long, allow_hyphen_values = true, value_name = "DEGREES", default_value_t = 0, value_parser = gain_rotation, requires = "gain")]
    pub gain_rotate: u16,
    /// Flip the gain reference after turning it: upside down (MotionCor2's -FlipGain 1, RELION's
    /// --gain_flip 1) or left to right (-FlipGain 2).
    #[arg(long, value_enum, default_value_t = GainFlip::None, requires = "gain")]
    pub gain_flip: GainFlip,
    /// EER movies: sum this many detector frames into each frame that is aligned (RELION's
    /// --eer_grouping); the frames left over after the last whole group are left out, as
    /// RELION leaves them. --dose-per-frame is then the dose of such a group.
    #[arg(long, allow_hyphen_values = true, value_name = "N", default_value_t = crate::io::eer::EerRendering::default().grouping as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub eer_grouping: u32,
    /// EER movies: render the frames at the detector's pixels (1; 4096x4096 on a Falcon 4), or
    /// from the electrons' sub-pixel positions at 2 (8192x8192) or 4 times as many per axis
    /// (3), as RELION's --eer_upsampling and MotionCor2's -EerSampling. --pixel-size is then
    /// that of the frames as rendered: half the detector's at 2.
    #[arg(long, allow_hyphen_values = true, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=3))]
    pub eer_upsampling: u32,
    /// Align and sum only the frames from this one on (from 1; an EER movie's as grouped), as
    /// RELION's --first_frame_sum and MotionCor2's -Throw (N - 1): the first frames move the
    /// most. NAME.star lists every frame of the movie, those left out as RELION does (-9999)
    /// [default: 1].
    #[arg(long, allow_hyphen_values = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub first_frame: Option<u32>,
    /// Align and sum only the frames up to this one (from 1), as RELION's --last_frame_sum and
    /// MotionCor2's -Trunc (frames - N); recorded as given, so that a rerun without it (even
    /// where N is the last frame) is told apart [default: the last].
    #[arg(long, allow_hyphen_values = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub last_frame: Option<u32>,
}

/// `--gain-flip`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum GainFlip {
    #[default]
    None,
    Updown,
    Leftright,
}

impl GainFlip {
    /// The name `--gain-flip` takes.
    pub fn name(self) -> String {
        self.to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_owned())
    }

    /// The axis the flip reverses.
    pub fn axis(self) -> Option<ndarray::Axis> {
        match self {
            GainFlip::None => None,
            GainFlip::Updown => Some(ndarray::Axis(0)),
            GainFlip::Leftright => Some(ndarray::Axis(1)),
        }
    }
}

/// `--reference`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ReferenceArg {
    #[default]
    Sum,
    First,
}

/// `--normalization`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NormalizationArg {
    Phase,
    None,
}

/// `--target`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum TargetArg {
    Cpu,
    #[default]
    Parallel,
    Cuda,
}

/// `--shard K/N`: the movies at positions `K, K + N, K + 2N, ...` of the sorted list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let parsed = s
            .split_once('/')
            .and_then(|(k, n)| Some((k.trim().parse().ok()?, n.trim().parse().ok()?)));
        match parsed {
            Some((index, count)) if index < count => Ok(Shard { index, count }),
            _ => Err(format!(
                "expected K/N with 0 <= K < N (e.g. 0/4), got {s:?}"
            )),
        }
    }
}

impl Shard {
    /// Keeps this shard's items.
    pub fn select<T>(self, items: Vec<T>) -> Vec<T> {
        items
            .into_iter()
            .skip(self.index)
            .step_by(self.count)
            .collect()
    }
}

/// `--patches XxY`: patches across (columns) and down (rows) the frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatchGrid {
    pub x: usize,
    pub y: usize,
}

fn patch_grid(s: &str) -> Result<PatchGrid, String> {
    let count = |n: &str| number_in(n, |n: &usize| *n >= 3, "a count of at least 3");
    let (x, y) = match s.trim().split_once(['x', 'X']) {
        Some((x, y)) => (count(x)?, count(y)?),
        None => (count(s)?, count(s)?),
    };
    Ok(PatchGrid { x, y })
}

/// The number `s`, where `allowed` holds for it; else an error saying that it is not `range`
/// (clap adds the flag and the value as typed).
fn number_in<T: FromStr>(s: &str, allowed: impl Fn(&T) -> bool, range: &str) -> Result<T, String> {
    match s.trim().parse::<T>() {
        Ok(value) if allowed(&value) => Ok(value),
        _ => Err(format!("{} is not {range}", s.trim())),
    }
}

/// `--gain-rotate`: a quarter turn's multiple, in degrees (not MotionCor2's count of them).
fn gain_rotation(s: &str) -> Result<u16, String> {
    number_in(
        s,
        |d| [0, 90, 180, 270].contains(d),
        "0, 90, 180 or 270 (degrees: MotionCor2's -RotGain 1 is 90)",
    )
}

/// `--bin`: a factor >= 1.
fn bin_factor(s: &str) -> Result<f64, String> {
    number_in(
        s,
        |f: &f64| f.is_finite() && *f >= 1.0,
        "a finite factor >= 1 (1: no binning)",
    )
}

/// `--pixel-size`: Å.
fn pixel_size(s: &str) -> Result<f32, String> {
    number_in(
        s,
        |p: &f32| p.is_finite() && *p > 0.0,
        "a finite number of Å > 0",
    )
}

/// `--dose-per-frame`: e/Å², > 0.
fn exposure(s: &str) -> Result<f64, String> {
    number_in(
        s,
        |e: &f64| e.is_finite() && *e > 0.0,
        "a finite number of e/Å² > 0",
    )
}

/// `--pre-exposure`: e/Å², >= 0.
fn pre_exposure(s: &str) -> Result<f64, String> {
    number_in(
        s,
        |e: &f64| e.is_finite() && *e >= 0.0,
        "a finite number of e/Å² >= 0",
    )
}

/// `--voltage`: where the exposure model is known.
fn voltage(s: &str) -> Result<f64, String> {
    number_in(
        s,
        |&kv: &f64| kv == 300.0 || kv == 200.0,
        "300 or 200 (kV: the exposure model is known at those)",
    )
}

/// `--hot-pixels`: standard deviations, > 0.
fn hot_pixel_sigma(s: &str) -> Result<f64, String> {
    number_in(
        s,
        |v: &f64| v.is_finite() && *v > 0.0,
        "a finite number of standard deviations > 0 (RELION uses 6)",
    )
}

/// `--cs`: mm, >= 0 (0 for a corrected microscope).
fn spherical_aberration(s: &str) -> Result<f64, String> {
    number_in(
        s,
        |cs: &f64| cs.is_finite() && *cs >= 0.0,
        "a finite number of mm >= 0",
    )
}

/// `--amplitude-contrast`: a fraction.
fn amplitude_contrast(s: &str) -> Result<f64, String> {
    number_in(s, |q| (0.0..1.0).contains(q), "in 0..1 (a fraction)")
}

/// `--align-size`: what `AlignOptions::max_size` allows.
fn align_size(s: &str) -> Result<usize, String> {
    number_in(s, |&n| n >= 2, "a whole number of pixels >= 2")
}

/// `--ps-size`: an even number of pixels, as RELION requires.
fn ps_size(s: &str) -> Result<usize, String> {
    number_in(
        s,
        |&n: &usize| n >= 2 && n % 2 == 0,
        "an even number of pixels >= 2",
    )
}

/// `--memory-limit`: a size in MiB.
fn mebibytes(s: &str) -> Result<usize, String> {
    number_in(s, |_| true, "a whole number of MiB")
}

/// `--bfactor`: what `AlignOptions::bfactor` allows.
fn bfactor(s: &str) -> Result<f64, String> {
    number_in(
        s,
        |b: &f64| b.is_finite() && *b >= 0.0,
        "a finite number >= 0 (0 turns the weighting off)",
    )
}

/// `--tolerance`: what `AlignOptions::tolerance` allows.
fn tolerance(s: &str) -> Result<f64, String> {
    number_in(s, |&t: &f64| t >= 0.0, "a number of pixels >= 0")
}

/// `--taper`: what `AlignOptions::taper` allows.
fn taper(s: &str) -> Result<f64, String> {
    number_in(
        s,
        |t| (0.0..=0.5).contains(t),
        "in 0..=0.5 (a fraction of each axis; 0: no taper)",
    )
}

/// The flags that set `AlignOptions`' fields, by the fields' names (which the library's errors
/// use).
const FLAGS: &[(&str, &str)] = &[
    ("upsample_factor", "--upsample"),
    ("bfactor", "--bfactor"),
    ("max_iterations", "--iterations"),
    ("tolerance", "--tolerance"),
    ("max_size", "--align-size"),
    ("memory_limit", "--memory-limit"),
    ("taper", "--taper"),
    ("group", "--group"),
    ("grid", "--patches"),
    ("exposure_per_frame", "--dose-per-frame"),
    ("pre_exposure", "--pre-exposure"),
    ("voltage_kv", "--voltage"),
];

/// The alignment's error as the program's user knows it: an option the library refuses (such
/// as an `--upsample` whose refinement cannot be held in memory for the movie's frames, which
/// only the alignment can tell) is named by the flag that sets it, not by its field's name.
pub fn name_the_flag(error: ufunc::Error) -> anyhow::Error {
    match error {
        ufunc::Error::InvalidArgument { name, message } => {
            match FLAGS.iter().find(|&&(field, _)| field == name) {
                Some((_, flag)) => anyhow::anyhow!("invalid {flag}: {message}"),
                None => ufunc::Error::InvalidArgument { name, message }.into(),
            }
        }
        other => other.into(),
    }
}

impl Args {
    /// How EER movies are rendered into frames.
    pub fn eer_rendering(&self) -> crate::io::eer::EerRendering {
        crate::io::eer::EerRendering {
            grouping: self.eer_grouping as usize,
            upsampling: self.eer_upsampling,
        }
    }

    /// The registration options these arguments ask for (unset ones keep the library's defaults).
    pub fn align_options(&self) -> AlignOptions {
        let defaults = AlignOptions::default();
        AlignOptions {
            reference: match self.reference {
                ReferenceArg::Sum => Reference::Sum,
                ReferenceArg::First => Reference::First,
            },
            upsample_factor: self.upsample,
            normalization: match self.normalization {
                Some(NormalizationArg::Phase) => Normalization::Phase,
                Some(NormalizationArg::None) => Normalization::Off,
                None => defaults.normalization,
            },
            bfactor: self.bfactor.unwrap_or(defaults.bfactor),
            max_iterations: self
                .iterations
                .map_or(defaults.max_iterations, |n| n as usize),
            tolerance: self.tolerance.unwrap_or(defaults.tolerance),
            max_size: self.align_size.unwrap_or(defaults.max_size),
            taper: self.taper.unwrap_or(defaults.taper),
            group: self.group.map_or(defaults.group, |n| n as usize),
            memory_limit: match self.memory_limit {
                Some(mib) => mib.saturating_mul(1 << 20),
                None => {
                    use crate::memory::{default_limit, free_device_memory, free_memory};
                    let host = default_limit(free_memory(), defaults.memory_limit);
                    match self.target {
                        // The device keeps the spectra; the host the patches' stacks.
                        TargetArg::Cuda => {
                            host.min(default_limit(free_device_memory(), defaults.memory_limit))
                        }
                        TargetArg::Cpu | TargetArg::Parallel => host,
                    }
                }
            },
            target: match self.target {
                TargetArg::Cpu => Target::Cpu,
                TargetArg::Parallel => Target::Parallel,
                TargetArg::Cuda => Target::Cuda,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_take_every_nth_from_k() {
        let shard: Shard = "1/3".parse().unwrap();
        assert_eq!(shard.select((0..8).collect()), vec![1, 4, 7]);
        let all: Vec<usize> = (0..3)
            .flat_map(|k| Shard { index: k, count: 3 }.select((0..8).collect()))
            .collect();
        assert_eq!(all.len(), 8);
        for bad in ["3/3", "1", "a/2", "1/0", "-1/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn options_map_onto_the_library_with_its_defaults() {
        let args = Args::parse_from([
            "phase_correlation",
            "m.mrc",
            "--reference",
            "first",
            "--normalization",
            "phase",
            "--upsample",
            "50",
            "--taper",
            "0.25",
            "--memory-limit",
            "3",
        ]);
        let o = args.align_options();
        assert_eq!(
            (o.reference, o.normalization, o.upsample_factor),
            (Reference::First, Normalization::Phase, 50)
        );
        assert_eq!((o.taper, o.memory_limit), (0.25, 3 << 20));
        assert_eq!(o.bfactor, AlignOptions::default().bfactor);
        let args = Args::parse_from([
            "phase_correlation",
            "m.mrc",
            "--normalization",
            "none",
            "--bfactor",
            "500",
            "--iterations",
            "4",
            "--tolerance",
            "0.01",
            "--align-size",
            "1024",
            "--target",
            "cpu",
        ]);
        let o = args.align_options();
        assert_eq!(
            (o.normalization, o.bfactor, o.max_iterations, o.tolerance),
            (Normalization::Off, 500.0, 4, 0.01)
        );
        assert_eq!((o.max_size, o.target), (1024, Target::Cpu));
        assert_eq!(o.reference, AlignOptions::default().reference);
        // Unset, the memory limit is half the memory free to the process (at least the
        // library's 2 GiB), and with `--target cuda` at most half the device's.
        // (Read twice, the free memory moves with the other tests' allocations.)
        let floor = AlignOptions::default().memory_limit;
        match crate::memory::free_memory() {
            Some(free) => {
                let half = (free / 2).max(floor as u64) as f64;
                let limit = o.memory_limit as f64;
                assert!(limit >= floor as f64 && (limit - half).abs() <= 0.2 * half);
            }
            None => assert_eq!(o.memory_limit, floor),
        }
        let cuda = Args::parse_from(["phase_correlation", "m.mrc", "--target", "cuda"]);
        let limit = cuda.align_options().memory_limit as f64;
        let half = |free: Option<u64>| free.map_or(floor as u64, |f| (f / 2).max(floor as u64));
        // The simulator's device memory is the host's; without a device, the floor.
        let host = half(crate::memory::free_memory());
        let want = host.min(half(crate::memory::free_device_memory())) as f64;
        assert!(limit >= floor as f64 && (limit - want).abs() <= 0.2 * want);
        for bad in [
            ["--upsample", "0"],
            ["--iterations", "0"],
            ["--target", "gpu"],
        ] {
            assert!(Args::try_parse_from(["phase_correlation", bad[0], bad[1]]).is_err());
        }
        assert!(Args::try_parse_from(["phase_correlation", "--shard", "2/2"]).is_err());
    }

    /// `--patches` takes X by Y, MotionCor2's order, or one count for both.
    #[test]
    fn patches_are_columns_by_rows() {
        let grid =
            |value: &str| Args::parse_from(["phase_correlation", "--patches", value]).patches;
        assert_eq!(grid("5x7"), Some(PatchGrid { x: 5, y: 7 }));
        assert_eq!(grid("4X3"), Some(PatchGrid { x: 4, y: 3 }));
        assert_eq!(grid("6"), Some(PatchGrid { x: 6, y: 6 }));
        assert_eq!(Args::parse_from(["phase_correlation"]).patches, None);
    }

    /// A value outside what the registration allows is refused as the command line is parsed,
    /// naming the flag as typed, the value and what is allowed (it was refused for every movie
    /// in turn, by the library's field name: "invalid `max_size`", "invalid `taper`").
    #[test]
    fn bad_values_are_refused_naming_the_flag_the_value_and_the_range() {
        let cases: [(&[&str], &[&str]); 22] = [
            (
                &["--bin", "0.5"],
                &["'0.5'", "a finite factor >= 1 (1: no binning)"],
            ),
            (&["--bin", "nan"], &["'nan'", "a finite factor >= 1"]),
            (&["--pixel-size", "0"], &["'0'", "a finite number of Å > 0"]),
            (
                &["--pixel-size", "inf"],
                &["'inf'", "a finite number of Å > 0"],
            ),
            (&["--taper", "0.9"], &["'0.9'", "0..=0.5"]),
            (
                &["--gain-rotate", "1", "--gain", "g.mrc"],
                &[
                    "'1'",
                    "0, 90, 180 or 270 (degrees: MotionCor2's -RotGain 1 is 90)",
                ],
            ),
            (
                &["--gain-rotate=-90", "--gain", "g.mrc"],
                &["'-90'", "0, 90"],
            ),
            (&["--taper", "nan"], &["'nan'", "0..=0.5"]),
            (
                &["--align-size", "1"],
                &["'1'", "1 is not a whole number of pixels >= 2"],
            ),
            (&["--align-size", "0"], &["'0'", ">= 2"]),
            (&["--bfactor", "inf"], &["'inf'", "a finite number >= 0"]),
            (&["--bfactor=-5"], &["'-5'", "a finite number >= 0"]),
            (
                &["--tolerance", "NaN"],
                &["'NaN'", "a number of pixels >= 0"],
            ),
            (&["--tolerance=-1"], &["'-1'", "a number of pixels >= 0"]),
            (
                &["--tolerance", "tiny"],
                &["'tiny'", "tiny is not a number of pixels >= 0"],
            ),
            (&["--upsample", "0"], &["'0'", "0 is not in 1.."]),
            (&["--iterations", "0"], &["'0'", "0 is not in 1.."]),
            (&["--cs=-1"], &["'-1'", "a finite number of mm >= 0"]),
            (&["--hot-pixels", "0"], &["'0'", "standard deviations > 0"]),
            (&["--amplitude-contrast", "1"], &["'1'", "1 is not in 0..1"]),
            (
                &["--patches", "2x5"],
                &["'2x5'", "2 is not a count of at least 3"],
            ),
            (
                &["--patches", "5by5"],
                &["'5by5'", "5by5 is not a count of at least 3"],
            ),
        ];
        for (argv, says) in cases {
            let flag = argv[0].split('=').next().unwrap();
            let err = Args::try_parse_from(["phase_correlation", "m.mrc"].iter().chain(argv))
                .unwrap_err()
                .to_string();
            assert!(err.contains(&format!("for '{flag} <")), "{argv:?}: {err}");
            for part in says {
                assert!(err.contains(part), "{argv:?}: {err:?} lacks {part:?}");
            }
        }
        // The ranges' ends are what the library allows.
        let args = Args::parse_from([
            "phase_correlation",
            "--taper",
            "0.5",
            "--align-size",
            "2",
            "--bfactor",
            "0",
            "--tolerance",
            "inf",
        ]);
        let o = args.align_options();
        assert_eq!((o.taper, o.max_size, o.bfactor), (0.5, 2, 0.0));
        assert_eq!(o.tolerance, f64::INFINITY);
    }

    /// A negative value given as its own argument (`--tolerance -1`) is the option's value,
    /// refused by its range naming the flag; clap took it for an unknown flag ("unexpected
    /// argument '-1'"), and only `--tolerance=-1` reached the check.
    #[test]
    fn negative_values_are_values_refused_by_the_options_range() {
        let cases = [
            ("--tolerance", "-1", "-1 is not a number of pixels >= 0"),
            ("--bfactor", "-5", "-5 is not a finite number >= 0"),
            ("--bfactor", "-inf", "-inf is not a finite number >= 0"),
            ("--taper", "-0.1", "-0.1 is not in 0..=0.5"),
            ("--taper", "-.1", "-.1 is not in 0..=0.5"),
            (
                "--align-size",
                "-4",
                "-4 is not a whole number of pixels >= 2",
            ),
            ("--memory-limit", "-1", "-1 is not a whole number of MiB"),
            ("--upsample", "-1", "-1 is not in 1.."),
            ("--iterations", "-3", "-3 is not in 1.."),
            ("--shard", "-1/4", "expected K/N with 0 <= K < N"),
            ("--taper", "--force", "--force is not in 0..=0.5"),
        ];
        for (flag, value, says) in cases {
            let err = Args::try_parse_from(["phase_correlation", "m.mrc", flag, value])
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&format!("invalid value '{value}' for '{flag} <"))
                    && err.contains(says),
                "{flag} {value}: {err}"
            );
        }
        // Values that are not negative are unchanged, and movies still follow the options.
        let args = Args::parse_from(["phase_correlation", "--tolerance", "0", "m.mrc", "--force"]);
        assert_eq!((args.tolerance, args.force), (Some(0.0), true));
        assert_eq!(args.movies, ["m.mrc"]);
    }

    /// The micrographs STAR needs what RELION requires of it: the movies' STARs, the exposure
    /// and the spherical aberration; its optics flags need it.
    #[test]
    fn relion_micrographs_needs_the_star_the_exposure_and_cs() {
        let full = [
            "phase_correlation",
            "m.mrc",
            "--relion-micrographs",
            "mics.star",
            "--relion-star",
            "--dose-per-frame",
            "1",
            "--cs",
            "2.7",
        ];
        let args = Args::try_parse_from(full).unwrap();
        assert_eq!((args.cs, args.amplitude_contrast), (Some(2.7), None));
        for (left_out, named) in [
            (&full[4..5], "--relion-star"),
            (&full[5..7], "--dose-per-frame"),
            (&full[7..9], "--cs"),
        ] {
            let argv: Vec<&str> = full
                .iter()
                .filter(|a| !left_out.contains(a))
                .copied()
                .collect();
            let err = Args::try_parse_from(argv).unwrap_err().to_string();
            assert!(err.contains(named), "{left_out:?}: {err}");
        }
        for alone in [["--cs", "2.7"], ["--amplitude-contrast", "0.07"]] {
            let err = Args::try_parse_from(["phase_correlation", "m.mrc", alone[0], alone[1]])
                .unwrap_err()
                .to_string();
            assert!(err.contains("--relion-micrographs"), "{err}");
        }
    }
}
