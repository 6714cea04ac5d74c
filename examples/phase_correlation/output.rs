//! A movie's results on disk: the five output names, files staged under temporary names and
//! renamed together when all are written (so a failure leaves nothing partial behind), and the
//! CSV, JSON and PNG-preview writers.

use crate::io::eer::EerRendering;
use anyhow::{Context, Result};
use ndarray::ArrayView2;
use serde::Serialize;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use ufunc::registration::LocalAlignment;

/// The five results of one movie `NAME.ext` in an output folder.
#[derive(Debug, Clone)]
pub struct OutputPaths {
    pub csv: PathBuf,
    pub json: PathBuf,
    pub mrc: PathBuf,
    pub png: PathBuf,
    pub drift: PathBuf,
    /// The exposure-weighted sum, written with `--dose-per-frame`.
    pub mrc_dw: PathBuf,
    /// The sums of the even and of the odd frames, written with `--split-sums`.
    pub mrc_even: PathBuf,
    pub mrc_odd: PathBuf,
    /// RELION's motion metadata, written with `--relion-star`.
    pub star: PathBuf,
    /// The patches' drift and its plot, written with `--patches`.
    pub patches: PathBuf,
    pub patches_png: PathBuf,
    /// The aligned frames, written with `--aligned-stack`.
    pub stack: PathBuf,
    /// RELION's power spectrum for CTF estimation, written with `--ps-grouping`.
    pub power_spectrum: PathBuf,
}

/// The suffixes of the aligned sums (plain, weighted, even and odd frames'), of the aligned
/// stack and of the power spectrum: MRC files that this program writes and never takes for a
/// movie.
pub const MRC_SUFFIXES: [&str; 6] = [
    "aligned.mrc",
    "aligned_DW.mrc",
    "aligned_EVN.mrc",
    "aligned_ODD.mrc",
    "aligned_stack.mrcs",
    "aligned_PS.mrc",
];

impl OutputPaths {
    /// `NAME.shifts.csv`, `NAME.shifts.json`, `NAME.aligned.mrc`, `NAME.aligned.png`,
    /// `NAME.drift.png` in `dir`.
    pub fn new(dir: &Path, name: &str) -> OutputPaths {
        let at = |suffix: &str| dir.join(format!("{name}.{suffix}"));
        OutputPaths {
            csv: at("shifts.csv"),
            json: at("shifts.json"),
            mrc: at(MRC_SUFFIXES[0]),
            png: at("aligned.png"),
            drift: at("drift.png"),
            mrc_dw: at(MRC_SUFFIXES[1]),
            mrc_even: at(MRC_SUFFIXES[2]),
            mrc_odd: at(MRC_SUFFIXES[3]),
            stack: at(MRC_SUFFIXES[4]),
            power_spectrum: at(MRC_SUFFIXES[5]),
            star: dir.join(format!("{name}.star")),
            patches: at("patches.csv"),
            patches_png: at("patches.png"),
        }
    }

    /// Removes `path`, a result of an earlier run that this run does not write (the weighted
    /// sum without `--dose-per-frame`, the STAR without `--relion-star`): left beside the new
    /// results it would be of other shifts.
    pub fn remove_stale(path: &Path) -> Result<()> {
        match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("cannot remove the stale {}", path.display()))
            }
            _ => Ok(()),
        }
    }

    /// The five paths every run writes.
    pub fn all(&self) -> [&Path; 5] {
        [&self.csv, &self.json, &self.mrc, &self.png, &self.drift]
    }

    /// Whether every result exists (a finished movie, skipped unless `--force`).
    pub fn complete(&self) -> bool {
        self.all().iter().all(|p| p.is_file())
    }

    /// The movie these results are of (see [`report_movie`]).
    #[cfg(test)]
    pub fn movie(&self) -> Result<String> {
        report_movie(&self.report()?, self)
    }

    /// The JSON report of these results.
    pub fn report(&self) -> Result<serde_json::Value> {
        let json = self.json.display();
        let text =
            std::fs::read_to_string(&self.json).with_context(|| format!("cannot read {json}"))?;
        serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{json} is not a JSON report: {e}"))
    }
}

/// The movie a report (of `outputs`) is of: its `movie` (the movie's canonical path; older
/// versions wrote the path as their run was given it).
pub fn report_movie(report: &serde_json::Value, outputs: &OutputPaths) -> Result<String> {
    match report.get("movie").and_then(|m| m.as_str()) {
        Some(movie) => Ok(movie.to_owned()),
        None => anyhow::bail!("{} names no movie", outputs.json.display()),
    }
}

