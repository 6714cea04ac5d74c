//! The command line: options (clap), the `--shard K/N` selection, and their translation into
//! the registration's `AlignOptions`.

use clap::{Parser, ValueEnum};
use std::path::PathBuf;
use std::str::FromStr;
use ufunc::registration::{AlignOptions, Normalization, Reference};
use ufunc::Target;

/// Drift correction of electron-microscopy movies by phase correlation: every frame is
/// registered (sub-pixel) and the aligned frames are summed. For each movie NAME.ext it writes
/// NAME.shifts.csv, NAME.shifts.json, NAME.aligned.mrc, NAME.aligned.png and NAME.drift.png.
/// With no movie, it runs on a built-in synthetic movie and reports the error against the truth.
#[derive(Parser, Debug, Clone, Default)]
#[command(name = "phase_correlation", version)]
pub struct Args {
    /// Movies (.npy, .tif/.tiff, .mrc/.mrcs/.st): files, folders (every movie in them) or glob
    /// patterns such as 'session/*.tif'.
    pub movies: Vec<String>,
    /// Output folder [default: beside each movie; target/phase_correlation_demo for the demo].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// What each frame is registered against: the sum of the other aligned frames (iterated),
    /// or the first frame.
    #[arg(long, value_enum, default_value_t = ReferenceArg::Sum)]
    pub reference: ReferenceArg,
    /// Shifts are found to within 1/N pixel.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub upsample: u32,
    /// Phase correlation, or plain cross-correlation (better at low dose) [default: none].
    #[arg(long, value_enum)]
    pub normalization: Option<NormalizationArg>,
    /// B-factor (pixels²) of the Gaussian weighting of the cross-power spectrum with the sum
    /// reference; 0 turns it off [default: 150].
    #[arg(long, value_name = "B")]
    pub bfactor: Option<f64>,
    /// The most passes over the frames with the sum reference [default: 10].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub iterations: Option<u32>,
    /// Stop iterating when no shift changes by more than this many pixels [default: 0.05].
    #[arg(long, value_name = "PX")]
    pub tolerance: Option<f64>,
    /// Frames larger than this (pixels, per axis) are aligned on their Fourier-cropped spectra,
    /// which bounds the memory the alignment keeps per frame [default: 4096].
    #[arg(long, value_name = "PX")]
    pub align_size: Option<usize>,
    /// The frames' spectra stay in memory between passes when they fit in this many MiB;
    /// otherwise each pass reads the movie again, so memory stays bounded by a few frames
    /// [default: 2048].
    #[arg(long, value_name = "MIB")]
    pub memory_limit: Option<usize>,
    /// Taper each frame's edges (a raised cosine over this fraction of each axis, 0 to 0.5)
    /// before registering it: for frames whose edges do not move with the specimen
    /// (illumination gradients), which otherwise pull the shifts towards zero [default: 0].
    #[arg(long, value_name = "FRACTION")]
    pub taper: Option<f64>,
    /// Where the registration runs.
    #[arg(long, value_enum, default_value_t = TargetArg::Parallel)]
    pub target: TargetArg,
    /// Overwrite existing results (by default a movie whose results all exist is skipped).
    #[arg(long)]
    pub force: bool,
    /// Process only every N-th movie starting at the K-th (K from 0), e.g. a Slurm array task's
    /// `$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT`.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<Shard>,
    /// Gain reference (MRC or TIFF, one frame of the movies' size) multiplied into every frame.
    #[arg(long, value_name = "FILE")]
    pub gain: Option<PathBuf>,
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

impl Args {
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
            memory_limit: self
                .memory_limit
                .map_or(defaults.memory_limit, |mib| mib.saturating_mul(1 << 20)),
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
        for bad in [
            ["--upsample", "0"],
            ["--iterations", "0"],
            ["--target", "gpu"],
        ] {
            assert!(Args::try_parse_from(["phase_correlation", bad[0], bad[1]]).is_err());
        }
        assert!(Args::try_parse_from(["phase_correlation", "--shard", "2/2"]).is_err());
    }
}