/// Files written under temporary names beside their final ones; [`Staging::commit`] renames
/// them all, and dropping an uncommitted staging removes them.
#[derive(Default)]
pub struct Staging {
    staged: Vec<(PathBuf, PathBuf)>,
}

impl Staging {
    /// Writes `path`'s content, under a temporary name, with `write`.
    pub fn write(
        &mut self,
        path: &Path,
        write: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
    ) -> Result<()> {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let temp = path.with_file_name(format!(".{name}.part-{}", std::process::id()));
        let file =
            File::create(&temp).with_context(|| format!("cannot create {}", temp.display()))?;
        // Registered before writing, so that a failure below still removes it.
        self.staged.push((temp.clone(), path.to_owned()));
        let mut out = BufWriter::new(file);
        write(&mut out)
            .and_then(|()| Ok(out.into_inner()?.sync_all()?))
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// Renames every staged file to its final name; where one cannot be renamed, none is left:
    /// the results renamed before it are removed with the temporary files, so a movie's
    /// results are all there or none (and a rerun redoes it).
    pub fn commit(mut self) -> Result<()> {
        let staged = std::mem::take(&mut self.staged);
        for (k, (temp, path)) in staged.iter().enumerate() {
            if let Err(e) = std::fs::rename(temp, path) {
                for (_, renamed) in &staged[..k] {
                    let _ = std::fs::remove_file(renamed);
                }
                for (left, _) in &staged[k..] {
                    let _ = std::fs::remove_file(left);
                }
                return Err(e).with_context(|| {
                    format!("cannot rename {} to {}", temp.display(), path.display())
                });
            }
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        for (temp, _) in &self.staged {
            let _ = std::fs::remove_file(temp);
        }
    }
}

/// One frame's row of the shifts table.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FrameRow {
    /// The frame's index in the movie, from 0.
    pub frame: usize,
    /// The shift (rows) that registers the frame onto the first aligned.
    pub dy: f64,
    /// The shift (columns) that registers the frame onto the first aligned.
    pub dx: f64,
    /// The correlation peak's height (see `Alignment::peaks`).
    pub peak: f64,
    /// The distance moved since the previous frame, in pixels.
    pub step: f64,
    /// The true shift, when it is known (the synthetic movie).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truth: Option<[f64; 2]>,
}

/// The rows of the shifts table from the alignment's shifts and peaks, of the movie's frames
/// from `first` on.
pub fn frame_rows(
    shifts: &[[f64; 2]],
    peaks: &[f64],
    truth: Option<&[[f64; 2]]>,
    first: usize,
) -> Vec<FrameRow> {
    shifts
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let prev = if i == 0 { *s } else { shifts[i - 1] };
            FrameRow {
                frame: first + i,
                dy: s[0],
                dx: s[1],
                peak: peaks.get(i).copied().unwrap_or(f64::NAN),
                step: (s[0] - prev[0]).hypot(s[1] - prev[1]),
                truth: truth.and_then(|t| t.get(i).copied()),
            }
        })
        .collect()
}

/// A STAR table's opening: its block `data_NAME` and its loop's column labels, numbered.
fn write_loop_header(out: &mut impl Write, name: &str, labels: &[&str]) -> Result<()> {
    writeln!(out, "\n# version 30001\n\ndata_{name}\n\nloop_")?;
    for (k, label) in labels.iter().enumerate() {
        writeln!(out, "{label} #{}", k + 1)?;
    }
    Ok(())
}

/// `value` as one word of a STAR file, or an error where it has none or several.
pub fn star_word(value: &str) -> Result<&str> {
    if value.is_empty() || value.chars().any(char::is_whitespace) {
        anyhow::bail!(
            "a RELION STAR file cannot name {value:?}: its words would be read as values"
        );
    }
    Ok(value)
}

/// The optics of the microscope, which every micrograph of a RELION micrographs STAR shares
/// but for its pixel size.
#[derive(Debug, Clone, Copy)]
pub struct StarOptics {
    pub voltage_kv: f64,
    /// Spherical aberration, mm.
    pub cs_mm: f64,
    pub amplitude_contrast: f64,
}

/// A movie's row of RELION's micrographs STAR (see [`write_relion_micrographs`]).
#[derive(Debug, Clone)]
pub struct StarMicrograph {
    /// The exposure-weighted sum, RELION's micrograph.
    pub sum: String,
    /// The plain sum, RELION's micrograph without dose weighting (for CTF estimation).
    pub plain_sum: String,
    /// The movie's motion metadata, `NAME.star`.
    pub metadata: String,
    /// Å: the movie's pixel, and the sum's (binned).
    pub pixel_size: f32,
    pub sum_pixel_size: f32,
    pub motion: AccumulatedMotion,
    /// The sums of the even and of the odd frames (`--split-sums`), as RELION's
    /// `--even_odd_split` lists them in a tomography project's micrographs STAR (the labels
    /// are RELION's; its single-particle STAR leaves them out).
    pub halves: Option<(String, String)>,
    /// The power spectrum for CTF estimation (`--ps-grouping`).
    pub power_spectrum: Option<String>,
}

/// The length of a movie's drift (RELION's `rlnAccumMotionTotal`, `Early` and `Late`): the
/// sum of the distances from each frame's shift to the previous frame's, in the movie's
/// pixels (as RELION's motion correction sums them, whatever its labels' help says), early
/// for the frames whose number (from 1) is at most `(4 e/Å² - pre-exposure) / exposure per
/// frame` (RELION's `--dose_motionstats_cutoff` of 4), late for the others.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccumulatedMotion {
    pub total: f64,
    pub early: f64,
    pub late: f64,
}

/// RELION's default dose (e/Å²) that tells early motion from late.
const EARLY_MOTION_DOSE: f64 = 4.0;

impl AccumulatedMotion {
    /// Of the shifts (dy, dx) of a movie's frames from `first` on (from 0), exposed `per_frame`
    /// e/Å² a frame after `pre_exposure`.
    pub fn of(
        shifts: &[[f64; 2]],
        per_frame: f64,
        pre_exposure: f64,
        first: usize,
    ) -> AccumulatedMotion {
        let cutoff_frame = (EARLY_MOTION_DOSE - pre_exposure) / per_frame;
        let mut motion = AccumulatedMotion {
            total: 0.0,
            early: 0.0,
            late: 0.0,
        };
        for (i, pair) in shifts.windows(2).enumerate() {
            let step = (pair[1][0] - pair[0][0]).hypot(pair[1][1] - pair[0][1]);
            motion.total += step;
            // The later frame's number in the movie, from 1.
            if (first + i + 2) as f64 <= cutoff_frame {
                motion.early += step;
            } else {
                motion.late += step;
            }
        }
        motion
    }
}

/// The name of the optics group of `mic` under `optics`: made of the values that define it,
/// so that RELION's `relion_star_handler --combine`, which merges optics groups by name, puts
/// the micrographs of several runs (`--shard`) with the same optics in one group and never
/// those of different optics.
/// The values are those the optics table writes (6 decimals, trailing zeros left out): a
/// header's 1.0600001 and `--pixel-size 1.06` are one group.
fn optics_group_name(optics: &StarOptics, mic: &StarMicrograph) -> String {
    let short = |value: f64| {
        let text = format!("{value:.6}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    };
    format!(
        "px{}A_sum{}A_{}kV_Cs{}mm_AC{}",
        short(mic.pixel_size.into()),
        short(mic.sum_pixel_size.into()),
        short(optics.voltage_kv),
        short(optics.cs_mm),
        short(optics.amplitude_contrast)
    )
}

/// Writes RELION's micrographs STAR, as its motion correction's `corrected_micrographs.star`
/// (`ObservationModel::save`): `data_optics`, one group per pixel size (RELION requires the
/// voltage, the spherical aberration and a pixel size of each), then `data_micrographs`, a row
/// per movie naming its sums, its motion metadata, its optics group (from 1) and its
/// accumulated motion. RELION's CTF estimation and Bayesian polishing take it.
pub fn write_relion_micrographs(
    out: &mut impl Write,
    optics: &StarOptics,
    mics: &[StarMicrograph],
) -> Result<()> {
    let mut groups: Vec<(String, &StarMicrograph)> = Vec::new();
    let mut group_of = Vec::with_capacity(mics.len());
    for mic in mics {
        let name = optics_group_name(optics, mic);
        let index = match groups.iter().position(|(n, _)| *n == name) {
            Some(index) => index,
            None => {
                groups.push((name, mic));
                groups.len() - 1
            }
        };
        group_of.push(index + 1);
    }
    write_loop_header(
        out,
        "optics",
        &[
            "_rlnOpticsGroupName",
            "_rlnOpticsGroup",
            "_rlnMicrographOriginalPixelSize",
            "_rlnVoltage",
            "_rlnSphericalAberration",
            "_rlnAmplitudeContrast",
            "_rlnMicrographPixelSize",
        ],
    )?;
    for (k, (name, mic)) in groups.iter().enumerate() {
        writeln!(
            out,
            "{name} {} {:.6} {:.6} {:.6} {:.6} {:.6}",
            k + 1,
            mic.pixel_size,
            optics.voltage_kv,
            optics.cs_mm,
            optics.amplitude_contrast,
            mic.sum_pixel_size
        )?;
    }
    writeln!(out)?;
    // The halves' and the power spectra's columns where every movie has them (all or none:
    // one run's settings).
    let halves = mics.iter().all(|m| m.halves.is_some());
    let spectra = mics.iter().all(|m| m.power_spectrum.is_some());
    write_loop_header(
        out,
        "micrographs",
        &[
            "_rlnMicrographNameNoDW",
            "_rlnMicrographName",
            "_rlnMicrographMetadata",
            "_rlnOpticsGroup",
            "_rlnAccumMotionTotal",
            "_rlnAccumMotionEarly",
            "_rlnAccumMotionLate",
        ]
        .into_iter()
        .chain(
            halves
                .then_some(["_rlnMicrographNameEven", "_rlnMicrographNameOdd"])
                .into_iter()
                .flatten(),
        )
        .chain(spectra.then_some("_rlnCtfPowerSpectrum"))
        .collect::<Vec<_>>(),
    )?;
    for (mic, group) in mics.iter().zip(group_of) {
        write!(
            out,
            "{} {} {} {group} {:.6} {:.6} {:.6}",
            star_word(&mic.plain_sum)?,
            star_word(&mic.sum)?,
            star_word(&mic.metadata)?,
            mic.motion.total,
            mic.motion.early,
            mic.motion.late
        )?;
        if let (true, Some((even, odd))) = (halves, &mic.halves) {
            write!(out, " {} {}", star_word(even)?, star_word(odd)?)?;
        }
        if let (true, Some(spectrum)) = (spectra, &mic.power_spectrum) {
            write!(out, " {}", star_word(spectrum)?)?;
        }
        writeln!(out)?;
    }
    writeln!(out)?;
    Ok(())
}

/// Writes the shifts table: a header line, then one row per frame.
pub fn write_csv(out: &mut impl Write, rows: &[FrameRow]) -> Result<()> {
    let with_truth = rows.iter().any(|r| r.truth.is_some());
    write!(out, "frame,dy,dx,peak,step")?;
    if with_truth {
        write!(out, ",true_dy,true_dx")?;
    }
    writeln!(out)?;
    for r in rows {
        write!(
            out,
            "{},{:.4},{:.4},{:.6},{:.4}",
            r.frame, r.dy, r.dx, r.peak, r.step
        )?;
        if let Some([ty, tx]) = r.truth {
            write!(out, ",{ty:.4},{tx:.4}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// What RELION's motion metadata of a movie says besides its shifts.
pub struct StarGeneral<'a> {
    /// `(rows, cols)` of a frame.
    pub frame_shape: (usize, usize),
    pub movie: &'a str,
    pub gain: Option<&'a str>,
    /// `--defects`, which RELION reads again to replace the pixels it lists.
    pub defect_file: Option<&'a str>,
    /// `(row, col)` of the hot pixels replaced, which RELION's `data_hot_pixels` lists.
    pub hot_pixels: &'a [(usize, usize)],
    pub binning: f64,
    pub pixel_size: Option<f32>,
    /// e/Å² per frame, before the first, and kV.
    pub dose: Option<(f64, f64, f64)>,
    /// `--patches`: the local alignment, whose model (where fitted) and patches' drift RELION's
    /// `data_local_motion_model` and `data_local_shift` give.
    pub local: Option<&'a LocalAlignment>,
    /// An EER movie's rendering, which polishing renders its frames with again.
    pub eer: Option<EerRendering>,
    /// The movie's frames aligned (from 0) of how many it has.
    pub frames_of_movie: (std::ops::Range<usize>, usize),
}

/// Writes a movie's motion as RELION's motion correction does (`Micrograph::write`): its
/// `data_general` block, and `data_global_shift` with each frame's (1-based) shift in the
/// movie's pixels. RELION's shift is what moves a frame onto the first (its
/// `realSpaceInterpolation` adds the frame at `x - shift`), which is `dx`, `dy` as they are.
pub fn write_relion_star(
    out: &mut impl Write,
    general: &StarGeneral<'_>,
    rows: &[FrameRow],
) -> Result<()> {
    for path in [Some(general.movie), general.gain, general.defect_file]
        .into_iter()
        .flatten()
    {
        star_word(path)?;
    }
    let (ny, nx) = general.frame_shape;
    writeln!(out, "# version 30001\n\ndata_general\n")?;
    writeln!(out, "_rlnImageSizeX {nx}")?;
    writeln!(out, "_rlnImageSizeY {ny}")?;
    let (aligned, movie_frames) = &general.frames_of_movie;
    writeln!(out, "_rlnImageSizeZ {movie_frames}")?;
    writeln!(out, "_rlnMicrographMovieName {}", general.movie)?;
    if let Some(gain) = general.gain {
        writeln!(out, "_rlnMicrographGainName {gain}")?;
    }
    if let Some(defects) = general.defect_file {
        writeln!(out, "_rlnMicrographDefectFile {defects}")?;
    }
    writeln!(out, "_rlnMicrographBinning {:.6}", general.binning)?;
    if let Some(pixel_size) = general.pixel_size {
        writeln!(out, "_rlnMicrographOriginalPixelSize {pixel_size:.6}")?;
    }
    if let Some((per_frame, pre_exposure, voltage_kv)) = general.dose {
        writeln!(out, "_rlnMicrographDoseRate {per_frame:.6}")?;
        writeln!(out, "_rlnMicrographPreExposure {pre_exposure:.6}")?;
        writeln!(out, "_rlnVoltage {voltage_kv:.6}")?;
    }
    writeln!(out, "_rlnMicrographStartFrame {}", aligned.start + 1)?;
    if let Some(eer) = general.eer {
        writeln!(out, "_rlnEERUpsampling {}", eer.upsampling)?;
        writeln!(out, "_rlnEERGrouping {}", eer.grouping)?;
    }
    let model = general.local.and_then(|l| l.motion.model());
    // RELION's MOTION_MODEL_THIRD_ORDER_POLYNOMIAL, or MOTION_MODEL_NULL.
    writeln!(out, "_rlnMotionModelVersion {}\n", model.is_some() as u8)?;
    write_loop_header(
        out,
        "global_shift",
        &[
            "_rlnMicrographFrameNumber",
            "_rlnMicrographShiftX",
            "_rlnMicrographShiftY",
        ],
    )?;
    // Every frame of the movie; those not aligned RELION's NOT_OBSERVED.
    for frame in 0..*movie_frames {
        match frame.checked_sub(aligned.start).and_then(|i| rows.get(i)) {
            Some(r) => writeln!(out, "{} {:.6} {:.6}", frame + 1, r.dx, r.dy)?,
            None => writeln!(out, "{} -9999.000000 -9999.000000", frame + 1)?,
        }
    }
    if let Some(model) = model {
        writeln!(out)?;
        write_loop_header(
            out,
            "local_motion_model",
            &["_rlnMotionModelCoeffsIdx", "_rlnMotionModelCoeff"],
        )?;
        let coefficients = model.coefficients_x.iter().chain(&model.coefficients_y);
        for (k, c) in coefficients.enumerate() {
            writeln!(out, "{k} {c:.9e}")?;
        }
    }
    if !general.hot_pixels.is_empty() {
        writeln!(out)?;
        write_loop_header(out, "hot_pixels", &["_rlnCoordinateX", "_rlnCoordinateY"])?;
        for &(y, x) in general.hot_pixels {
            writeln!(out, "{:.6} {:.6}", x as f64, y as f64)?;
        }
    }
    if let Some(local) = general.local {
        // The drift each settled patch had left, as RELION lists the observations it fitted.
        writeln!(out)?;
        write_loop_header(
            out,
            "local_shift",
            &[
                "_rlnMicrographFrameNumber",
                "_rlnCoordinateX",
                "_rlnCoordinateY",
                "_rlnMicrographShiftX",
                "_rlnMicrographShiftY",
            ],
        )?;
        for patch in local.patches.iter().filter(|p| p.converged) {
            let [cy, cx] = patch.centre();
            for (i, (s, &peak)) in patch.shifts.iter().zip(&patch.peaks).enumerate() {
                if peak != 0.0 {
                    let frame = aligned.start + i + 1;
                    writeln!(out, "{frame} {cx:.6} {cy:.6} {:.6} {:.6}", s[1], s[0])?;
                }
            }
        }
    }
    writeln!(out)?;
    Ok(())
}

/// Writes `NAME.patches.csv`: per patch (numbered row by row from 0) and frame, the patch's
/// centre (row, col in the movie's pixels), the drift left after the whole-frame shift that it
/// measured (`dy`, `dx`: what moves the patch onto the first aligned frame's), the model's value there (empty
/// where no model was fitted), the peak, and whether the patch settled (only those are fitted).
/// The frames are the movie's from `first` on (the model's time counts from that one).
pub fn write_patches_csv(out: &mut impl Write, local: &LocalAlignment, first: usize) -> Result<()> {
    writeln!(out, "patch,row,col,frame,dy,dx,fit_dy,fit_dx,peak,settled")?;
    for (p, patch) in local.patches.iter().enumerate() {
        let [cy, cx] = patch.centre();
        for (i, (s, peak)) in patch.shifts.iter().zip(&patch.peaks).enumerate() {
            let fit = match local.motion.model() {
                Some(model) => {
                    let [fy, fx] = model.shift_at(i as f64, cy, cx);
                    format!("{fy:.4},{fx:.4}")
                }
                None => ",".to_owned(),
            };
            writeln!(
                out,
                "{p},{cy:.1},{cx:.1},{},{:.4},{:.4},{fit},{peak:.6},{}",
                first + i,
                s[0],
                s[1],
                patch.converged as u8
            )?;
        }
    }
    Ok(())
}

/// Writes any report as pretty JSON.
pub fn write_json(out: &mut impl Write, report: &impl Serialize) -> Result<()> {
    serde_json::to_writer_pretty(&mut *out, report)?;
    writeln!(out)?;
    Ok(())
}

/// The longest side of the PNG preview; larger images are binned down by a whole factor.
pub const PREVIEW_SIZE: usize = 1024;

/// Writes an 8-bit grayscale preview of `image`: binned to at most [`PREVIEW_SIZE`] pixels a
/// side, contrast-stretched between the 0.5th and 99.5th percentiles, row 0 at the bottom (y
/// up, as IMOD shows an MRC image, and so a TIFF movie's sum as the movie shows).
pub fn write_preview(out: &mut impl Write, image: ArrayView2<'_, f32>) -> Result<()> {
    let binned = bin(
        image,
        image
            .nrows()
            .max(image.ncols())
            .div_ceil(PREVIEW_SIZE)
            .max(1),
    );
    let (lo, hi) = percentiles(binned.view(), 0.005, 0.995);
    let scale = if hi > lo { 255.0 / (hi - lo) } else { 0.0 };
    let pixels: Vec<u8> = binned
        .slice(ndarray::s![..;-1, ..])
        .iter()
        .map(|&v| {
            if v.is_finite() {
                ((v - lo) * scale).clamp(0.0, 255.0).round() as u8
            } else {
                0
            }
        })
        .collect();
    write_png(
        out,
        binned.ncols(),
        binned.nrows(),
        png::ColorType::Grayscale,
        &pixels,
    )
}

/// Writes 8-bit pixels (gray or RGB, row-major) as a PNG.
pub fn write_png(
    out: &mut impl Write,
    width: usize,
    height: usize,
    color: png::ColorType,
    pixels: &[u8],
) -> Result<()> {
    let mut encoder = png::Encoder::new(out, u32::try_from(width)?, u32::try_from(height)?);
    encoder.set_color(color);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(pixels)?;
    writer.finish()?;
    Ok(())
}

/// The mean of each `factor` x `factor` block (partial blocks at the edges are dropped, unless
/// the image is smaller than one block).
fn bin(image: ArrayView2<'_, f32>, factor: usize) -> ndarray::Array2<f32> {
    if factor == 1 {
        return image.to_owned();
    }
    let (ny, nx) = (
        (image.nrows() / factor).max(1),
        (image.ncols() / factor).max(1),
    );
    ndarray::Array2::from_shape_fn((ny, nx), |(y, x)| {
        let block = image.slice(ndarray::s![
            y * factor..((y + 1) * factor).min(image.nrows()),
            x * factor..((x + 1) * factor).min(image.ncols())
        ]);
        block.mean().unwrap_or(0.0)
    })
}

/// The `low` and `high` quantiles (0..1) of the finite values of `image`.
fn percentiles(image: ArrayView2<'_, f32>, low: f64, high: f64) -> (f32, f32) {
    let mut values: Vec<f32> = image.iter().copied().filter(|v| v.is_finite()).collect();
    if values.is_empty() {
        return (0.0, 0.0);
    }
    let mut at = |q: f64| {
        let k = ((values.len() - 1) as f64 * q).round() as usize;
        *values.select_nth_unstable_by(k, f32::total_cmp).1
    };
    (at(low), at(high))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ufunc-output-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn staged_files_appear_only_on_commit() {
        let dir = temp_dir("commit");
        let paths = OutputPaths::new(&dir, "m");
        let mut staging = Staging::default();
        staging
            .write(&paths.csv, |w| Ok(w.write_all(b"a")?))
            .unwrap();
        staging
            .write(&paths.json, |w| Ok(w.write_all(b"b")?))
            .unwrap();
        assert_eq!(entries(&dir).len(), 2);
        assert!(!paths.csv.exists());
        staging.commit().unwrap();
        assert_eq!(entries(&dir), ["m.shifts.csv", "m.shifts.json"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A result that cannot take its final name (a folder there): no temporary file and no
    /// part of the results stays.
    #[test]
    fn a_failed_rename_leaves_no_part_of_the_results() {
        let dir = temp_dir("rename");
        let paths = OutputPaths::new(&dir, "m");
        std::fs::create_dir(&paths.png).unwrap();
        let mut staging = Staging::default();
        for path in paths.all() {
            staging.write(path, |w| Ok(w.write_all(b"a")?)).unwrap();
        }
        let err = format!("{:#}", staging.commit().unwrap_err());
        assert!(err.contains("m.aligned.png"), "{err}");
        assert_eq!(entries(&dir), ["m.aligned.png"]);
        assert!(paths.png.is_dir());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failure_leaves_nothing_behind() {
        let dir = temp_dir("failure");
        let paths = OutputPaths::new(&dir, "m");
        let result = (|| {
            let mut staging = Staging::default();
            staging.write(&paths.csv, |w| Ok(w.write_all(b"a")?))?;
            staging.write(&paths.mrc, |_| anyhow::bail!("disk on fire"))?;
            staging.commit()
        })();
        let err = format!("{:#}", result.unwrap_err());
        assert!(
            err.contains("m.aligned.mrc") && err.contains("disk on fire"),
            "{err}"
        );
        assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn csv_has_a_header_and_a_row_per_frame() {
        let rows = frame_rows(
            &[[0.0, 0.0], [0.5, -1.25], [3.5, -1.25]],
            &[1.0, 0.5, 0.25],
            None,
            0,
        );
        let mut out = Vec::new();
        write_csv(&mut out, &rows).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "frame,dy,dx,peak,step");
        assert_eq!(lines[2], "1,0.5000,-1.2500,0.500000,1.3463");
        assert_eq!(lines[3], "2,3.5000,-1.2500,0.250000,3.0000");
        let with_truth = frame_rows(&[[0.0, 0.0]], &[1.0], Some(&[[0.0, 0.0]]), 0);
        let mut out = Vec::new();
        write_csv(&mut out, &with_truth).unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .starts_with("frame,dy,dx,peak,step,true_dy,true_dx\n0,"));
    }

    #[test]
    fn previews_are_stretched_and_binned() {
        let image = Array2::from_shape_fn((2100, 300), |(y, x)| (y + x) as f32);
        let mut out = Vec::new();
        write_preview(&mut out, image.view()).unwrap();
        let decoder = png::Decoder::new(std::io::Cursor::new(out));
        let mut reader = decoder.read_info().unwrap();
        let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut pixels).unwrap();
        assert_eq!((info.width, info.height), (100, 700));
        assert_eq!(info.color_type, png::ColorType::Grayscale);
        // Row 0 (the smallest values) at the bottom.
        let bottom_left = pixels.len() - 100;
        assert_eq!((pixels[bottom_left], pixels[99]), (0, 255));
    }

    #[test]
    fn a_star_cannot_name_a_path_with_spaces() {
        let general = StarGeneral {
            frame_shape: (4, 4),
            frames_of_movie: (0..1, 1),
            movie: "/data/my movie.tif",
            gain: None,
            defect_file: None,
            hot_pixels: &[],
            binning: 1.0,
            pixel_size: None,
            dose: None,
            local: None,
            eer: None,
        };
        let error = write_relion_star(&mut Vec::new(), &general, &[]).unwrap_err();
        assert!(error.to_string().contains("my movie.tif"), "{error}");
    }

    /// RELION's loop over a movie's frames (motioncorr_runner.cpp) written out: the distance
    /// from each frame's shift to the previous frame's, early while the frame's number from 1
    /// is at most (4 - pre-exposure) / exposure per frame.
    #[test]
    fn accumulated_motion_is_relions() {
        let shifts = [
            [0.0, 0.0],
            [3.0, 4.0],
            [3.0, 4.0],
            [-3.0, -4.0],
            [-3.0, -3.0],
        ];
        // Frames 2 and 3 (of exposures 2 and 3 e/Å² after 0.5) are early: 5 + 0; 4 and 5 late.
        assert_eq!(
            AccumulatedMotion::of(&shifts, 1.0, 0.5, 0),
            AccumulatedMotion {
                total: 16.0,
                early: 5.0,
                late: 11.0
            }
        );
        // At 1 e/Å² a frame, frame 4 ends at 4 e/Å²: still early, as RELION's `<=` has it.
        let steps = [
            [0.0, 0.0],
            [1.0, 0.0],
            [3.0, 0.0],
            [6.0, 0.0],
            [10.0, 0.0],
            [15.0, 0.0],
        ];
        assert_eq!(
            AccumulatedMotion::of(&steps, 1.0, 0.0, 0),
            AccumulatedMotion {
                total: 15.0,
                early: 6.0,
                late: 9.0
            }
        );
        // From the movie's frame 2 (from 0) on: the steps end at frames 4 to 8 (from 1), and
        // only the first, to frame 4 at 4 e/Å², is early.
        assert_eq!(
            AccumulatedMotion::of(&steps, 1.0, 0.0, 2),
            AccumulatedMotion {
                total: 15.0,
                early: 1.0,
                late: 14.0
            }
        );
        // A pre-exposure beyond the cutoff leaves no early frame; one frame has no motion.
        assert_eq!(AccumulatedMotion::of(&shifts, 1.0, 5.0, 0).early, 0.0);
        assert_eq!(AccumulatedMotion::of(&shifts, 1.0, 5.0, 0).late, 16.0);
        assert_eq!(
            AccumulatedMotion::of(&shifts[..1], 1.0, 0.0, 0),
            AccumulatedMotion {
                total: 0.0,
                early: 0.0,
                late: 0.0
            }
        );
    }

    /// One optics group per pixel size, numbered from 1 in the order first met, each row naming
    /// its group; a path with a space is refused.
    #[test]
    fn relion_micrographs_star_has_a_group_per_pixel_size() {
        let mic = |name: &str, pixel_size: f32| StarMicrograph {
            sum: format!("/d/{name}.aligned_DW.mrc"),
            plain_sum: format!("/d/{name}.aligned.mrc"),
            metadata: format!("/d/{name}.star"),
            pixel_size,
            sum_pixel_size: 2.0 * pixel_size,
            motion: AccumulatedMotion {
                total: 3.5,
                early: 1.25,
                late: 2.25,
            },
            halves: None,
            power_spectrum: None,
        };
        let optics = StarOptics {
            voltage_kv: 300.0,
            cs_mm: 2.7,
            amplitude_contrast: 0.1,
        };
        let mut text = Vec::new();
        let mics = [mic("a", 0.83), mic("b", 1.06), mic("c", 0.83)];
        write_relion_micrographs(&mut text, &optics, &mics).unwrap();
        let expected = "
# version 30001

data_optics

loop_
_rlnOpticsGroupName #1
_rlnOpticsGroup #2
_rlnMicrographOriginalPixelSize #3
_rlnVoltage #4
_rlnSphericalAberration #5
_rlnAmplitudeContrast #6
_rlnMicrographPixelSize #7
px0.83A_sum1.66A_300kV_Cs2.7mm_AC0.1 1 0.830000 300.000000 2.700000 0.100000 1.660000
px1.06A_sum2.12A_300kV_Cs2.7mm_AC0.1 2 1.060000 300.000000 2.700000 0.100000 2.120000


# version 30001

data_micrographs

loop_
_rlnMicrographNameNoDW #1
_rlnMicrographName #2
_rlnMicrographMetadata #3
_rlnOpticsGroup #4
_rlnAccumMotionTotal #5
_rlnAccumMotionEarly #6
_rlnAccumMotionLate #7
/d/a.aligned.mrc /d/a.aligned_DW.mrc /d/a.star 1 3.500000 1.250000 2.250000
/d/b.aligned.mrc /d/b.aligned_DW.mrc /d/b.star 2 3.500000 1.250000 2.250000
/d/c.aligned.mrc /d/c.aligned_DW.mrc /d/c.star 1 3.500000 1.250000 2.250000

";
        assert_eq!(String::from_utf8(text).unwrap(), expected);

        // A header's 1.0600001 and a given 1.06 are one group, as the table writes both.
        let mut text = Vec::new();
        write_relion_micrographs(&mut text, &optics, &[mic("a", 1.06), mic("b", 1.0600001)])
            .unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("/d/b.star 1 ") && !text.contains(" 2 1.060000"),
            "{text}"
        );

        let spaced = [mic("my movie", 1.0)];
        let error = write_relion_micrographs(&mut Vec::new(), &optics, &spaced).unwrap_err();
        assert!(
            error.to_string().contains("/d/my movie.aligned.mrc"),
            "{error}"
        );
    }
}
