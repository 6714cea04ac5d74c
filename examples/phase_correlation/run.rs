//! The driver: finds the movies (paths, folders, globs; `--shard`), aligns each one and writes
//! its results, skipping finished ones unless `--force`, keeping on after a failing movie, with
//! progress on the terminal (or log lines), and returns the summary.

use crate::binning::{binned_shape, fourier_crop};
use crate::cli::{Args, GainFlip};
use crate::defects::{DefectCounts, DefectList, Defects};
use crate::io::eer::EerRendering;
use crate::io::mrc::{write_mrc_in, MrcStackWriter, Precision};
use crate::io::{oriented_gain, read_image, usable_gain, Movie, EXTENSIONS};
use crate::output::{
    frame_rows, report_movie, star_word, write_csv, write_json, write_patches_csv, write_preview,
    write_relion_micrographs, write_relion_star, AccumulatedMotion, OutputPaths, Staging,
    StarGeneral, StarMicrograph, StarOptics, MRC_SUFFIXES,
};
use crate::plot::{write_drift_plot, write_patch_plot};
use crate::power_spectrum::{relion_power_spectrum, Geometry as PowerSpectrumGeometry};
use crate::summary::{Done, Outcome, Status, Summary};
use anyhow::{bail, Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use ndarray::{Array2, ArrayView2, ArrayViewMut2};
use serde::Serialize;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use ufunc::registration::{
    align_movie, align_patches, aligned_sums, AlignOptions, AlignedSums, Alignment,
    CorrectedFrames, DoseWeighting, FrameSource, LocalAlignment, LocalMotion, PatchOptions,
    SpectraMemory, SumsWanted,
};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Nothing (tests).
    Quiet,
    /// One line per event on stderr (not a terminal: batch jobs, logs).
    Log,
    /// Progress bars on stderr (a terminal).
    Bars,
}

impl Progress {
    /// Bars on a terminal, log lines otherwise.
    pub fn auto() -> Progress {
        if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            Progress::Bars
        } else {
            Progress::Log
        }
    }

    fn log(self, bars: &MultiProgress, line: String) {
        match self {
            Progress::Quiet => {}
            Progress::Log => eprintln!("{line}"),
            Progress::Bars => {
                let _ = bars.println(line);
            }
        }
    }
}

/// Runs the program on the movies `args` names (the synthetic demo when it names none).
pub fn run(args: &Args, progress: Progress) -> Result<Summary> {
    if args.movies.is_empty() {
        return crate::demo::run_demo(args, progress);
    }
    let (mut movies, mut left_out) = find_movies_leaving_out(&args.movies)?;
    // The gain reference and the defect map, kept beside the movies, are not among them.
    for (given, what) in [
        (&args.gain, "gain reference"),
        (&args.defects, "defect map"),
    ] {
        let Some(given) = given else { continue };
        let given = given.canonicalize().unwrap_or_else(|_| given.clone());
        let other = |m: &PathBuf| m.canonicalize().map_or(true, |m| m != given);
        movies.retain(other);
        left_out.retain(other);
        if movies.is_empty() {
            bail!(
                "no movie among {:?} once the {what} is left out",
                args.movies
            );
        }
    }
    if !left_out.is_empty() && progress != Progress::Quiet {
        eprintln!(
            "left out: {} (gain references, defect maps?); name such a file to align it",
            single_images(&left_out)
        );
    }
    if let Some(shard) = args.shard {
        movies = shard.select(movies);
    }
    let gain = match &args.gain {
        Some(path) => Some((
            read_image(path)
                .and_then(|gain| usable_gain(gain, path))
                .map(|gain| oriented_gain(gain, args.gain_rotate, args.gain_flip.axis()))
                .context("cannot read the gain reference")?,
            path.clone(),
        )),
        None => None,
    };
    let defect_list = args.defects.as_deref().map(DefectList::read).transpose()?;
    let options = args.align_options();
    let settings = Settings::of(args);
    // As a report would hold them: written as text and read back (an f32 is written as one,
    // and serde_json's parse of a float may differ from the float by a unit in the last place,
    // the same way every time).
    fn as_reported(value: &impl Serialize) -> Result<serde_json::Value> {
        Ok(serde_json::from_str(&serde_json::to_string(value)?)?)
    }
    // What a movie's report must say for its results to be this run's.
    let wanted = |settings: &Settings| -> Result<serde_json::Value> {
        Ok(depends_on(&serde_json::json!({
            "options": as_reported(&options_report(&options))?,
            "settings": as_reported(settings)?,
        })))
    };
    // The results beyond the five that these arguments ask for, where they are missing.
    let asked_for = |outputs: &OutputPaths| -> Vec<String> {
        [
            (settings.dose.is_some(), &outputs.mrc_dw),
            (args.relion_star, &outputs.star),
            (settings.patches.is_some(), &outputs.patches),
            (settings.patches.is_some(), &outputs.patches_png),
            (settings.split_sums, &outputs.mrc_even),
            (settings.split_sums, &outputs.mrc_odd),
            (args.aligned_stack, &outputs.stack),
            (settings.power_spectrum.is_some(), &outputs.power_spectrum),
        ]
        .into_iter()
        .filter(|(asked, path)| *asked && !path.is_file())
        .map(|(_, path)| path.display().to_string())
        .collect()
    };
    // The micrographs STAR names the results by their paths: refused before any movie is
    // aligned rather than after all are.
    if let (Some(_), Some(out)) = (&args.relion_micrographs, &args.out) {
        let out = std::path::absolute(out).unwrap_or(out.clone());
        star_word(&out.display().to_string()).with_context(|| {
            format!(
                "--relion-micrographs names the results in --out {}: choose another --out",
                out.display()
            )
        })?;
    }
    if let (true, Some(gain)) = (args.relion_star, &args.gain) {
        if !crate::io::is_dot_gain(gain) && movies.iter().any(|m| crate::io::is_eer(m)) {
            bail!(
                "--relion-star names the gain reference {}, and RELION divides an EER movie's \
                 frames by a gain that is not a .gain file, where this program multiplies them: \
                 give the gain as a .gain file (Thermo Fisher's, or a TIFF of the gain to \
                 multiply by, its rows top-down), or leave out --relion-star",
                gain.display()
            );
        }
    }
    // RELION reads no DM file (its image reader asks for IMOD's dm2mrc), and NAME.star names
    // the gain and the defect map for its polishing to read.
    for (file, flag) in [(&args.gain, "--gain"), (&args.defects, "--defects")] {
        if let (true, Some(file)) = (args.relion_star, file) {
            if crate::io::is_dm(file) {
                bail!(
                    "--relion-star names the {flag} file {}, and RELION cannot read DM files: \
                     convert it with IMOD's `dm2mrc` (whose MRC file this program reads as it \
                     reads the DM file) and give that, or leave out --relion-star",
                    file.display()
                );
            }
        }
    }
    if args.float16 && args.relion_micrographs.is_some() && args.ps_grouping.is_none() {
        bail!(
            "--float16 with --relion-micrographs needs --ps-grouping: CTFFIND cannot read \
             float16 sums, and RELION's CTF estimation then reads the power spectra (RELION \
             requires them likewise)"
        );
    }
    if args.relion_star && (args.gain_rotate != 0 || args.gain_flip != GainFlip::None) {
        bail!(
            "--relion-star names the gain reference as a file, and RELION would read it as it \
             is, not turned or flipped: save the gain as --gain-rotate/--gain-flip turn it and \
             give that file instead"
        );
    }
    let bars = MultiProgress::with_draw_target(match progress {
        Progress::Bars => ProgressDrawTarget::stderr(),
        _ => ProgressDrawTarget::hidden(),
    });
    if let (Some((gain, path)), None) = (&gain, &settings.defects) {
        let zeros = gain.iter().filter(|&&g| g == 0.0).count();
        if zeros > 0 {
            progress.log(
                &bars,
                format!(
                    "WARNING: the gain reference {} is 0 at {zeros} pixels, which then read 0 \
                     in every frame and pull the shifts towards zero: --hot-pixels 6 (or \
                     --defects) replaces them as RELION does",
                    path.display()
                ),
            );
        }
    }
    let overall = bars.add(ProgressBar::new(movies.len() as u64));
    overall.set_style(style("movies {bar:30.green/white} {pos}/{len} {wide_msg}"));
    let mut outcomes = Vec::new();
    // The results of this run's movies that the micrographs STAR lists.
    let mut listed = Vec::new();
    let mut names = HashSet::new();
    for (i, path) in movies.iter().enumerate() {
        let tag = format!("[{}/{}] {}", i + 1, movies.len(), path.display());
        overall.set_message(path.display().to_string());
        let out_dir = args.out.clone().unwrap_or_else(|| match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
            _ => PathBuf::from("."),
        });
        let name = movie_name(path);
        let outputs = OutputPaths::new(&out_dir, &name);
        // `a.npy` and `./a.mrc`, or `d/a.npy` and `d/../d/a.mrc`, write the same `a.*`: a
        // movie's folder by its canonical path; `--out`, shared by all, as given (it may not
        // exist before the first movie's results).
        let folder = match &args.out {
            Some(out) => out.clone(),
            None => out_dir.canonicalize().unwrap_or(out_dir.clone()),
        };
        let written = (folder, name.clone());
        let settings = settings.for_movie(path, args);
        let wanted = wanted(&settings)?;
        let status = if !names.insert(written) {
            Status::Failed(format!(
                "{}: another movie of this batch already writes {name}.* into {}",
                path.display(),
                out_dir.display()
            ))
        } else if outputs.complete() && !args.force {
            // Finished: by this movie, or by another of the same name (`a.npy` and `a.mrc`, or
            // `one/a.npy` and `two/a.npy`, run one at a time into one `--out`), whose results
            // are neither this one's to skip on nor to overwrite unasked.
            let owner = outputs.report().and_then(|report| {
                let theirs = report_movie(&report, &outputs)?;
                Ok((same_movie(&theirs, path)?, theirs, report))
            });
            // The stack's grouping matters to a run that asks for the stack, where there is
            // one (without, its absence is what is told); a value left out is 1.
            let stack_matters = args.aligned_stack && outputs.stack.is_file();
            let grouping = |mut value: serde_json::Value| {
                if let Some(settings) = value["settings"].as_object_mut() {
                    match stack_matters {
                        true => _ = settings.entry("stack_group").or_insert(1.into()),
                        false => _ = settings.remove("stack_group"),
                    }
                }
                value
            };
            match owner {
                Ok((true, _, report)) => {
                    match differences(&grouping(depends_on(&report)), &grouping(wanted.clone())) {
                        None => match asked_for(&outputs) {
                            missing if missing.is_empty() => Status::Skipped,
                            missing => Status::Failed(format!(
                                "{}: its results {name}.* in {} lack {}; the others are left as \
                             they are (--force redoes them)",
                                path.display(),
                                out_dir.display(),
                                missing.join(" and ")
                            )),
                        },
                        Some(differences) => Status::Failed(format!(
                            "{}: its results {name}.* in {} were made with other settings \
                         ({differences}); they are left as they are (--force redoes them)",
                            path.display(),
                            out_dir.display()
                        )),
                    }
                }
                Ok((false, theirs, _)) => Status::Failed(format!(
                    "{}: the results {name}.* in {} are those of another movie, {theirs}; \
                     they are left as they are (--force overwrites them, or choose another --out)",
                    path.display(),
                    out_dir.display()
                )),
                Err(e) => Status::Failed(format!(
                    "{}: cannot tell whose results {name}.* in {} are: {e:#}; they are left as \
                     they are (--force overwrites them)",
                    path.display(),
                    out_dir.display()
                )),
            }
        } else {
            let frame_bar = bars.add(ProgressBar::new(0));
            let result = (|| {
                let mut movie = Movie::open_with(path, args.eer_rendering())?;
                if let Some(frames) = settings.frames {
                    movie = movie.with_frames(frames.first, frames.last)?;
                }
                // The gain as this movie's frames take it (a detector-sized one enlarged for
                // upsampled EER frames), for the frames and for the defects it marks.
                let gain = gain
                    .as_ref()
                    .map(|(gain, gain_path)| (movie.fitted_gain(gain.clone()), gain_path.clone()));
                if let Some((gain, gain_path)) = &gain {
                    movie = movie.with_gain(gain.clone(), gain_path)?;
                }
                let defects = match &settings.defects {
                    Some(_) => {
                        frame_bar.set_message("finding defects");
                        let started = Instant::now();
                        let found = find_defects(
                            &mut movie,
                            path,
                            args.hot_pixels,
                            defect_list.as_ref(),
                            gain.as_ref(),
                        )?;
                        progress.log(&bars, format!("{tag}: {}", describe_defects(&found.counts)));
                        let replaced = Replaced {
                            counts: found.counts,
                            hot: found.hot.clone(),
                            seconds: started.elapsed().as_secs_f64(),
                        };
                        movie = movie.with_defects(found);
                        Some(replaced)
                    }
                    None => None,
                };
                progress.log(
                    &bars,
                    format!(
                        "{tag}: {} of {}x{}{}{}",
                        match movie.frames_of_file() {
                            (range, all) if range.len() < all =>
                                format!("frames {} to {} of {all}", range.start + 1, range.end),
                            (range, _) => format!("{} frames", range.len()),
                        },
                        movie.frame_shape().0,
                        movie.frame_shape().1,
                        movie.note().map(|n| format!(" ({n})")).unwrap_or_default(),
                        describe_memory(
                            options.spectra_memory(movie.len(), movie.frame_shape()),
                            &options
                        )
                    ),
                );
                frame_bar.set_length(movie.len() as u64);
                frame_bar.set_style(style("  frames {bar:30.cyan/white} {pos}/{len} {msg}"));
                frame_bar.set_message("reading");
                std::fs::create_dir_all(&out_dir)
                    .with_context(|| format!("cannot create {}", out_dir.display()))?;
                let meta = MovieMeta {
                    frames_of_file: Some(movie.frames_of_file()),
                    movie: path.display().to_string(),
                    report_name: canonical(path).display().to_string(),
                    title: name.clone(),
                    pixel_size: args.pixel_size.or(movie.pixel_size()),
                    settings: settings.clone(),
                    relion_star: args.relion_star,
                    aligned_stack: args.aligned_stack,
                    defects,
                };
                let mut source = Ticking {
                    movie: &mut movie,
                    bar: &frame_bar,
                    reads: 0,
                };
                align_and_write(&mut source, &meta, &outputs, &options, None)
            })();
            frame_bar.finish_and_clear();
            match result {
                Ok(done) => Status::Done(done),
                Err(e) => Status::Failed(format!("{e:#}")),
            }
        };
        progress.log(&bars, format!("{tag}: {}", status.describe()));
        if matches!(status, Status::Done(_) | Status::Skipped) {
            listed.push(outputs);
        }
        outcomes.push(Outcome {
            movie: path.clone(),
            status,
        });
        overall.inc(1);
    }
    let mut summary = Summary::new(outcomes);
    if let Some(file) = &args.relion_micrographs {
        match write_micrographs_star(file, args, &settings, &listed) {
            Ok(()) => progress.log(
                &bars,
                format!(
                    "wrote {}: {} micrograph{}",
                    file.display(),
                    listed.len(),
                    if listed.len() == 1 { "" } else { "s" }
                ),
            ),
            Err(e) => summary.errors.push(format!("{e:#}")),
        }
    }
    overall.finish_and_clear();
    Ok(summary)
}

/// The defects of `movie` (at `path`) to replace: the pixels `listed` (`--defects`), those
/// the gain zeroes, and with `hot_pixels` (`--hot-pixels`) those that stand out of the movie's
/// unaligned sum (read for it once more).
fn find_defects(
    movie: &mut Movie,
    path: &Path,
    hot_pixels: Option<f64>,
    listed: Option<&DefectList>,
    gain: Option<&(ndarray::Array2<f32>, PathBuf)>,
) -> Result<Defects> {
    let shape = movie.frame_shape();
    let mut defects = Defects::new(shape);
    if let Some(list) = listed {
        defects
            .add_listed(list)
            .with_context(|| format!("{}: --defects", path.display()))?;
    }
    if let Some((gain, _)) = gain {
        defects.add_zero_gain(gain.view());
    }
    if let Some(sigma) = hot_pixels {
        let mut sum = ndarray::Array2::<f64>::zeros(shape);
        let mut frame = ndarray::Array2::<f32>::zeros(shape);
        for i in 0..movie.len() {
            movie.read_frame(i, frame.view_mut())?;
            sum.zip_mut_with(&frame, |s, &v| *s += v as f64);
        }
        defects.add_hot(sum.view(), sigma);
    }
    defects.check(&path.display().to_string())?;
    Ok(defects)
}

/// "replacing 12 defects (3 listed, 1 zero in the gain, 8 hot)".
fn describe_defects(counts: &DefectCounts) -> String {
    let total = counts.listed + counts.zero_gain + counts.hot;
    format!(
        "replacing {total} defect{} ({} listed, {} zero in the gain, {} hot)",
        if total == 1 { "" } else { "s" },
        counts.listed,
        counts.zero_gain,
        counts.hot
    )
}

/// Writes `file`, RELION's micrographs STAR of the movies whose results `listed` are (see
/// [`write_relion_micrographs`]), by their canonical paths as their STARs name the movies.
fn write_micrographs_star(
    file: &Path,
    args: &Args,
    settings: &Settings,
    listed: &[OutputPaths],
) -> Result<()> {
    let context = || format!("--relion-micrographs: cannot write {}", file.display());
    let (Some(dose), Some(cs_mm)) = (&settings.dose, args.cs) else {
        // The command line requires both.
        bail!("{}: --dose-per-frame and --cs are needed", context());
    };
    if listed.is_empty() {
        bail!("{}: no movie of this run has results", context());
    }
    let optics = StarOptics {
        voltage_kv: dose.voltage_kv,
        cs_mm,
        amplitude_contrast: args.amplitude_contrast.unwrap_or(0.1),
    };
    let mics = listed
        .iter()
        .map(|outputs| star_micrograph(outputs, dose, settings))
        .collect::<Result<Vec<_>>>()
        .with_context(context)?;
    if let Some(folder) = file.parent().filter(|f| !f.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder)
            .with_context(|| format!("cannot create {}", folder.display()))
            .with_context(context)?;
    }
    let mut staging = Staging::default();
    staging.write(file, |w| write_relion_micrographs(w, &optics, &mics))?;
    staging.commit()
}

/// The micrographs STAR's row of the movie whose results are `outputs`, from its report.
fn star_micrograph(
    outputs: &OutputPaths,
    dose: &DoseReport,
    settings: &Settings,
) -> Result<StarMicrograph> {
    let report = outputs.report()?;
    let json = outputs.json.display();
    let number = |key: &str| {
        report[key].as_f64().with_context(|| {
            format!("{json} gives no {key} (an earlier version's report: --force redoes it)")
        })
    };
    let shifts = report["shifts"]
        .as_array()
        .and_then(|rows| {
            rows.iter()
                .map(|row| Some([row["dy"].as_f64()?, row["dx"].as_f64()?]))
                .collect::<Option<Vec<_>>>()
        })
        .with_context(|| format!("{json} gives no shifts (--force redoes it)"))?;
    // The movie's first frame aligned (`--first-frame`), as the first row says.
    let first = report["shifts"][0]["frame"].as_u64().unwrap_or(0) as usize;
    let path = |p: &Path| canonical(p).display().to_string();
    Ok(StarMicrograph {
        sum: path(&outputs.mrc_dw),
        plain_sum: path(&outputs.mrc),
        metadata: path(&outputs.star),
        pixel_size: number("pixel_size")? as f32,
        sum_pixel_size: number("sum_pixel_size")? as f32,
        motion: AccumulatedMotion::of(&shifts, dose.per_frame, dose.pre_exposure, first),
        halves: settings
            .split_sums
            .then(|| (path(&outputs.mrc_even), path(&outputs.mrc_odd))),
        power_spectrum: settings
            .power_spectrum
            .map(|_| path(&outputs.power_spectrum)),
    })
}

/// The movies of [`find_movies_leaving_out`].
#[cfg(test)]
pub fn find_movies(inputs: &[String]) -> Result<Vec<PathBuf>> {
    Ok(find_movies_leaving_out(inputs)?.0)
}

/// The movies named by `inputs`: files as given (a missing one fails later, in its turn),
/// the movies in folders and among globs' matches sorted, without this program's own results;
/// each once. And the single-image files the folders and globs left out (`is_single_image`).
fn find_movies_leaving_out(inputs: &[String]) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut found = Vec::new();
    let mut left_out = Vec::new();
    for input in inputs {
        let path = Path::new(input);
        let (what, listed) = if path.is_dir() {
            let listed: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("cannot list {input}"))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            (format!("in the folder {input}"), listed)
        } else if !path.exists() && input.contains(['*', '?', '[']) {
            let listed = glob::glob(input)
                .with_context(|| format!("bad glob pattern {input:?}"))?
                .filter_map(|p| p.ok())
                .collect();
            (format!("matches {input:?}"), listed)
        } else {
            found.push(path.to_owned());
            continue;
        };
        let (mut movies, single): (Vec<PathBuf>, Vec<PathBuf>) = listed
            .into_iter()
            .filter(|p| p.is_file() && is_movie(p) && !is_result(p))
            .partition(|p| !is_single_image(p));
        if movies.is_empty() {
            match single.len() {
                0 => bail!(
                    "no movie {what} (movies end in .{})",
                    EXTENSIONS.join(", .")
                ),
                _ => bail!(
                    "no movie {what}: {} (gain references, defect maps?), which a folder or \
                     glob leaves out; name such a file to align it",
                    single_images(&single)
                ),
            }
        }
        movies.sort();
        found.extend(movies);
        left_out.extend(single);
    }
    // The same file named twice (`b.npy`, `./b.npy`, a link to it) is one movie.
    let mut seen = HashSet::new();
    found.retain(|p| seen.insert(p.canonicalize().unwrap_or(p.clone())));
    Ok((found, left_out))
}

/// "a.mrc holds a single image", "a.mrc, b.mrc, c.mrc and 2 more hold a single image each".
fn single_images(files: &[PathBuf]) -> String {
    let shown: Vec<String> = files
        .iter()
        .take(3)
        .map(|p| p.display().to_string())
        .collect();
    match files.len() {
        1 => format!("{} holds a single image", shown[0]),
        2 | 3 => format!("{} hold a single image each", shown.join(", ")),
        n => format!(
            "{} and {} more hold a single image each",
            shown.join(", "),
            n - 3
        ),
    }
}

fn is_movie(path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
}

/// Whether `path` is an MRC or DM file of a single image: in a folder or glob, a gain reference
/// or defect map kept beside the movies (SerialEM's `SuperRef_*.dm4`), not a movie. Their
/// headers say so; TIFF and EER files, whose pages would all be walked, are taken as movies.
fn is_single_image(path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    matches!(
        ext.to_ascii_lowercase().as_str(),
        "mrc" | "mrcs" | "st" | "dm4" | "dm3"
    ) && Movie::open(path).is_ok_and(|movie| movie.len() == 1)
}

/// Whether `path` is an aligned sum or stack this program wrote (`NAME.aligned.mrc`,
/// `NAME.aligned_DW.mrc`, `NAME.aligned_EVN.mrc`, `NAME.aligned_ODD.mrc`,
/// `NAME.aligned_stack.mrcs`, `NAME.aligned_PS.mrc`): with the default
/// output folder, beside the movies, a rerun over the folder (or a glob such as `*.mrc`, or a
/// shard listing it after other jobs wrote there) would take it for a movie.
fn is_result(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .map(|n| n.to_ascii_lowercase())
        .is_some_and(|n| {
            MRC_SUFFIXES
                .iter()
                .any(|suffix| n.ends_with(&format!(".{}", suffix.to_ascii_lowercase())))
        })
}

/// Whether `theirs`, the movie a results report names ([`MovieMeta::report_name`]: its
/// canonical path; in a report of an older version, the path as that run was given it), is
/// the movie at `path`: the same file by both canonical paths (`a.npy`, `./a.npy`,
/// `d/../d/a.npy`, the absolute path); where either is no file (a movie removed since), the
/// same absolute path. An error where `theirs` is relative and names no file from the current
/// folder: relative to the folder of a run that the report does not say, it could be any movie.
fn same_movie(theirs: &str, path: &Path) -> Result<bool> {
    // A report names its movie as text: a path that is no UTF-8 (`caf\xe9.npy`) is written
    // with replacement characters, which name no file when read back. Two paths written the
    // same give the same result names, which one batch refuses to share.
    let ours = path.canonicalize();
    if ours
        .as_ref()
        .is_ok_and(|c| c.display().to_string() == theirs)
    {
        return Ok(true);
    }
    let their_path = Path::new(theirs);
    match (their_path.canonicalize(), ours) {
        (Ok(a), Ok(b)) => Ok(a == b),
        _ if their_path.is_relative() => bail!(
            "the report names the movie {theirs}, relative to the folder its run was started in"
        ),
        _ => Ok(std::path::absolute(path).is_ok_and(|p| p == their_path)),
    }
}

/// `path` with every link and `.`/`..` resolved, the same from any current folder (as given
/// where it cannot be resolved).
fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_owned())
}

/// `NAME` of `NAME.ext`.
fn movie_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "movie".into())
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

/// A movie that advances a progress bar as its frames are read (once to align them, and once
/// more for the sum when they were aligned Fourier-binned).
struct Ticking<'a> {
    movie: &'a mut Movie,
    bar: &'a ProgressBar,
    reads: u64,
}

impl FrameSource for Ticking<'_> {
    fn frame_shape(&self) -> (usize, usize) {
        self.movie.frame_shape()
    }
    fn len(&self) -> usize {
        self.movie.len()
    }
    fn read_frame(
        &mut self,
        index: usize,
        out: ArrayViewMut2<'_, f32>,
    ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
        FrameSource::read_frame(&mut *self.movie, index, out)?;
        self.reads += 1;
        let n = self.movie.len() as u64;
        self.bar.set_position((self.reads - 1) % n + 1);
        match self.reads {
            r if r == n => self.bar.set_message("aligning"),
            r if r > n => self.bar.set_message("summing"),
            _ => {}
        }
        Ok(())
    }
}

/// What the report says about the movie besides its alignment.
pub struct MovieMeta {
    /// The movie as messages name it (its path as given).
    pub movie: String,
    /// The movie as the report names it: a file by its canonical path, which a rerun from any
    /// folder, however it spells the path, tells from another movie ([`same_movie`]).
    pub report_name: String,
    pub title: String,
    /// Å, as `--pixel-size` or the movie's header gives it (unknown: 1 in the sum's header).
    pub pixel_size: Option<f32>,
    pub settings: Settings,
    /// `--relion-star`: RELION's motion metadata is written too.
    pub relion_star: bool,
    /// `--aligned-stack`: the aligned frames are written too.
    pub aligned_stack: bool,
    /// The defects replaced in the frames.
    pub defects: Option<Replaced>,
    /// The frames of the file aligned, and how many it has (`--first-frame`, `--last-frame`);
    /// `None`: all of them.
    pub frames_of_file: Option<(std::ops::Range<usize>, usize)>,
}

/// The defects replaced in a movie's frames, as the report and RELION's metadata give them.
pub struct Replaced {
    pub counts: DefectCounts,
    /// `(row, col)` of the hot pixels.
    pub hot: Vec<(usize, usize)>,
    /// Finding them.
    pub seconds: f64,
}

/// What a movie's results depend on besides the movie and the alignment's options: a rerun
/// skips a finished movie only if its report has the same (and the same options but the
/// target and the memory limit, which change how the results are made, not what they are).
#[derive(Serialize, Clone)]
pub struct Settings {
    /// How frames are laid out: TIFF rows bottom-up, as MRC's (results of earlier versions,
    /// which recorded no settings, read TIFFs top-down).
    pub frame_rows: &'static str,
    /// The gain reference, by its canonical path as the movie, and how it was turned.
    pub gain: Option<GainReport>,
    /// `--bin`: the sum Fourier-cropped by this factor.
    pub bin: f64,
    /// `--pixel-size`, if given.
    pub pixel_size: Option<f32>,
    /// `--dose-per-frame` and its companions: the exposure-weighted sum is written too.
    pub dose: Option<DoseReport>,
    /// `--hot-pixels` and `--defects`; left out without them, as reports written before they
    /// existed have it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defects: Option<DefectsReport>,
    /// `--patches`; left out without it, as reports written before it existed have it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patches: Option<PatchesReport>,
    /// `--split-sums`; left out without it, likewise.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub split_sums: bool,
    /// `--eer-grouping` and `--eer-upsampling`, for an EER movie only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eer: Option<EerRendering>,
    /// `--first-frame` and `--last-frame`; left out without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames: Option<FramesReport>,
    /// `--ps-grouping` and `--ps-size`; left out without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_spectrum: Option<PowerSpectrumReport>,
    /// `--float16`; left out without it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub float16: bool,
    /// `--stack-group`; left out at 1 (each frame alone), as reports written before it have it.
    #[serde(skip_serializing_if = "is_one")]
    pub stack_group: usize,
}

/// RELION's power spectrum for CTF estimation: frames in a group, and pixels a side.
#[derive(Serialize, Clone, Copy)]
pub struct PowerSpectrumReport {
    pub grouping: usize,
    pub size: usize,
}

/// `--ps-size`'s default, RELION's `--ps_size`'s.
const DEFAULT_PS_SIZE: usize = 512;

/// The frames of the movie aligned and summed, from 1 (`last`: none for the movie's last).
#[derive(Serialize, Clone, Copy)]
pub struct FramesReport {
    pub first: usize,
    pub last: Option<usize>,
}

/// The local alignment's grid, and the taper of its patches and the largest rms of the
/// model's fit used (the library's).
#[derive(Serialize, Clone, Copy)]
pub struct PatchesReport {
    /// Patches across (columns) and down (rows).
    pub x: usize,
    pub y: usize,
    pub taper: f64,
    pub max_fit_rms: f64,
}

impl PatchesReport {
    /// The local alignment's options, with `align` for the whole frames and the patches.
    fn options(&self, align: &AlignOptions) -> PatchOptions {
        PatchOptions {
            grid: (self.y, self.x),
            taper: self.taper,
            max_fit_rms: self.max_fit_rms,
            align: *align,
        }
    }
}

/// Which defects are replaced in the frames.
#[derive(Serialize, Clone)]
pub struct DefectsReport {
    /// `--hot-pixels`: standard deviations above the unaligned sum's mean.
    pub hot_pixels: Option<f64>,
    /// `--defects`, by its canonical path.
    pub file: Option<String>,
}

impl Settings {
    /// The settings `args` ask for.
    pub fn of(args: &Args) -> Settings {
        Settings {
            frame_rows: "bottom-up",
            gain: args.gain.as_ref().map(|g| GainReport {
                path: canonical(g).display().to_string(),
                rotate: args.gain_rotate,
                flip: args.gain_flip.name().to_owned(),
            }),
            bin: args.bin,
            pixel_size: args.pixel_size,
            dose: args.dose_per_frame.map(|per_frame| DoseReport {
                per_frame,
                pre_exposure: args.pre_exposure.unwrap_or(0.0),
                voltage_kv: args.voltage.unwrap_or(300.0),
            }),
            defects: (args.hot_pixels.is_some() || args.defects.is_some()).then(|| DefectsReport {
                hot_pixels: args.hot_pixels,
                file: args
                    .defects
                    .as_deref()
                    .map(|f| canonical(f).display().to_string()),
            }),
            patches: args.patches.map(|grid| PatchesReport {
                x: grid.x,
                y: grid.y,
                taper: PatchOptions::default().taper,
                max_fit_rms: PatchOptions::default().max_fit_rms,
            }),
            split_sums: args.split_sums,
            eer: None,
            // `--first-frame 1` alone is every frame, as no flag is.
            frames: (args.first_frame.is_some_and(|f| f > 1) || args.last_frame.is_some()).then(
                || FramesReport {
                    first: args.first_frame.unwrap_or(1) as usize,
                    last: args.last_frame.map(|l| l as usize),
                },
            ),
            power_spectrum: args.ps_grouping.map(|grouping| PowerSpectrumReport {
                grouping: grouping as usize,
                size: args.ps_size.unwrap_or(DEFAULT_PS_SIZE),
            }),
            float16: args.float16,
            stack_group: args.stack_group.unwrap_or(1) as usize,
        }
    }

    /// The settings of `movie`'s results: these, and how `args` render it if it is an EER
    /// movie.
    pub fn for_movie(&self, movie: &Path, args: &Args) -> Settings {
        Settings {
            eer: crate::io::is_eer(movie).then(|| args.eer_rendering()),
            ..self.clone()
        }
    }
}

/// How the movies were exposed, as `--dose-per-frame`, `--pre-exposure` and `--voltage` say.
#[derive(Serialize, Clone)]
pub struct DoseReport {
    /// e/Å² per frame.
    pub per_frame: f64,
    /// e/Å² before the first frame.
    pub pre_exposure: f64,
    pub voltage_kv: f64,
}

impl DoseReport {
    /// The weighting of frames of `pixel_size` Å, from the movie's frame `first` (from 0) on:
    /// the exposure of the frames before it counts too.
    fn weighting(&self, pixel_size: f32, first: usize) -> DoseWeighting {
        DoseWeighting {
            exposure_per_frame: self.per_frame,
            pre_exposure: self.pre_exposure + self.per_frame * first as f64,
            voltage_kv: self.voltage_kv,
            pixel_size: pixel_size as f64,
        }
    }
}

/// The gain reference as the report names it.
#[derive(Serialize, Clone)]
pub struct GainReport {
    pub path: String,
    /// `--gain-rotate`, degrees.
    pub rotate: u16,
    /// `--gain-flip`.
    pub flip: String,
}

/// The JSON report.
#[derive(Serialize)]
struct Report<'a> {
    program: &'static str,
    version: &'static str,
    movie: &'a str,
    settings: &'a Settings,
    /// The movie's pixel size in Å, if known.
    pixel_size: Option<f32>,
    /// The sum's shape (binned by `settings.bin`) and its pixel size (Å, if known).
    sum_shape: [usize; 2],
    sum_pixel_size: Option<f32>,
    frames: usize,
    frame_shape: [usize; 2],
    /// The size the frames were aligned at (smaller where Fourier-cropped by `max_size`, or
    /// to lengths whose transforms are fast).
    alignment_shape: [usize; 2],
    options: OptionsReport,
    iterations: usize,
    /// Whether the passes settled within the tolerance.
    converged: bool,
    /// Frames with nothing to register (blank, or against only blank frames), reported
    /// unmoved with peak 0.
    unregistered_frames: &'a [usize],
    /// The defects replaced in every frame (`--hot-pixels`, `--defects`).
    #[serde(skip_serializing_if = "Option::is_none")]
    defects: Option<DefectCounts>,
    /// The local alignment (`--patches`); the shifts are the whole frames'.
    #[serde(skip_serializing_if = "Option::is_none")]
    local: Option<LocalReport>,
    timing: Timing,
    #[serde(skip_serializing_if = "Option::is_none")]
    rms_error_px: Option<f64>,
    shifts: &'a [crate::output::FrameRow],
}

/// A movie aligned whole, or whole and then patch by patch.
enum Aligned {
    Whole(Alignment),
    Local(Box<LocalAlignment>),
}

/// The local alignment as the report gives it (each patch's drift is in `NAME.patches.csv`).
#[derive(Serialize)]
struct LocalReport {
    /// Patches, and of them those whose passes settled (only those are fitted).
    patches: usize,
    settled: usize,
    /// Whether the model was fitted (the sum follows it), or why not (the sum is the whole
    /// frames').
    fitted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    unfitted_because: Option<String>,
    /// RELION's third-order polynomial: the 18 coefficients of the column shift and of the
    /// row shift, in RELION's order (`rlnMotionModelCoeff`), and the RMS of the fit's
    /// residuals (dy, dx) in pixels.
    #[serde(skip_serializing_if = "Option::is_none")]
    coefficients_x: Option<Vec<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    coefficients_y: Option<Vec<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fit_rms_px: Option<[f64; 2]>,
}

impl LocalReport {
    fn of(local: &LocalAlignment) -> LocalReport {
        let model = local.motion.model();
        LocalReport {
            patches: local.patches.len(),
            settled: local.patches.iter().filter(|p| p.converged).count(),
            fitted: model.is_some(),
            unfitted_because: match &local.motion {
                LocalMotion::Unfitted(reason) => Some(reason.clone()),
                LocalMotion::Fitted(_) => None,
            },
            coefficients_x: model.map(|m| m.coefficients_x.to_vec()),
            coefficients_y: model.map(|m| m.coefficients_y.to_vec()),
            fit_rms_px: model.map(|m| m.rms),
        }
    }
}

/// The options as the report gives them.
fn options_report(options: &AlignOptions) -> OptionsReport {
    OptionsReport {
        reference: format!("{:?}", options.reference).to_lowercase(),
        upsample_factor: options.upsample_factor,
        normalization: format!("{:?}", options.normalization).to_lowercase(),
        bfactor: options.bfactor,
        max_iterations: options.max_iterations,
        tolerance: options.tolerance,
        max_size: options.max_size,
        memory_limit: options.memory_limit,
        taper: options.taper,
        group: options.group,
        target: options.target.name().to_owned(),
    }
}

/// What a report's results depend on: its options but the target and the memory limit, and
/// its settings (null in an earlier version's report).
fn depends_on(report: &serde_json::Value) -> serde_json::Value {
    let mut options = report.get("options").cloned().unwrap_or_default();
    if let Some(options) = options.as_object_mut() {
        options.remove("target");
        options.remove("memory_limit");
    }
    let settings = report.get("settings").cloned().unwrap_or_default();
    serde_json::json!({ "options": options, "settings": settings })
}

/// The values in which `theirs` differs from `ours` (both [`depends_on`]'s), as
/// `options.upsample_factor 20 (now 10)`, or none.
fn differences(theirs: &serde_json::Value, ours: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    fn walk(key: &str, theirs: &Value, ours: &Value, out: &mut Vec<String>) {
        match (theirs, ours) {
            (Value::Object(a), Value::Object(b)) => {
                let keys: std::collections::BTreeSet<_> = a.keys().chain(b.keys()).collect();
                for k in keys {
                    let (a, b) = (&a.get(k), &b.get(k));
                    let null = Value::Null;
                    walk(
                        &format!("{key}.{k}"),
                        a.unwrap_or(&null),
                        b.unwrap_or(&null),
                        out,
                    );
                }
            }
            (Value::Null, Value::Object(_)) if key == ".settings" => {
                out.push("settings none recorded, by an earlier version".to_owned())
            }
            _ if theirs != ours => out.push(format!(
                "{} {} (now {})",
                &key[1..],
                shown(theirs, ours),
                shown(ours, theirs)
            )),
            _ => {}
        }
    }
    // A setting left out of a report: a flag that was off, or an option not given.
    fn shown(value: &Value, other: &Value) -> String {
        match (value, other) {
            (Value::Null, Value::Bool(_)) => "false".to_owned(),
            (Value::Null, _) => "none".to_owned(),
            _ => value.to_string(),
        }
    }
    let mut out = Vec::new();
    walk("", theirs, ours, &mut out);
    (!out.is_empty()).then(|| out.join(", "))
}

#[derive(Serialize)]
struct OptionsReport {
    reference: String,
    upsample_factor: u32,
    normalization: String,
    bfactor: f64,
    max_iterations: usize,
    tolerance: f64,
    max_size: usize,
    memory_limit: usize,
    taper: f64,
    /// Left out at 1, as reports written before it existed have it.
    #[serde(skip_serializing_if = "is_one")]
    group: usize,
    target: String,
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

#[derive(Serialize)]
struct Timing {
    /// Reading and aligning, seconds.
    align_s: f64,
    /// Of which reading the frames (and applying the gain), seconds.
    read_s: f64,
    /// The same per frame, milliseconds.
    per_frame_ms: f64,
    /// Reading the frames again and summing them weighted by their exposure, seconds (with
    /// `--split-sums`, in the same reading as the even and odd sums: the time of both).
    #[serde(skip_serializing_if = "Option::is_none")]
    dose_weighting_s: Option<f64>,
    /// Reading the frames again and summing the even and the odd ones, seconds (with
    /// `--dose-per-frame`, the time of the reading that made the weighted sum too).
    #[serde(skip_serializing_if = "Option::is_none")]
    split_sums_s: Option<f64>,
    /// Reading the frames again, aligning them one by one and writing them, seconds (with
    /// other sums, the time of the reading that made them too).
    #[serde(skip_serializing_if = "Option::is_none")]
    aligned_stack_s: Option<f64>,
    /// Reading the frames again for the power spectrum, seconds (with other sums, the time of
    /// the reading that made them too).
    #[serde(skip_serializing_if = "Option::is_none")]
    power_spectrum_s: Option<f64>,
    /// Finding the defects (reading the frames once more for hot pixels), seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    defects_s: Option<f64>,
    /// Writing the results, seconds.
    write_s: f64,
}

/// Aligns `source` and writes its five results (all or none); `truth`: the true shifts, when
/// known, for the error and the plot.
pub fn align_and_write(
    source: &mut dyn FrameSource,
    meta: &MovieMeta,
    outputs: &OutputPaths,
    options: &AlignOptions,
    truth: Option<&[[f64; 2]]>,
) -> Result<Done> {
    let (ny, nx) = source.frame_shape();
    let n = source.len();
    // The movie's first frame aligned (`--first-frame`), from 0.
    let first = meta
        .frames_of_file
        .as_ref()
        .map_or(0, |(frames, _)| frames.start);
    // The library's messages count the frames from the first aligned.
    let counted = match first {
        0 => String::new(),
        _ => format!(
            " (its frame 0 here is the movie's frame {first}: --first-frame {})",
            first + 1
        ),
    };
    let sum_shape = binned_shape((ny, nx), meta.settings.bin)?;
    // Known before aligning, so that a movie that cannot be weighted fails at once.
    let known_pixel_size = |flag: &str| match meta.pixel_size {
        // Writers that know no pixel size put 1 Å in an MRC header.
        Some(1.0) if meta.settings.pixel_size.is_none() => bail!(
            "{}: {flag} needs the frames' pixel size, and the movie's header says 1 Å, which \
             writers put where they know none: pass --pixel-size (1 if it is)",
            meta.movie
        ),
        Some(pixel_size) => Ok(pixel_size),
        None => bail!(
            "{}: {flag} needs the frames' pixel size, which {}: pass --pixel-size",
            meta.movie,
            match Path::new(&meta.report_name).is_file() {
                true => "the movie's header does not give",
                false => "the built-in movie has none",
            }
        ),
    };
    let dose = match &meta.settings.dose {
        Some(dose) => Some(dose.weighting(known_pixel_size("--dose-per-frame")?, first)),
        None => None,
    };
    // With the pixel size, and the spectrum's size checked against the sum's.
    let power_spectrum = match meta.settings.power_spectrum {
        Some(ps) => {
            let pixel_size = known_pixel_size("--ps-grouping")? as f64;
            PowerSpectrumGeometry::of(nx, sum_shape, pixel_size, ps.size)
                .with_context(|| meta.movie.clone())?;
            Some((ps, pixel_size))
        }
        None => None,
    };
    let start = Instant::now();
    let mut source = TimedReads {
        source,
        spent: Duration::ZERO,
    };
    let aligned = match &meta.settings.patches {
        None => align_movie(&mut source, options).map(Aligned::Whole),
        Some(patches) => align_patches(&mut source, &patches.options(options))
            .map(|l| Aligned::Local(Box::new(l))),
    }
    .map_err(crate::cli::name_the_flag)
    .with_context(|| format!("{}: alignment failed{counted}", meta.movie))?;
    let (alignment, local, aligned_sum) = match &aligned {
        Aligned::Whole(a) => (a, None, &a.sum),
        Aligned::Local(l) => (&l.global, Some(&**l), &l.sum),
    };
    let align_s = start.elapsed().as_secs_f64();
    let read_s = source.spent.as_secs_f64();
    let rows = frame_rows(&alignment.shifts, &alignment.peaks, truth, first);
    let unregistered_frames: Vec<usize> = alignment
        .unregistered_frames()
        .into_iter()
        .map(|i| first + i)
        .collect();
    let rms_error = truth.map(|t| rms_error(&alignment.shifts, t));
    let written = Instant::now();
    let mut staging = Staging::default();
    staging.write(&outputs.csv, |w| write_csv(w, &rows))?;
    if let Some(local) = local {
        staging.write(&outputs.patches, |w| write_patches_csv(w, local, first))?;
        staging.write(&outputs.patches_png, |w| {
            write_patch_plot(w, &meta.title, local, (ny, nx))
        })?;
    }
    let sum = fourier_crop(aligned_sum.view(), sum_shape)?;
    // The binned pixel's size: the frame's width over the sum's.
    let pixel_size = meta.pixel_size.map(|p| p * nx as f32 / sum_shape.1 as f32);
    // The sums' and the stack's (`--float16`).
    let precision = match meta.settings.float16 {
        true => Precision::Float16,
        false => Precision::Float32,
    };
    let write_sum = |w: &mut _, image: ArrayView2<'_, f32>, label: &str| {
        write_mrc_in(w, image, pixel_size.unwrap_or(1.0), label, precision)
    };
    staging.write(&outputs.mrc, |w| {
        write_sum(
            w,
            sum.view(),
            &format!("ufunc phase_correlation: aligned sum of {n} frames"),
        )
    })?;
    staging.write(&outputs.png, |w| write_preview(w, sum.view()))?;
    // The sums besides the aligned one, and the aligned stack, from one more reading of the
    // frames for all of them.
    let summing = Instant::now();
    let target = options.target;
    let split = meta.settings.split_sums;
    let passes: Vec<&str> = [
        (dose.is_some(), "dose weighting"),
        (split, "the even and odd sums"),
        (meta.aligned_stack, "the aligned stack"),
        (power_spectrum.is_some(), "the power spectrum"),
    ]
    .into_iter()
    .filter_map(|(asked, pass)| asked.then_some(pass))
    .collect();
    let failed = || format!("{}: {} failed{counted}", meta.movie, passes.join(" and "));
    let wanted = SumsWanted {
        dose: dose.as_ref(),
        halves: split,
        spectrum_group: power_spectrum.map(|(ps, _)| ps.grouping),
    };
    let sums = |frames: &mut dyn FrameSource, shifts: &[[f64; 2]]| {
        aligned_sums(frames, shifts, &wanted, target)
    };
    let AlignedSums {
        weighted,
        halves,
        spectrum,
    } = if meta.aligned_stack {
        let mut pass = None;
        let written = staging.write(&outputs.stack, |w| {
            let group = meta.settings.stack_group;
            let grouped = match group {
                1 => String::new(),
                _ => format!(", in sums of {group}"),
            };
            let label = format!(
                "ufunc phase_correlation: frames {} to {} aligned{grouped}",
                first + 1,
                first + n
            );
            let mut stack = MrcStackWriter::new(
                w,
                sum_shape,
                n.div_ceil(group),
                precision,
                pixel_size.unwrap_or(1.0),
                &label,
            )?;
            let summed = corrected(&mut source, alignment, local, target)
                .map_err(crate::cli::name_the_flag)
                .and_then(|mut frames| {
                    let mut stacking = Stacking::new(&mut frames, &mut stack, sum_shape, group);
                    let summed = if passes.len() == 1 {
                        read_through(&mut stacking).map(|()| AlignedSums::default())
                    } else {
                        sums(&mut stacking, &vec![[0.0; 2]; n]).map_err(crate::cli::name_the_flag)
                    };
                    // A frame that could not be written stopped the reading: that is the error.
                    match stacking.failure {
                        Some(failure) => Err(failure),
                        None => summed,
                    }
                });
            let finished = summed.is_ok();
            pass = Some(summed);
            match finished {
                true => stack.finish().map(|_| ()),
                // Not synced: the staging removes it.
                false => bail!("the aligned stack was not finished"),
            }
        });
        match pass {
            Some(Err(e)) => return Err(e.context(failed())),
            Some(Ok(sums)) => written.map(|()| sums)?,
            None => return Err(written.expect_err("no pass without an error")),
        }
    } else if passes.is_empty() {
        AlignedSums::default()
    } else {
        as_aligned(&mut source, alignment, local, target, sums)
            .map_err(crate::cli::name_the_flag)
            .with_context(failed)?
    };
    let summing_s = summing.elapsed().as_secs_f64();
    if let Some(weighted) = weighted {
        let weighted = fourier_crop(weighted.view(), sum_shape)?;
        staging.write(&outputs.mrc_dw, |w| {
            let label = format!("ufunc phase_correlation: dose-weighted sum of {n} frames");
            write_sum(w, weighted.view(), &label)
        })?;
    }
    if let Some([even, odd]) = halves {
        for (half, path, which) in [
            (even, &outputs.mrc_even, "even"),
            (odd, &outputs.mrc_odd, "odd"),
        ] {
            let half = fourier_crop(half.view(), sum_shape)?;
            staging.write(path, |w| {
                let label = format!("ufunc phase_correlation: aligned sum of the {which} frames");
                write_sum(w, half.view(), &label)
            })?;
        }
    }
    let dose_weighting_s = dose.is_some().then_some(summing_s);
    let split_sums_s = meta.settings.split_sums.then_some(summing_s);
    let aligned_stack_s = meta.aligned_stack.then_some(summing_s);
    let power_spectrum_s = power_spectrum.is_some().then_some(summing_s);
    if let Some((ps, pixel_size)) = power_spectrum {
        let spectrum = spectrum.context("the reading made no power spectrum")?;
        let written = relion_power_spectrum(spectrum.view(), sum_shape, pixel_size, ps.size)
            .with_context(|| format!("{}: the power spectrum failed", meta.movie))?;
        staging.write(&outputs.power_spectrum, |w| {
            let label = format!(
                "ufunc phase_correlation: power spectrum, groups of {} frames",
                ps.grouping
            );
            let pixel_size = written.pixel_size as f32;
            crate::io::mrc::write_mrc(w, written.image.view(), pixel_size, &label)
        })?;
    }
    staging.write(&outputs.drift, |w| {
        write_drift_plot(
            w,
            &format!("{}: shift per frame", meta.title),
            &alignment.shifts,
            truth,
            first,
        )
    })?;
    let timing = |write_s| Timing {
        align_s,
        read_s,
        per_frame_ms: 1e3 * align_s / n as f64,
        dose_weighting_s,
        split_sums_s,
        aligned_stack_s,
        power_spectrum_s,
        defects_s: meta.defects.as_ref().map(|d| d.seconds),
        write_s,
    };
    let report = Report {
        program: "ufunc phase_correlation",
        version: env!("CARGO_PKG_VERSION"),
        movie: &meta.report_name,
        settings: &meta.settings,
        pixel_size: meta.pixel_size,
        sum_shape: [sum_shape.0, sum_shape.1],
        sum_pixel_size: pixel_size,
        frames: n,
        frame_shape: [ny, nx],
        alignment_shape: [alignment.alignment_shape.0, alignment.alignment_shape.1],
        options: options_report(options),
        iterations: alignment.iterations,
        converged: alignment.converged,
        unregistered_frames: &unregistered_frames,
        defects: meta.defects.as_ref().map(|d| d.counts),
        local: local.map(LocalReport::of),
        timing: timing(written.elapsed().as_secs_f64() - summing_s),
        rms_error_px: rms_error,
        shifts: &rows,
    };
    staging.write(&outputs.json, |w| write_json(w, &report))?;
    // Before the new results replace the old: a weighted sum left beside them would be of
    // other shifts, and a rerun without the exposure would skip on them.
    if meta.relion_star {
        let general = StarGeneral {
            frame_shape: (ny, nx),
            frames_of_movie: meta.frames_of_file.clone().unwrap_or((0..n, n)),
            movie: &meta.report_name,
            gain: meta.settings.gain.as_ref().map(|g| g.path.as_str()),
            defect_file: meta
                .settings
                .defects
                .as_ref()
                .and_then(|d| d.file.as_deref()),
            hot_pixels: meta.defects.as_ref().map_or(&[], |d| &d.hot),
            binning: meta.settings.bin,
            eer: meta.settings.eer,
            pixel_size: meta.pixel_size,
            dose: meta
                .settings
                .dose
                .as_ref()
                .map(|d| (d.per_frame, d.pre_exposure, d.voltage_kv)),
            local,
        };
        staging.write(&outputs.star, |w| write_relion_star(w, &general, &rows))?;
    } else {
        OutputPaths::remove_stale(&outputs.star)?;
    }
    if dose.is_none() {
        OutputPaths::remove_stale(&outputs.mrc_dw)?;
    }
    if !meta.settings.split_sums {
        OutputPaths::remove_stale(&outputs.mrc_even)?;
        OutputPaths::remove_stale(&outputs.mrc_odd)?;
    }
    if !meta.aligned_stack {
        OutputPaths::remove_stale(&outputs.stack)?;
    }
    if power_spectrum.is_none() {
        OutputPaths::remove_stale(&outputs.power_spectrum)?;
    }
    if local.is_none() {
        OutputPaths::remove_stale(&outputs.patches)?;
        OutputPaths::remove_stale(&outputs.patches_png)?;
    }
    staging.commit()?;
    let max_shift = alignment
        .shifts
        .iter()
        .map(|s| s[0].hypot(s[1]))
        .fold(0.0, f64::max);
    Ok(Done {
        frames: n,
        shape: (ny, nx),
        align_s,
        read_s,
        iterations: alignment.iterations,
        converged: alignment.converged,
        unregistered_frames,
        max_shift,
        rms_error,
        local: local.map(|l| {
            let settled = l.patches.iter().filter(|p| p.converged).count();
            match &l.motion {
                LocalMotion::Fitted(model) => Ok(format!(
                    "local model of {settled} of {} patches settled, fit rms {:.2} px (dy), \
                     {:.2} px (dx)",
                    l.patches.len(),
                    model.rms[0],
                    model.rms[1]
                )),
                LocalMotion::Unfitted(reason) => Err(reason.clone()),
            }
        }),
    })
}

/// `sum` of the frames of `source` at the shifts that align them: the whole-frame shifts, or,
/// with a local alignment, its corrected frames at shifts of 0 (moved as it moves them, and
/// no further).
fn as_aligned<T>(
    source: &mut dyn FrameSource,
    alignment: &Alignment,
    local: Option<&LocalAlignment>,
    target: ufunc::Target,
    sum: impl FnOnce(&mut dyn FrameSource, &[[f64; 2]]) -> ufunc::Result<T>,
) -> ufunc::Result<T> {
    match local {
        None => sum(source, &alignment.shifts),
        Some(_) => {
            let none = vec![[0.0; 2]; source.len()];
            sum(&mut corrected(source, alignment, local, target)?, &none)
        }
    }
}

/// The frames of `source` as aligned: moved by their whole-frame shifts, and by the local
/// model where there is one.
fn corrected<'a>(
    source: &'a mut dyn FrameSource,
    alignment: &'a Alignment,
    local: Option<&'a LocalAlignment>,
    target: ufunc::Target,
) -> ufunc::Result<CorrectedFrames<'a, dyn FrameSource + 'a>> {
    match local {
        Some(local) => local.corrected(source, target),
        None => alignment.corrected(source, target),
    }
}

/// Reads every frame of `frames` once, for a [`Stacking`] source to write them.
fn read_through(frames: &mut dyn FrameSource) -> Result<()> {
    let mut frame = Array2::zeros(frames.frame_shape());
    for i in 0..frames.len() {
        frames
            .read_frame(i, frame.view_mut())
            .map_err(|e| anyhow::anyhow!(e))?;
    }
    Ok(())
}

/// A frame source that writes every frame it reads, Fourier-cropped to `shape` (`--bin`),
/// into the aligned stack, or the sums of `group` consecutive frames (`--stack-group`; the
/// frames read in order, as the sums read them); where that fails, the reading fails and
/// `failure` says why.
struct Stacking<'a, W: std::io::Write + std::io::Seek> {
    frames: &'a mut dyn FrameSource,
    stack: &'a mut MrcStackWriter<W>,
    shape: (usize, usize),
    group: usize,
    /// The sum of the current group's frames read so far.
    sum: Array2<f32>,
    /// The frame the group's sum expects next.
    next: usize,
    failure: Option<anyhow::Error>,
}

impl<'a, W: std::io::Write + std::io::Seek> Stacking<'a, W> {
    fn new(
        frames: &'a mut dyn FrameSource,
        stack: &'a mut MrcStackWriter<W>,
        shape: (usize, usize),
        group: usize,
    ) -> Self {
        let sum = match group {
            1 => Array2::zeros((0, 0)),
            _ => Array2::zeros(shape),
        };
        Stacking {
            frames,
            stack,
            shape,
            group,
            sum,
            next: 0,
            failure: None,
        }
    }

    /// Writes frame `index` (binned), or adds it to its group's sum and writes the sum when the
    /// group is complete.
    fn write(&mut self, index: usize, frame: ArrayView2<'_, f32>) -> Result<()> {
        let cropped;
        let binned = match frame.dim() == self.shape {
            true => frame,
            false => {
                cropped = fourier_crop(frame, self.shape)?;
                cropped.view()
            }
        };
        if self.group == 1 {
            return self.stack.write_frame(index, binned);
        }
        if index != self.next {
            bail!(
                "frame {index} read where the groups' sums need frame {}",
                self.next
            );
        }
        self.next += 1;
        self.sum += &binned;
        let last = index + 1 == self.frames.len();
        if (index + 1) % self.group == 0 || last {
            self.stack
                .write_frame(index / self.group, self.sum.view())?;
            self.sum.fill(0.0);
        }
        Ok(())
    }
}

impl<W: std::io::Write + std::io::Seek> FrameSource for Stacking<'_, W> {
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
        self.frames.read_frame(index, out.view_mut())?;
        if let Err(e) = self.write(index, out.view()) {
            let what = match self.group {
                1 => format!("frame {index}"),
                g => format!("frame {index}'s sum (of frames from {})", index / g * g),
            };
            self.failure = Some(e.context(format!("cannot write {what} to the aligned stack")));
            return Err("the aligned stack could not be written".into());
        }
        Ok(())
    }
}

/// A frame source that keeps the time spent reading, so that the report can tell reading
/// from aligning.
struct TimedReads<'a> {
    source: &'a mut dyn FrameSource,
    spent: Duration,
}

impl FrameSource for TimedReads<'_> {
    fn frame_shape(&self) -> (usize, usize) {
        self.source.frame_shape()
    }
    fn len(&self) -> usize {
        self.source.len()
    }
    fn read_frame(
        &mut self,
        index: usize,
        out: ArrayViewMut2<'_, f32>,
    ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let start = Instant::now();
        let read = self.source.read_frame(index, out);
        self.spent += start.elapsed();
        read
    }
}

/// What the alignment with `options` keeps in memory, for the log line naming a movie's
/// frames: "; spectra 1425 MiB kept in memory" (in the device's with `--target cuda`), or
/// where they exceed the memory limit that every pass reads the movie again.
fn describe_memory(memory: SpectraMemory, options: &AlignOptions) -> String {
    use crate::memory::mib;
    let kept_in = match options.target {
        ufunc::Target::Cuda => "device memory",
        _ => "memory",
    };
    match memory {
        SpectraMemory::OnePass => String::new(),
        SpectraMemory::Kept(bytes) => format!("; spectra {} kept in {kept_in}", mib(bytes)),
        SpectraMemory::Streamed(bytes) => format!(
            "; spectra {} over --memory-limit {}: every pass reads the movie again",
            mib(bytes),
            mib(options.memory_limit as u128)
        ),
    }
}

/// The root-mean-square distance between measured and true shifts, in pixels.
pub fn rms_error(measured: &[[f64; 2]], truth: &[[f64; 2]]) -> f64 {
    let n = measured.len().min(truth.len()).max(1) as f64;
    let sum: f64 = measured
        .iter()
        .zip(truth)
        .map(|(m, t)| (m[0] - t[0]).powi(2) + (m[1] - t[1]).powi(2))
        .sum();
    (sum / n).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::Status;
    use clap::Parser;

    fn fixture(name: &str) -> String {
        format!("{}/tests/fixtures/movie/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    /// A fresh, empty folder under the system's temporary folder.
    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ufunc-run-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn run_with(out: &Path, movies: &[String], extra: &[&str]) -> Summary {
        let mut argv = vec![
            "phase_correlation".to_owned(),
            "--out".into(),
            out.display().to_string(),
        ];
        argv.extend(movies.iter().cloned());
        argv.extend(extra.iter().map(|s| s.to_string()));
        run(&Args::parse_from(argv), Progress::Quiet).unwrap()
    }

    /// Every frame of an MRC file the program wrote, and its header's pixel size.
    fn read_mrc(path: &Path) -> (ndarray::Array3<f32>, Option<f32>) {
        let mut movie = Movie::open(path).unwrap();
        (movie.read_all().unwrap(), movie.pixel_size())
    }

    /// A synthetic drifting movie written to `dir/NAME.npy`, and the argument naming it.
    fn npy_movie(
        dir: &Path,
        name: &str,
        options: crate::synth::SynthOptions,
    ) -> (crate::synth::SynthMovie, [String; 1]) {
        let synth = crate::synth::synth_movie(&options);
        let path = dir.join(format!("{name}.npy"));
        ndarray_npy::write_npy(&path, &synth.frames).unwrap();
        (synth, [path.display().to_string()])
    }

    /// The error of the first movie of `summary`, which must have failed.
    fn failure(summary: &Summary) -> String {
        match &summary.outcomes[0].status {
            Status::Failed(error) => error.clone(),
            _ => panic!("not failed"),
        }
    }

    fn statuses(summary: &Summary) -> Vec<(String, &'static str)> {
        summary
            .outcomes
            .iter()
            .map(|o| {
                let name = o.movie.file_name().unwrap().to_string_lossy().into_owned();
                let status = match o.status {
                    Status::Done(_) => "done",
                    Status::Skipped => "skipped",
                    Status::Failed(_) => "failed",
                };
                (name, status)
            })
            .collect()
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_log_says_what_the_alignment_keeps_in_memory() {
        let options = AlignOptions {
            memory_limit: 2 << 30,
            ..Default::default()
        };
        // 89 frames of 2048 x 2048 (the seed job) fit; 40 of a K3's 4092 x 5760 do not.
        let seed = options.spectra_memory(89, (2048, 2048));
        assert_eq!(seed, SpectraMemory::Kept(89 * 2048 * 1025 * 8));
        let line = describe_memory(seed, &options);
        assert_eq!(line, "; spectra 1425 MiB kept in memory");
        let cuda = AlignOptions {
            target: ufunc::Target::Cuda,
            ..options
        };
        let line = describe_memory(cuda.spectra_memory(89, (2048, 2048)), &cuda);
        assert_eq!(line, "; spectra 1425 MiB kept in device memory");
        let k3 = options.spectra_memory(40, (4092, 5760));
        assert_eq!(
            describe_memory(k3, &options),
            "; spectra 2559 MiB over --memory-limit 2048 MiB: every pass reads the movie again"
        );
        let first = AlignOptions {
            reference: ufunc::registration::Reference::First,
            ..options
        };
        assert_eq!(
            first.spectra_memory(89, (2048, 2048)),
            SpectraMemory::OnePass
        );
        assert_eq!(describe_memory(SpectraMemory::OnePass, &first), "");
    }

    #[test]
    fn a_batch_writes_results_skips_them_on_rerun_and_rewrites_them_with_force() {
        let out = temp_dir("batch");
        let movies: Vec<String> = [
            "movie_u16.npy",
            "bad_mode.mrc",
            "movie_mode1.mrc",
            "movie_u8_lzw.tif",
        ]
        .iter()
        .map(|m| fixture(m))
        .collect();
        let first = run_with(&out, &movies, &["--upsample", "10"]);
        assert_eq!(
            statuses(&first),
            [
                ("movie_u16.npy".into(), "done"),
                ("bad_mode.mrc".into(), "failed"),
                ("movie_mode1.mrc".into(), "done"),
                ("movie_u8_lzw.tif".into(), "done"),
            ]
        );
        let Status::Failed(error) = &first.outcomes[1].status else {
            unreachable!()
        };
        assert!(
            error.contains("bad_mode.mrc") && error.contains("unknown MRC mode 7"),
            "{error}"
        );
        // Five results per good movie, nothing (not even a temporary file) for the bad one.
        let written = files(&out);
        assert_eq!(written.len(), 15, "{written:?}");
        assert!(
            written
                .iter()
                .all(|f| !f.starts_with("bad_mode") && !f.starts_with('.')),
            "{written:?}"
        );
        for name in ["movie_u16", "movie_mode1", "movie_u8_lzw"] {
            assert!(OutputPaths::new(&out, name).complete(), "{name}");
        }
        // The same frames in two formats give the same shifts.
        let csv =
            |name: &str| std::fs::read_to_string(out.join(format!("{name}.shifts.csv"))).unwrap();
        assert_eq!(csv("movie_u16"), csv("movie_mode1"));
        assert!(csv("movie_u16").starts_with("frame,dy,dx,peak,step\n0,0.0000,0.0000,"));
        assert_eq!(csv("movie_u16").lines().count(), 4);
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join("movie_u16.shifts.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(json["frames"], 3);
        assert_eq!(json["options"]["upsample_factor"], 10);
        assert_eq!(json["shifts"].as_array().unwrap().len(), 3);

        // A rerun skips the finished movies (their files untouched) and fails the bad one again.
        let csv_path = out.join("movie_u16.shifts.csv");
        std::fs::write(&csv_path, "kept\n").unwrap();
        let again = run_with(&out, &movies, &["--upsample", "10"]);
        assert_eq!(
            statuses(&again).iter().map(|s| s.1).collect::<Vec<_>>(),
            ["skipped", "failed", "skipped", "skipped"]
        );
        assert_eq!(std::fs::read_to_string(&csv_path).unwrap(), "kept\n");
        assert_eq!((again.done(), again.skipped(), again.failed()), (0, 3, 1));
        // A rerun with other settings does not skip on these results, nor overwrite them: it
        // fails saying what differs (it skipped, its results then not what it was asked for).
        // The target and the memory limit change how results are made, not what they are.
        let other = run_with(&out, &movies, &["--bin", "2", "--memory-limit", "1"]);
        assert_eq!((other.done(), other.skipped(), other.failed()), (0, 0, 4));
        let Status::Failed(error) = &other.outcomes[0].status else {
            unreachable!()
        };
        assert!(
            error.contains("its results movie_u16.* in ",)
                && error.contains(
                    " were made with other settings (options.upsample_factor 10 (now 20), \
                 settings.bin 1.0 (now 2.0)); they are left as they are (--force redoes them)"
                ),
            "{error}"
        );
        assert_eq!(std::fs::read_to_string(&csv_path).unwrap(), "kept\n");
        let cpu = run_with(&out, &movies, &["--upsample", "10", "--target", "cpu"]);
        assert_eq!(cpu.skipped(), 3);
        // An earlier version's report, which recorded no settings (and read TIFFs top-down).
        let json_path = out.join("movie_u16.shifts.json");
        let mut report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
        report.as_object_mut().unwrap().remove("settings");
        std::fs::write(&json_path, report.to_string()).unwrap();
        let old = run_with(&out, &movies[..1], &["--upsample", "10"]);
        let Status::Failed(error) = &old.outcomes[0].status else {
            unreachable!()
        };
        assert!(
            error.contains("other settings (settings none recorded, by an earlier version)"),
            "{error}"
        );

        // --force rewrites them.
        let forced = run_with(&out, &movies, &["--force"]);
        assert_eq!((forced.done(), forced.failed()), (3, 1));
        assert!(std::fs::read_to_string(&csv_path)
            .unwrap()
            .starts_with("frame,"));
        let mut table = Vec::new();
        forced.print(&mut table).unwrap();
        let table = String::from_utf8(table).unwrap();
        assert!(
            table.contains("FAILED") && table.contains("3 done, 0 skipped, 1 failed"),
            "{table}"
        );
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn shards_split_the_sorted_movies_between_jobs() {
        let out = temp_dir("shard");
        let pattern = vec![fixture("movie_mode*.mrc")];
        let all = find_movies(&pattern).unwrap();
        let names: Vec<_> = all
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "movie_mode0.mrc",
                "movie_mode1.mrc",
                "movie_mode12.mrc",
                "movie_mode1_be.mrc",
                "movie_mode2.mrc",
                "movie_mode6.mrc"
            ]
        );
        let shard = run_with(&out, &pattern, &["--shard", "1/4", "--upsample", "1"]);
        assert_eq!(
            statuses(&shard),
            [
                ("movie_mode1.mrc".into(), "done"),
                ("movie_mode6.mrc".into(), "done")
            ]
        );
        assert_eq!(files(&out).len(), 10);
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn inputs_are_files_folders_and_globs() {
        let folder = find_movies(&[format!(
            "{}/tests/fixtures/movie",
            env!("CARGO_MANIFEST_DIR")
        )])
        .unwrap();
        assert!(folder.len() > 30 && folder.windows(2).all(|w| w[0] < w[1]));
        let twice = find_movies(&[fixture("movie_u16.npy"), fixture("movie_u16.npy")]).unwrap();
        assert_eq!(twice.len(), 1);
        // The same file spelled two ways is one movie too.
        let dotted = fixture("movie_u16.npy").replace("/movie/", "/movie/../movie/");
        let twice = find_movies(&[fixture("movie_u16.npy"), dotted]).unwrap();
        assert_eq!(twice.len(), 1);
        let err = find_movies(&[fixture("nothing_*.mrc")]).unwrap_err();
        assert!(err.to_string().contains("no movie matches"), "{err}");
        // A folder without movies is an error, as a glob matching none is.
        let err = find_movies(&[format!("{}/tests/ui", env!("CARGO_MANIFEST_DIR"))]).unwrap_err();
        assert!(err.to_string().contains("no movie in the folder"), "{err}");
    }

    /// Two movies of one stem beside each other write the same results: the second fails
    /// saying so, however its folder is spelled (it was "skipped", on the first's results).
    #[test]
    fn movies_of_one_stem_in_one_folder_do_not_share_results() {
        let dir = temp_dir("stem");
        std::fs::copy(fixture("movie_u16.npy"), dir.join("a.npy")).unwrap();
        std::fs::copy(fixture("movie_mode1.mrc"), dir.join("a.mrc")).unwrap();
        let argv = [
            "phase_correlation".to_owned(),
            dir.join("a.npy").display().to_string(),
            dir.join("..")
                .join(dir.file_name().unwrap())
                .join("a.mrc")
                .display()
                .to_string(),
        ];
        let summary = run(&Args::parse_from(argv), Progress::Quiet).unwrap();
        assert_eq!(
            statuses(&summary),
            [("a.npy".into(), "done"), ("a.mrc".into(), "failed")]
        );
        let Status::Failed(error) = &summary.outcomes[1].status else {
            unreachable!()
        };
        assert!(
            error.contains("another movie of this batch already writes a.*"),
            "{error}"
        );
        // Into an `--out` folder that the first movie's results make.
        let (one, two) = (dir.join("one"), dir.join("two"));
        std::fs::create_dir(&one).unwrap();
        std::fs::create_dir(&two).unwrap();
        std::fs::rename(dir.join("a.npy"), one.join("a.npy")).unwrap();
        std::fs::rename(dir.join("a.mrc"), two.join("a.mrc")).unwrap();
        let movies = [one.join("a.npy"), two.join("a.mrc")].map(|p| p.display().to_string());
        let summary = run_with(&dir.join("new"), &movies, &[]);
        assert_eq!(
            statuses(&summary),
            [("a.npy".into(), "done"), ("a.mrc".into(), "failed")]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A movie run alone into an `--out` that holds the results of another movie of its name
    /// (`one/a.npy`'s, then `two/a.mrc`) is not skipped on them ("skipped" it was, reported
    /// finished with another movie's shifts), nor does it overwrite them unasked: it fails
    /// naming both. The movie itself, however spelled, is still skipped; `--force` overwrites.
    #[test]
    fn results_of_another_movie_of_the_same_name_are_not_taken_for_this_ones() {
        let dir = temp_dir("owner");
        let (one, two, out) = (dir.join("one"), dir.join("two"), dir.join("out"));
        std::fs::create_dir(&one).unwrap();
        std::fs::create_dir(&two).unwrap();
        std::fs::copy(fixture("movie_u16.npy"), one.join("a.npy")).unwrap();
        std::fs::copy(fixture("movie_mode1.mrc"), two.join("a.mrc")).unwrap();
        let (npy, mrc) = (one.join("a.npy"), two.join("a.mrc"));
        let alone = |movie: &Path, extra: &[&str]| {
            let summary = run_with(&out, &[movie.display().to_string()], extra);
            match &summary.outcomes[0].status {
                Status::Done(_) => "done".to_owned(),
                Status::Skipped => "skipped".to_owned(),
                Status::Failed(error) => error.clone(),
            }
        };
        let owner = || OutputPaths::new(&out, "a").movie().unwrap();
        assert_eq!(alone(&npy, &["--upsample", "1"]), "done");
        let shifts = std::fs::read(out.join("a.shifts.csv")).unwrap();
        let error = alone(&mrc, &[]);
        assert!(
            error.starts_with(&format!(
                "{}: the results a.* in {} are those of another movie, {}; they are left",
                mrc.display(),
                out.display(),
                canonical(&npy).display()
            )) && error.contains("--force overwrites them"),
            "{error}"
        );
        assert_eq!(owner(), canonical(&npy).display().to_string());
        assert_eq!(std::fs::read(out.join("a.shifts.csv")).unwrap(), shifts);
        // The movie that wrote them is skipped, spelled as then or otherwise.
        assert_eq!(alone(&npy, &["--upsample", "1"]), "skipped");
        assert_eq!(
            alone(
                &one.join("..").join("one").join("a.npy"),
                &["--upsample", "1"]
            ),
            "skipped"
        );
        // --force overwrites them, and they are the other movie's then.
        assert_eq!(alone(&mrc, &["--force", "--upsample", "1"]), "done");
        assert_eq!(owner(), canonical(&mrc).display().to_string());
        assert_eq!(alone(&mrc, &["--upsample", "1"]), "skipped");
        // Results whose report names no movie are not skipped on either.
        std::fs::write(out.join("a.shifts.json"), "{}\n").unwrap();
        let error = alone(&mrc, &[]);
        assert!(
            error.contains("cannot tell whose results a.* in")
                && error.contains("a.shifts.json names no movie"),
            "{error}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `path` (absolute) spelled relative to the current folder, through the root
    /// (`../../tmp/x`).
    fn relative_to_current_folder(path: &Path) -> PathBuf {
        use std::path::Component::Normal;
        let names = |p: &Path| -> Vec<PathBuf> {
            p.components()
                .filter_map(|c| match c {
                    Normal(name) => Some(PathBuf::from(name)),
                    _ => None,
                })
                .collect()
        };
        let up = names(&std::env::current_dir().unwrap()).len();
        let mut relative: PathBuf = std::iter::repeat_n(PathBuf::from(".."), up).collect();
        relative.extend(names(path));
        relative
    }

    /// A report names its movie by the canonical path, whatever spelling the run was given:
    /// it named it as given (`../../tmp/d/a.npy`), relative to a folder that a rerun started
    /// elsewhere does not know, so that rerun took the movie's own results for another's.
    #[test]
    fn a_report_names_its_movie_the_same_from_any_folder() {
        let dir = temp_dir("spelling");
        std::fs::copy(fixture("movie_u16.npy"), dir.join("a.npy")).unwrap();
        let movie = relative_to_current_folder(&dir.join("a.npy"));
        assert!(
            movie.is_relative() && movie.is_file(),
            "{}",
            movie.display()
        );
        let out = dir.join("out");
        let first = run_with(&out, &[movie.display().to_string()], &["--upsample", "1"]);
        assert_eq!(first.done(), 1);
        let owner = OutputPaths::new(&out, "a").movie().unwrap();
        assert_eq!(
            owner,
            dir.join("a.npy")
                .canonicalize()
                .unwrap()
                .display()
                .to_string()
        );
        // Skipped however the rerun spells the movie, and another movie's results are not.
        for spelled in [
            movie.clone(),
            dir.join("a.npy"),
            dir.join("..").join(dir.file_name().unwrap()).join("a.npy"),
        ] {
            assert!(
                same_movie(&owner, &spelled).unwrap(),
                "{}",
                spelled.display()
            );
        }
        let other = fixture("movie_u16.npy");
        assert!(!same_movie(&owner, Path::new(&other)).unwrap());
        assert_eq!(
            run_with(&out, &[movie.display().to_string()], &["--upsample", "1"]).skipped(),
            1
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A movie whose path is no UTF-8: its report names it with replacement characters, which
    /// name no file, and a rerun took the results for another movie's.
    #[test]
    fn a_movie_whose_path_is_no_utf8_skips_its_results() {
        use std::os::unix::ffi::OsStrExt;
        let dir = temp_dir("latin1");
        // Given by its folder: the arguments themselves are text.
        let folder = dir.join("movies");
        std::fs::create_dir(&folder).unwrap();
        let movie = folder.join(std::ffi::OsStr::from_bytes(b"caf\xe9.npy"));
        std::fs::copy(fixture("movie_u16.npy"), &movie).unwrap();
        let (out, folder) = (dir.join("out"), vec![folder.display().to_string()]);
        assert_eq!(run_with(&out, &folder, &["--upsample", "1"]).done(), 1);
        let owner = OutputPaths::new(&out, &movie_name(&movie)).movie().unwrap();
        assert!(owner.contains('\u{fffd}'), "{owner}");
        assert!(same_movie(&owner, &movie).unwrap());
        assert!(!same_movie(&owner, Path::new(&fixture("movie_u16.npy"))).unwrap());
        assert_eq!(run_with(&out, &folder, &["--upsample", "1"]).skipped(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A report whose movie is no file: a movie removed since is told by its absolute path;
    /// a relative path (of an older version, from a folder the report does not say) cannot be
    /// told from another movie's, so the rerun fails without overwriting.
    #[test]
    fn a_movie_that_is_no_file_is_told_by_its_absolute_path_or_not_at_all() {
        let dir = temp_dir("gone");
        let gone = dir.join("gone.npy");
        let absolute = gone.display().to_string();
        assert!(same_movie(&absolute, &gone).unwrap());
        assert!(!same_movie(&absolute, &dir.join("other.npy")).unwrap());
        for path in [&gone, Path::new("gone.npy")] {
            let e = same_movie("gone.npy", path).unwrap_err().to_string();
            assert!(
                e.contains("names the movie gone.npy, relative to the folder"),
                "{e}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_rerun_over_a_folder_skips_its_results_and_its_gain() {
        // Results beside the movies (no `--out`), and the gain kept there too: neither is
        // taken for a movie, by the folder or by a glob over it: an MRC gain, a DM4 one as
        // SerialEM keeps beside its movies, or a TIFF.
        for gain_name in ["gain.mrc", "gain.dm4", "gain.tif"] {
            let dir = temp_dir("rerun");
            for name in ["movie_u16.npy", gain_name] {
                std::fs::copy(fixture(name), dir.join(name)).unwrap();
            }
            // The gain spelled the long way round: the report names it by its canonical path.
            let gain = dir.join(".").join(gain_name).display().to_string();
            let folder = dir.display().to_string();
            let glob = format!("{folder}/*");
            let run_on = |input: &str| {
                let argv = [
                    "phase_correlation",
                    input,
                    "--gain",
                    &gain,
                    "--upsample",
                    "1",
                ];
                statuses(&run(&Args::parse_from(argv), Progress::Quiet).unwrap())
            };
            assert_eq!(run_on(&folder), [("movie_u16.npy".into(), "done")]);
            let report = std::fs::read_to_string(dir.join("movie_u16.shifts.json")).unwrap();
            let report: serde_json::Value = serde_json::from_str(&report).unwrap();
            let canonical_gain = dir.join(gain_name).canonicalize().unwrap();
            assert_eq!(
                report["settings"]["gain"]["path"],
                canonical_gain.display().to_string()
            );
            assert_eq!(
                (
                    &report["settings"]["gain"]["rotate"],
                    &report["settings"]["gain"]["flip"]
                ),
                (&0.into(), &"none".into())
            );
            assert_eq!(run_on(&folder), [("movie_u16.npy".into(), "skipped")]);
            assert_eq!(run_on(&glob), [("movie_u16.npy".into(), "skipped")]);
            assert!(is_result(&dir.join("movie_u16.aligned.mrc")));
            // A glob that names the gain alone leaves no movie: an error, not a run of nothing.
            let only_gain = format!("{folder}/*.{}", &gain_name[5..]);
            let argv = ["phase_correlation", &only_gain, "--gain", &gain];
            let err = run(&Args::parse_from(argv), Progress::Quiet).unwrap_err();
            // A single-image MRC or DM file is no movie even without --gain; a TIFF is opened
            // only to be aligned, so only --gain leaves it out.
            let says = match gain_name {
                "gain.tif" => "gain reference is left out".to_string(),
                _ => {
                    format!("{gain_name} holds a single image (gain references, defect maps?)")
                }
            };
            assert!(err.to_string().contains(&says), "{err}");
            if gain_name != "gain.tif" {
                let movie = dir.join("movie_u16.npy");
                assert_eq!(find_movies(std::slice::from_ref(&folder)).unwrap(), [movie]);
            }
            // The movie, the gain and the movie's five results: nothing aligned twice.
            assert_eq!(files(&dir).len(), 2 + 5, "{:?}", files(&dir));
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    /// NAME.star names the gain and the defect map for RELION's polishing, which reads no DM
    /// file: with --relion-star, a DM4 gain or defect map is refused before any movie runs.
    #[test]
    fn relion_star_refuses_dm_files_relion_cannot_read() {
        let out = temp_dir("star-dm");
        let out_arg = out.display().to_string();
        let (movie, dm) = (fixture("movie_u16.npy"), fixture("gain.dm4"));
        for flag in ["--gain", "--defects"] {
            let argv = [
                "phase_correlation",
                &movie,
                "--out",
                &out_arg,
                "--relion-star",
                flag,
                &dm,
            ];
            let error = format!(
                "{:#}",
                run(&Args::parse_from(argv), Progress::Quiet).unwrap_err()
            );
            let says = format!("--relion-star names the {flag} file {dm}, and RELION cannot read");
            assert!(error.contains(&says) && error.contains("dm2mrc"), "{error}");
        }
        // Without --relion-star the DM4 gain is read.
        let argv = [
            "phase_correlation",
            &movie,
            "--out",
            &out_arg,
            "--gain",
            &dm,
        ];
        assert_eq!(
            run(&Args::parse_from(argv), Progress::Quiet)
                .unwrap()
                .done(),
            1
        );
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn a_frame_that_cannot_be_read_fails_its_movie_with_the_reason() {
        // A TIFF whose second page's Deflate stream is damaged: it opens (its directories and
        // data lie within the file), and its first frame reads, so the error comes from the
        // library's read of frame 1.
        let dir = temp_dir("unreadable");
        let mut bytes = std::fs::read(fixture("movie_u16_deflate.tif")).unwrap();
        assert_eq!(&bytes[..4], b"II*\0");
        let word = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let half = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
        let first = word(&bytes, 4) as usize;
        let second = word(&bytes, first + 2 + 12 * half(&bytes, first) as usize) as usize;
        let entries = half(&bytes, second) as usize;
        let strip = (0..entries)
            .map(|e| second + 2 + 12 * e)
            .find(|&at| half(&bytes, at) == 273)
            .expect("a StripOffsets entry");
        assert_eq!(word(&bytes, strip + 4), 1, "one strip");
        let data = word(&bytes, strip + 8) as usize;
        bytes[data..data + 2].copy_from_slice(&[0xFF, 0xFF]);
        let movie = dir.join("damaged.tif");
        std::fs::write(&movie, &bytes).unwrap();
        let out = dir.join("out");
        let summary = run_with(&out, &[movie.display().to_string()], &["--upsample", "1"]);
        let Status::Failed(error) = &summary.outcomes[0].status else {
            panic!("not failed")
        };
        // The file once (it was named again inside, with the frame, by the movie's reader).
        assert_eq!(
            error,
            &format!(
                "{}: alignment failed: invalid `frames`: frame 1 could not be read: cannot \
                 decode the page: corrupt deflate stream",
                movie.display()
            )
        );
        assert!(!out.exists() || files(&out).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// What only the alignment can refuse, an upsample factor whose refinement cannot be held
    /// in memory, is told with the flag (it named the library's `upsample_factor`).
    #[test]
    fn an_upsample_the_alignment_refuses_is_named_by_its_flag() {
        let out = temp_dir("upsample");
        let summary = run_with(
            &out,
            &[fixture("movie_u16.npy")],
            &["--upsample", "4294967295"],
        );
        let Status::Failed(error) = &summary.outcomes[0].status else {
            panic!("not failed")
        };
        assert!(
            error.contains("movie_u16.npy: alignment failed: invalid --upsample: 4294967295 needs")
                && !error.contains("upsample_factor"),
            "{error}"
        );
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn a_gain_of_the_wrong_shape_fails_every_movie() {
        let out = temp_dir("gain");
        let gain = fixture("gain_wrong_shape.mrc");
        let summary = run_with(&out, &[fixture("movie_u16.npy")], &["--gain", &gain]);
        let Status::Failed(error) = &summary.outcomes[0].status else {
            panic!("not failed")
        };
        assert!(
            error.contains("gain_wrong_shape.mrc")
                && error.contains("8x10")
                && error.contains("16x20"),
            "{error}"
        );
        let good = run_with(
            &out,
            &[fixture("movie_u16.npy")],
            &["--gain", &fixture("gain.tif")],
        );
        assert_eq!(good.done(), 1);
        std::fs::remove_dir_all(&out).unwrap();
    }

    /// A gain saved turned and flipped (as a camera's software may save it) and given with
    /// `--gain-rotate`/`--gain-flip` that undo it aligns and sums the movie as the gain itself.
    #[test]
    fn a_turned_and_flipped_gain_is_applied_turned_back() {
        use crate::io::mrc::write_mrc;
        let dir = temp_dir("turned-gain");
        let gain = read_image(Path::new(&fixture("gain.mrc"))).unwrap();
        // The inverse of a quarter turn and then an upside-down flip.
        let saved = oriented_gain(oriented_gain(gain, 0, Some(ndarray::Axis(0))), 270, None);
        let turned = dir.join("turned.mrc");
        let mut file = std::fs::File::create(&turned).unwrap();
        write_mrc(&mut file, saved.view(), 1.0, "turned gain").unwrap();
        drop(file);
        let turned = turned.display().to_string();
        let movie = [fixture("movie_u16.npy")];
        let (one, two) = (dir.join("one"), dir.join("two"));
        let base = ["--upsample", "1", "--iterations", "2"];
        assert_eq!(
            run_with(
                &one,
                &movie,
                &[&base[..], &["--gain", &fixture("gain.mrc")]].concat()
            )
            .done(),
            1
        );
        let flags = [
            "--gain",
            &turned,
            "--gain-rotate",
            "90",
            "--gain-flip",
            "updown",
        ];
        assert_eq!(
            run_with(&two, &movie, &[&base[..], &flags].concat()).done(),
            1
        );
        for name in ["movie_u16.aligned.mrc", "movie_u16.shifts.csv"] {
            let (a, b) = (
                std::fs::read(one.join(name)).unwrap(),
                std::fs::read(two.join(name)).unwrap(),
            );
            assert!(a == b, "{name} differs");
        }
        let report = std::fs::read_to_string(two.join("movie_u16.shifts.json")).unwrap();
        let report: serde_json::Value = serde_json::from_str(&report).unwrap();
        assert_eq!(
            (
                &report["settings"]["gain"]["rotate"],
                &report["settings"]["gain"]["flip"]
            ),
            (&90.into(), &"updown".into())
        );
        // Without `--gain-rotate` the turned gain does not fit, and the error says what would.
        let failed = run_with(&dir.join("three"), &movie, &["--gain", &turned]);
        let Status::Failed(error) = &failed.outcomes[0].status else {
            panic!("not failed")
        };
        assert!(
            error.contains("a quarter turn more or less (--gain-rotate) would fit it"),
            "{error}"
        );
        // Either flag without a gain is refused.
        for flag in [["--gain-rotate", "90"], ["--gain-flip", "updown"]] {
            let err =
                Args::try_parse_from(["phase_correlation", "m.mrc", flag[0], flag[1]]).unwrap_err();
            assert!(err.to_string().contains("--gain <FILE>"), "{err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The aligned sum's MRC header carries the movie's pixel size (an MRC header's, written
    /// by mrcfile), or `--pixel-size`'s; unknown (an npy movie), it says 1 and the JSON null.
    #[test]
    fn the_sum_carries_the_movies_pixel_size() {
        let dir = temp_dir("pixel-size");
        let pixel = |out: &Path, movie: &str, extra: &[&str]| {
            let flags = [&["--upsample", "1", "--iterations", "1"], extra].concat();
            assert_eq!(run_with(out, &[fixture(movie)], &flags).done(), 1);
            let stem = movie.split('.').next().unwrap();
            let sum = crate::io::Movie::open(&out.join(format!("{stem}.aligned.mrc"))).unwrap();
            let report = std::fs::read_to_string(out.join(format!("{stem}.shifts.json"))).unwrap();
            let report: serde_json::Value = serde_json::from_str(&report).unwrap();
            (sum.pixel_size(), report["pixel_size"].as_f64())
        };
        // mrcfile stores 1.06 as CELLA 21.2 over MX 20: 1.0600001 in f32.
        let near = |v: Option<f64>, want: f64| v.is_some_and(|v| (v - want).abs() < 1e-6);
        for (out, extra, want) in [("a", &[][..], 1.06), ("b", &["--pixel-size", "0.83"], 0.83)] {
            let (header, json) = pixel(&dir.join(out), "movie_stack.mrcs", extra);
            let header = header.map(f64::from);
            assert!(
                near(header, want) && near(json, want),
                "{header:?} {json:?}"
            );
        }
        assert_eq!(
            pixel(&dir.join("c"), "movie_u16.npy", &[]),
            (Some(1.0), None)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A rerun with the same settings skips, whatever floats they hold (they are compared as
    /// read back from the report, not as given).
    #[test]
    fn a_rerun_with_the_same_float_settings_skips() {
        let dir = temp_dir("floats");
        let movie = [fixture("movie_u16.npy")];
        let flags = [
            "--upsample",
            "1",
            "--iterations",
            "1",
            "--tolerance",
            "0.30000000000000004",
            "--bfactor",
            "123.456789012345678",
            "--pixel-size",
            "1.0600001",
            "--bin",
            "1.999999",
            "--taper",
            "0.1",
        ];
        assert_eq!(run_with(&dir, &movie, &flags).done(), 1);
        let again = run_with(&dir, &movie, &flags);
        if let Status::Failed(e) = &again.outcomes[0].status {
            panic!("{e}");
        }
        assert_eq!(again.skipped(), 1);
        // A gain given on the rerun is a setting that differs, said as such.
        let gain = fixture("gain.mrc");
        let with_gain = run_with(&dir, &movie, &[&flags[..], &["--gain", &gain]].concat());
        let Status::Failed(error) = &with_gain.outcomes[0].status else {
            panic!("not failed")
        };
        assert!(error.contains("(settings.gain none (now {"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `--bin 2` writes the sum Fourier-cropped to half its sides (16x20 to 8x10), its mean
    /// kept and its pixel twice as large, and the JSON says so; the shifts are unchanged.
    #[test]
    fn a_binned_sum_is_half_the_size_with_twice_the_pixel() {
        let dir = temp_dir("bin");
        let movie = [fixture("movie_stack.mrcs")];
        let base = ["--upsample", "4", "--iterations", "2"];
        let (one, two) = (dir.join("one"), dir.join("two"));
        assert_eq!(run_with(&one, &movie, &base).done(), 1);
        assert_eq!(
            run_with(&two, &movie, &[&base[..], &["--bin", "2"]].concat()).done(),
            1
        );
        let sum = |out: &Path| {
            let mut sum = crate::io::Movie::open(&out.join("movie_stack.aligned.mrc")).unwrap();
            let pixel = sum.pixel_size().unwrap();
            (sum.read_all().unwrap(), pixel)
        };
        let ((full, full_pixel), (binned, binned_pixel)) = (sum(&one), sum(&two));
        assert_eq!((full.dim(), binned.dim()), ((1, 16, 20), (1, 8, 10)));
        assert!(
            (binned_pixel - 2.0 * full_pixel).abs() < 1e-5,
            "{binned_pixel}"
        );
        let mean = |a: &ndarray::Array3<f32>| a.mean().unwrap();
        assert!((mean(&full) - mean(&binned)).abs() < 1e-3 * mean(&full).abs());
        let csv = |out: &Path| std::fs::read(out.join("movie_stack.shifts.csv")).unwrap();
        assert!(csv(&one) == csv(&two));
        let report = std::fs::read_to_string(two.join("movie_stack.shifts.json")).unwrap();
        let report: serde_json::Value = serde_json::from_str(&report).unwrap();
        assert_eq!(
            (&report["settings"]["bin"], &report["sum_shape"]),
            (&2.0.into(), &serde_json::json!([8, 10]))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `--dose-per-frame` writes `NAME.aligned_DW.mrc` beside the plain sum: at a vanishing
    /// exposure every weight is 1 and it is the plain sum over sqrt(frames) (the same shifts
    /// applied); at a real one its mean is still that (zero frequency is never weighted down)
    /// but its fine detail is weaker. The JSON records the exposure; results made without it,
    /// or missing the weighted sum, are not skipped on; a forced rerun without it removes it.
    #[test]
    fn dose_weighting_writes_a_weighted_sum() {
        let dir = temp_dir("dose");
        let movie = [fixture("movie_stack.mrcs")];
        let base = ["--upsample", "4", "--iterations", "2"];
        let read = |path: PathBuf| crate::io::Movie::open(&path).unwrap().read_all().unwrap();
        let sums = |out: &Path| {
            let plain = read(out.join("movie_stack.aligned.mrc"));
            let frames = crate::io::Movie::open(Path::new(&movie[0])).unwrap().len();
            (
                plain / (frames as f32).sqrt(),
                read(out.join("movie_stack.aligned_DW.mrc")),
            )
        };
        let (faint, real) = (dir.join("faint"), dir.join("real"));
        let faint_flags = [&base[..], &["--dose-per-frame", "1e-6"]].concat();
        assert_eq!(run_with(&faint, &movie, &faint_flags).done(), 1);
        let (plain, weighted) = sums(&faint);
        let scale = plain.iter().fold(0f32, |m, v| m.max(v.abs()));
        let worst = (&plain - &weighted)
            .iter()
            .fold(0f32, |m, v| m.max(v.abs()));
        assert!(worst < 1e-4 * scale, "{worst} of {scale}");

        let real_flags = [
            &base[..],
            &[
                "--dose-per-frame",
                "20",
                "--pre-exposure",
                "3",
                "--voltage",
                "200",
            ],
        ]
        .concat();
        assert_eq!(run_with(&real, &movie, &real_flags).done(), 1);
        let (plain, weighted) = sums(&real);
        let mean = |a: &ndarray::Array3<f32>| a.mean().unwrap();
        assert!((mean(&plain) - mean(&weighted)).abs() < 1e-4 * mean(&plain).abs());
        let spread = |a: &ndarray::Array3<f32>| a.std(0.0);
        assert!(
            spread(&weighted) < 0.95 * spread(&plain),
            "{} {}",
            spread(&weighted),
            spread(&plain)
        );
        let report = std::fs::read_to_string(real.join("movie_stack.shifts.json")).unwrap();
        let report: serde_json::Value = serde_json::from_str(&report).unwrap();
        assert_eq!(
            report["settings"]["dose"],
            serde_json::json!({"per_frame": 20.0, "pre_exposure": 3.0, "voltage_kv": 200.0})
        );
        assert!(report["timing"]["dose_weighting_s"].as_f64().is_some());
        let dw = real.join("movie_stack.aligned_DW.mrc");
        assert!(is_result(&dw));

        // Without the exposure, a rerun names it as a setting that differs.
        let error = failure(&run_with(&real, &movie, &base));
        assert!(error.contains("settings.dose"), "{error}");
        // With it but the weighted sum removed, the results are not taken as finished.
        std::fs::remove_file(&dw).unwrap();
        let error = failure(&run_with(&real, &movie, &real_flags));
        assert!(
            error.contains("lack") && error.contains("aligned_DW.mrc"),
            "{error}"
        );
        assert_eq!(
            run_with(&real, &movie, &[&real_flags[..], &["--force"]].concat()).done(),
            1
        );
        assert!(dw.is_file());
        // Redone without it, the weighted sum of the other run is removed.
        assert_eq!(
            run_with(&real, &movie, &[&base[..], &["--force"]].concat()).done(),
            1
        );
        assert!(!dw.exists());

        // A movie without a pixel size needs --pixel-size.
        let npy = [fixture("movie_u16.npy")];
        let error = failure(&run_with(&dir.join("npy"), &npy, &faint_flags));
        assert!(error.contains("pass --pixel-size"), "{error}");
        let given = [&faint_flags[..], &["--pixel-size", "1.2"]].concat();
        assert_eq!(run_with(&dir.join("npy"), &npy, &given).done(), 1);
        // Nor one whose header says 1 Å, which may mean none.
        let one_angstrom = dir.join("one_angstrom.mrc");
        let frame = ndarray::Array2::from_shape_fn((16, 20), |(y, x)| (y * x) as f32);
        let mut file = std::fs::File::create(&one_angstrom).unwrap();
        crate::io::mrc::write_mrc(&mut file, frame.view(), 1.0, "1 A").unwrap();
        let one = [one_angstrom.display().to_string()];
        let error = failure(&run_with(&dir.join("one"), &one, &faint_flags));
        assert!(error.contains("header says 1 Å"), "{error}");
        let confirmed = [&faint_flags[..], &["--pixel-size", "1"]].concat();
        assert_eq!(run_with(&dir.join("one"), &one, &confirmed).done(), 1);

        // The flags' values and companions are checked before any movie is read.
        for (flags, says) in [
            (&["--dose-per-frame", "0"][..], "--dose-per-frame"),
            (&["--dose-per-frame", "1", "--voltage", "120"], "300 or 200"),
            (&["--pre-exposure", "2"], "--dose-per-frame"),
            (&["--voltage", "300"], "--dose-per-frame"),
        ] {
            let argv = [&["phase_correlation", "m.mrc"][..], flags].concat();
            let err = Args::try_parse_from(argv).unwrap_err();
            assert!(err.to_string().contains(says), "{err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `--relion-star` writes RELION's motion metadata: the general block as RELION's
    /// `Micrograph::write` has it, and each frame's 1-based number with `dx`, `dy` of the CSV.
    /// It is required of a rerun that asks for it, removed by one that does not, and refused
    /// with a turned gain, which RELION would read unturned.
    #[test]
    fn relion_star_holds_the_shifts() {
        let dir = temp_dir("star");
        let movie = [fixture("movie_stack.mrcs")];
        let gain = fixture("gain.mrc");
        let flags = [
            "--upsample",
            "4",
            "--iterations",
            "2",
            "--gain",
            &gain,
            "--dose-per-frame",
            "1.2",
        ];
        let star_flags = [&flags[..], &["--relion-star"]].concat();
        assert_eq!(run_with(&dir, &movie, &star_flags).done(), 1);
        let star = std::fs::read_to_string(dir.join("movie_stack.star")).unwrap();
        let value = |label: &str| {
            let line = star
                .lines()
                .find(|l| l.split_whitespace().next() == Some(label));
            line.and_then(|l| l.split_whitespace().nth(1))
                .map(str::to_owned)
        };
        let canonical_movie = canonical(Path::new(&movie[0])).display().to_string();
        let canonical_gain = canonical(Path::new(&gain)).display().to_string();
        for (label, want) in [
            ("_rlnImageSizeX", "20"),
            ("_rlnImageSizeY", "16"),
            ("_rlnImageSizeZ", "3"),
            ("_rlnMicrographMovieName", &canonical_movie),
            ("_rlnMicrographGainName", &canonical_gain),
            ("_rlnMicrographBinning", "1.000000"),
            ("_rlnMicrographOriginalPixelSize", "1.060000"),
            ("_rlnMicrographDoseRate", "1.200000"),
            ("_rlnVoltage", "300.000000"),
            ("_rlnMicrographStartFrame", "1"),
            ("_rlnMotionModelVersion", "0"),
        ] {
            assert_eq!(value(label).as_deref(), Some(want), "{label}");
        }
        let loop_rows: Vec<Vec<f64>> = star
            .split("data_global_shift")
            .nth(1)
            .unwrap()
            .lines()
            .filter_map(|l| {
                let v: Option<Vec<f64>> = l.split_whitespace().map(|w| w.parse().ok()).collect();
                v.filter(|v| v.len() == 3)
            })
            .collect();
        let csv = std::fs::read_to_string(dir.join("movie_stack.shifts.csv")).unwrap();
        let csv_rows: Vec<Vec<f64>> = csv
            .lines()
            .skip(1)
            .map(|l| l.split(',').map(|w| w.parse().unwrap()).collect())
            .collect();
        assert_eq!(loop_rows.len(), 3);
        for (star_row, csv_row) in loop_rows.iter().zip(&csv_rows) {
            // frame,dy,dx: RELION's is 1-based, x then y.
            assert_eq!(star_row[0], csv_row[0] + 1.0);
            assert!(
                (star_row[1] - csv_row[2]).abs() < 1e-4 && (star_row[2] - csv_row[1]).abs() < 1e-4
            );
        }

        // Asked for again and missing, it is not taken as finished; not asked for, it goes.
        std::fs::remove_file(dir.join("movie_stack.star")).unwrap();
        let error = failure(&run_with(&dir, &movie, &star_flags));
        assert!(
            error.contains("lack") && error.contains("movie_stack.star"),
            "{error}"
        );
        assert_eq!(
            run_with(&dir, &movie, &[&star_flags[..], &["--force"]].concat()).done(),
            1
        );
        assert_eq!(
            run_with(&dir, &movie, &[&flags[..], &["--force"]].concat()).done(),
            1
        );
        assert!(!dir.join("movie_stack.star").exists());

        let turned = [&star_flags[..], &["--gain-rotate", "90"]].concat();
        let argv = [
            &["phase_correlation", "--out", dir.to_str().unwrap()][..],
            &movie.iter().map(String::as_str).collect::<Vec<_>>(),
            &turned,
        ]
        .concat();
        let error = run(&Args::parse_from(argv), Progress::Quiet)
            .unwrap_err()
            .to_string();
        assert!(error.contains("--relion-star"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `--split-sums` writes the sums of the even and of the odd frames, which add up to the
    /// aligned sum (binned as it is), each the sum of its frames; RELION's micrographs STAR
    /// names them. They are required of a rerun that asks for them, refused as other settings
    /// by one that does not, and removed by a forced one.
    #[test]
    fn split_sums_are_the_even_and_odd_frames_halves() {
        let dir = temp_dir("split");
        let movie = [fixture("movie_stack.mrcs")];
        let star = dir.join("mics.star");
        let flags = [
            "--split-sums",
            "--bin",
            "2",
            "--relion-star",
            "--dose-per-frame",
            "1",
            "--cs",
            "2.7",
            "--relion-micrographs",
            star.to_str().unwrap(),
        ];
        assert_eq!(run_with(&dir, &movie, &flags).done(), 1);
        let image = |suffix: &str| read_image(&dir.join(format!("movie_stack.{suffix}"))).unwrap();
        let (sum, even, odd) = (
            image("aligned.mrc"),
            image("aligned_EVN.mrc"),
            image("aligned_ODD.mrc"),
        );
        assert_eq!(even.dim(), (8, 10));
        let scale = sum.iter().fold(0f32, |s, v| s.max(v.abs()));
        let worst = (&even + &odd - &sum)
            .iter()
            .fold(0f32, |w, v| w.max(v.abs()));
        assert!(worst < 1e-5 * scale, "even + odd is the sum within {worst}");
        // The odd half is frame 1 alone (3 frames: 0 and 2 are even), at its shift.
        let report: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("movie_stack.shifts.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(report["settings"]["split_sums"], true);
        assert!(report["timing"]["split_sums_s"].as_f64().is_some());
        let mut frames = crate::io::Movie::open(Path::new(&movie[0])).unwrap();
        let mut frame1 = ndarray::Array2::zeros((16, 20));
        frames.read_frame(1, frame1.view_mut()).unwrap();
        let shift = [
            report["shifts"][1]["dy"].as_f64().unwrap(),
            report["shifts"][1]["dx"].as_f64().unwrap(),
        ];
        // (A frame at no shift would not tell a sum at its shift from one at none.)
        assert!(shift[0].abs() + shift[1].abs() >= 0.1, "{shift:?}");
        let mut one = ndarray::Array3::zeros((1, 16, 20));
        one.index_axis_mut(ndarray::Axis(0), 0).assign(&frame1);
        let alone =
            ufunc::registration::shifted_sum(&mut one, &[shift], ufunc::Target::Cpu).unwrap();
        let alone = fourier_crop(alone.view(), (8, 10)).unwrap();
        let worst = (&alone - &odd).iter().fold(0f32, |w, v| w.max(v.abs()));
        assert!(
            worst < 1e-4 * scale,
            "the odd half is frame 1 within {worst}"
        );
        let text = std::fs::read_to_string(&star).unwrap();
        assert!(
            text.contains("_rlnMicrographNameEven #8\n_rlnMicrographNameOdd #9\n"),
            "{text}"
        );
        let row = text
            .lines()
            .rev()
            .find(|l| l.contains("aligned_EVN.mrc"))
            .unwrap();
        assert!(row.ends_with("movie_stack.aligned_ODD.mrc"), "{row}");

        // Reruns: missing halves are not finished; without the flag, other settings; forced
        // without it, the halves go.
        std::fs::remove_file(dir.join("movie_stack.aligned_ODD.mrc")).unwrap();
        let error = failure(&run_with(&dir, &movie, &flags));
        assert!(
            error.contains("lack") && error.contains("aligned_ODD.mrc"),
            "{error}"
        );
        let error = failure(&run_with(&dir, &movie, &flags[1..3]));
        assert!(error.contains("settings.split_sums"), "{error}");
        let forced = [&flags[..], &["--force"]].concat();
        assert_eq!(run_with(&dir, &movie, &forced).done(), 1);
        let halves = ["EVN", "ODD"].map(|h| dir.join(format!("movie_stack.aligned_{h}.mrc")));
        assert!(halves.iter().all(|h| h.is_file() && is_result(h)));
        assert_eq!(run_with(&dir, &movie, &["--bin", "2", "--force"]).done(), 1);
        assert!(halves.iter().all(|h| !h.exists()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `--aligned-stack` writes the frames as aligned, binned as the sum, which add up to it
    /// (whole-frame or local), are aligned with each other, and are only those summed; a rerun
    /// asks for it, a forced one without the flag removes it, and no run takes it for a movie.
    #[test]
    fn an_aligned_stack_holds_the_frames_as_aligned() {
        use crate::synth::SynthOptions;
        let dir = temp_dir("stack");
        let options = SynthOptions {
            frames: 8,
            shape: (128, 128),
            dose: None,
            margin: 0,
            ..Default::default()
        };
        let (synth, movie) = npy_movie(&dir, "drift", options);
        let out = dir.join("out");
        let stack_path = out.join("drift.aligned_stack.mrcs");
        let stack = |frames: usize, shape: (usize, usize)| {
            let (all, pixel) = read_mrc(&stack_path);
            assert_eq!(all.dim(), (frames, shape.0, shape.1));
            (all, pixel)
        };
        let adds_up = |frames: &ndarray::Array3<f32>, what: &str| {
            let sum = read_image(&out.join("drift.aligned.mrc")).unwrap();
            let scale = sum.iter().fold(0f32, |s, v| s.max(v.abs()));
            let worst = (&frames.sum_axis(ndarray::Axis(0)) - &sum)
                .iter()
                .fold(0f32, |w, v| w.max(v.abs()));
            assert!(worst < 1e-4 * scale, "{what}: off the sum by {worst}");
        };
        let rms = |a: ndarray::ArrayView2<f32>, b: ndarray::ArrayView2<f32>| {
            ((&a - &b).mapv(|d| d * d).mean().unwrap()).sqrt()
        };

        // Binned, with the halves from the same reading.
        let flags = [
            "--aligned-stack",
            "--bin",
            "2",
            "--split-sums",
            "--pixel-size",
            "1.5",
        ];
        assert_eq!(run_with(&out, &movie, &flags).done(), 1);
        let (frames, pixel) = stack(8, (64, 64));
        assert_eq!(pixel, Some(3.0));
        adds_up(&frames, "binned");
        let raw = &synth.frames;
        let last = fourier_crop(raw.index_axis(ndarray::Axis(0), 7), (64, 64)).unwrap();
        let first = fourier_crop(raw.index_axis(ndarray::Axis(0), 0), (64, 64)).unwrap();
        let (moved, unmoved) = (
            rms(
                frames.index_axis(ndarray::Axis(0), 7),
                frames.index_axis(ndarray::Axis(0), 0),
            ),
            rms(last.view(), first.view()),
        );
        assert!(
            moved < 0.1 * unmoved,
            "frame 7 aligned is {moved} off frame 0, {unmoved} unaligned"
        );
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("drift.shifts.json")).unwrap())
                .unwrap();
        let timing = &report["timing"];
        assert!(timing["aligned_stack_s"].as_f64().is_some());
        assert_eq!(timing["aligned_stack_s"], timing["split_sums_s"]);
        assert!(is_result(&stack_path));
        let error = find_movies(&[out.display().to_string()]).unwrap_err();
        assert!(
            error.to_string().contains("no movie in the folder"),
            "{error}"
        );

        // The weighted sum from the stack's reading (frames moved, then transformed) is the
        // one made without it (spectra moved).
        let weighted = |flags: &[&str], to: &str| {
            let out = dir.join(to);
            let dose = ["--dose-per-frame", "1", "--pixel-size", "1", "--bin", "2"];
            assert_eq!(
                run_with(&out, &movie, &[&dose[..], flags].concat()).done(),
                1
            );
            read_image(&out.join("drift.aligned_DW.mrc")).unwrap()
        };
        let (with, without) = (weighted(&["--aligned-stack"], "dw"), weighted(&[], "no_dw"));
        let scale = without.iter().fold(0f32, |s, v| s.max(v.abs()));
        let worst = (&with - &without).iter().fold(0f32, |w, v| w.max(v.abs()));
        assert!(worst < 1e-5 * scale, "the weighted sums differ by {worst}");

        // Alone, of a range of frames, moved by a local model.
        let flags = [
            "--aligned-stack",
            "--first-frame",
            "3",
            "--patches",
            "3",
            "--force",
        ];
        assert_eq!(run_with(&out, &movie, &flags).done(), 1);
        let (frames, pixel) = stack(6, (128, 128));
        assert_eq!(pixel, Some(1.0), "unknown, as the sum's");
        adds_up(&frames, "local");
        let bytes = std::fs::read(&stack_path).unwrap();
        let label = String::from_utf8_lossy(&bytes[224..304]);
        assert!(label.contains("frames 3 to 8 aligned"), "{label}");
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("drift.shifts.json")).unwrap())
                .unwrap();
        assert_eq!(report["local"]["fitted"], true, "{}", report["local"]);

        // Reruns: a missing stack is not finished; forced without the flag, the stack goes.
        std::fs::remove_file(&stack_path).unwrap();
        let error = failure(&run_with(&out, &movie, &flags[..5]));
        assert!(
            error.contains("lack") && error.contains("aligned_stack.mrcs"),
            "{error}"
        );
        assert_eq!(run_with(&out, &movie, &flags).done(), 1);
        assert!(stack_path.is_file());
        assert_eq!(run_with(&out, &movie, &flags[1..]).done(), 1);
        assert!(!stack_path.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `--stack-group N` writes the sums of N consecutive aligned frames, the last of those
    /// left over (MotionCor2's `-OutStack 1 N`, grouped as MotionCor3 groups them); a rerun
    /// with another N is told apart, and the flag needs `--aligned-stack`.
    #[test]
    fn a_stack_group_sums_consecutive_aligned_frames() {
        use crate::synth::SynthOptions;
        let dir = temp_dir("stack-group");
        let options = SynthOptions {
            frames: 7,
            shape: (64, 64),
            dose: None,
            margin: 0,
            ..Default::default()
        };
        let (_, movie) = npy_movie(&dir, "drift", options);
        let stack = |out: &Path| {
            let path = out.join("drift.aligned_stack.mrcs");
            let (all, _) = read_mrc(&path);
            let label = String::from_utf8_lossy(&std::fs::read(&path).unwrap()[224..304])
                .trim_end()
                .to_string();
            (all, label)
        };
        // Alone, in the reading of the other sums with the local model, and of a range of
        // frames binned: 7 frames in sums of 3, 3 and 1; 6 in two of 3.
        let cases = [
            (&[][..], 1, 7usize),
            (&["--patches", "3", "--split-sums"], 1, 7),
            (&["--first-frame", "2", "--bin", "2"], 2, 6),
        ];
        for (extra, first, n) in cases {
            let (alone, grouped) = (dir.join("alone"), dir.join("grouped"));
            let flags = [&["--aligned-stack", "--force"][..], extra].concat();
            assert_eq!(run_with(&alone, &movie, &flags).done(), 1);
            let flags = [&flags[..], &["--stack-group", "3"]].concat();
            assert_eq!(run_with(&grouped, &movie, &flags).done(), 1);
            let ((frames, _), (sums, label)) = (stack(&alone), stack(&grouped));
            assert_eq!((frames.dim().0, sums.dim().0), (n, n.div_ceil(3)));
            let says = format!("frames {first} to 7 aligned, in sums of 3");
            assert!(label.ends_with(&says), "{label}");
            let scale = frames.iter().fold(0f32, |s, v| s.max(v.abs()));
            let ranges = (0..n).step_by(3).map(|start| start..(start + 3).min(n));
            for (k, range) in ranges.enumerate() {
                let want = frames
                    .slice(ndarray::s![range.clone(), .., ..])
                    .sum_axis(ndarray::Axis(0));
                let worst = (&sums.index_axis(ndarray::Axis(0), k) - &want)
                    .iter()
                    .fold(0f32, |w, v| w.max(v.abs()));
                assert!(
                    worst < 1e-5 * scale,
                    "{extra:?}: sum {k} of frames {range:?} is off by {worst}"
                );
            }
        }
        // Reruns: another grouping fails naming it; without the stack, or with it and no
        // grouping where there was none, the results are finished; a stack asked of results
        // without one is what they lack.
        let (alone, grouped) = (dir.join("alone"), dir.join("grouped"));
        let flags = ["--aligned-stack", "--force", "--stack-group", "3"];
        assert_eq!(run_with(&alone, &movie, &flags[..2]).done(), 1);
        assert_eq!(run_with(&grouped, &movie, &flags).done(), 1);
        assert_eq!(run_with(&grouped, &movie, &[]).skipped(), 1);
        let plain = dir.join("plain");
        assert_eq!(run_with(&plain, &movie, &[]).done(), 1);
        let error = failure(&run_with(
            &plain,
            &movie,
            &flags[2..]
                .iter()
                .chain(&flags[..1])
                .copied()
                .collect::<Vec<_>>(),
        ));
        assert!(
            error.contains("lack") && error.contains("aligned_stack.mrcs"),
            "{error}"
        );
        let error = failure(&run_with(
            &grouped,
            &movie,
            &["--aligned-stack", "--stack-group", "2"],
        ));
        assert!(error.contains("settings.stack_group 3 (now 2)"), "{error}");
        let alone_again = run_with(&alone, &movie, &["--aligned-stack", "--stack-group", "1"]);
        assert_eq!(
            alone_again.skipped(),
            1,
            "--stack-group 1 is each frame alone"
        );
        let error = Args::try_parse_from(["phase_correlation", "m.mrc", "--stack-group", "2"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("--aligned-stack"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `--ps-grouping` writes RELION's power spectrum of the groups' amplitude spectra (the
    /// library's, made square, cut to 1.4 Å and resampled), at the pixel size CTFFIND reads it
    /// at, lists it in the micrographs STAR, and is a setting of the results; it needs the
    /// pixel size and a `--ps-size` the sum has pixels for.
    #[test]
    fn a_power_spectrum_is_written_for_ctffind() {
        use crate::power_spectrum::relion_power_spectrum;
        use crate::synth::SynthOptions;
        let dir = temp_dir("spectrum");
        let options = SynthOptions {
            frames: 7,
            shape: (128, 160),
            dose: Some(4.0),
            ..Default::default()
        };
        let (synth, movie) = npy_movie(&dir, "drift", options);
        let out = dir.join("out");
        let star = dir.join("mics.star");
        let flags = [
            "--ps-grouping",
            "3",
            "--ps-size",
            "32",
            "--pixel-size",
            "1",
            "--relion-star",
            "--dose-per-frame",
            "1",
            "--cs",
            "2.7",
            "--relion-micrographs",
            star.to_str().unwrap(),
        ];
        assert_eq!(run_with(&out, &movie, &flags).done(), 1);
        let ps_path = out.join("drift.aligned_PS.mrc");
        let (written, pixel) = read_mrc(&ps_path);
        assert_eq!(written.dim(), (1, 32, 32));
        // 128 pixels cut to ceil(128 / 1.4) = 92, of 128 / 92 Å.
        assert_eq!(pixel, Some((128.0 / 92.0) as f32));
        let written = written.index_axis_move(ndarray::Axis(0), 0);
        // A report and its shifts.
        let report_in = |dir: &Path| -> (serde_json::Value, Vec<[f64; 2]>) {
            let json = std::fs::read_to_string(dir.join("drift.shifts.json")).unwrap();
            let report: serde_json::Value = serde_json::from_str(&json).unwrap();
            let rows = report["shifts"].as_array().unwrap().iter();
            let shifts = rows
                .map(|r| [r["dy"].as_f64().unwrap(), r["dx"].as_f64().unwrap()])
                .collect();
            (report, shifts)
        };
        let (report, shifts) = report_in(&out);
        assert!(shifts[6][0].hypot(shifts[6][1]) > 1.0, "{shifts:?}");
        let wanted = ufunc::registration::SumsWanted {
            spectrum_group: Some(3),
            ..Default::default()
        };
        // The library's spectrum of `frames` at `shifts`, as the program makes it for a sum
        // of `binned`, is `written`; its pixel size.
        let library = |written: &Array2<f32>, mut frames: ndarray::Array3<f32>, shifts, binned| {
            let sums = aligned_sums(&mut frames, shifts, &wanted, ufunc::Target::Cpu).unwrap();
            let spectrum = sums.spectrum.unwrap();
            let expected = relion_power_spectrum(spectrum.view(), binned, 1.0, 32).unwrap();
            let scale = expected.image.iter().fold(0f32, |s, v| s.max(v.abs()));
            let worst = (written - &expected.image)
                .iter()
                .fold(0f32, |w, v| w.max(v.abs()));
            assert!(
                worst < 1e-4 * scale,
                "off the library's by {worst} of {scale}"
            );
            expected.pixel_size
        };
        library(&written, synth.frames.clone(), &shifts, (128, 160));
        assert_eq!(report["settings"]["power_spectrum"]["grouping"], 3);
        assert!(report["timing"]["power_spectrum_s"].as_f64().is_some());
        let text = std::fs::read_to_string(&star).unwrap();
        assert!(text.contains("_rlnCtfPowerSpectrum #8\n"), "{text}");
        let row = text
            .lines()
            .rev()
            .find(|l| l.contains("drift.star"))
            .unwrap();
        assert!(row.ends_with("drift.aligned_PS.mrc"), "{row}");
        assert!(is_result(&ps_path));

        // Binned, from the second frame on, in the aligned stack's reading: the groups from
        // frame 1, of the binned sum's pixels (2 Å: not cut), its centre at its own size.
        let binned = dir.join("binned");
        let flags_binned = [
            &flags[..6],
            &["--bin", "2", "--aligned-stack", "--first-frame", "2"],
        ];
        assert_eq!(run_with(&binned, &movie, &flags_binned.concat()).done(), 1);
        let (written, pixel) = read_mrc(&binned.join("drift.aligned_PS.mrc"));
        assert_eq!(pixel, Some(2.0));
        let written = written.index_axis_move(ndarray::Axis(0), 0);
        let (_, shifts) = report_in(&binned);
        assert_eq!(shifts.len(), 6);
        let frames = synth.frames.slice(ndarray::s![1.., .., ..]).to_owned();
        assert_eq!(library(&written, frames, &shifts, (64, 80)), 2.0);

        // Reruns: a missing spectrum is not finished; without the flag, other settings;
        // forced without it, the spectrum goes.
        std::fs::remove_file(&ps_path).unwrap();
        let error = failure(&run_with(&out, &movie, &flags));
        assert!(
            error.contains("lack") && error.contains("aligned_PS.mrc"),
            "{error}"
        );
        let error = failure(&run_with(&out, &movie, &flags[4..6]));
        assert!(error.contains("settings.power_spectrum"), "{error}");
        assert_eq!(run_with(&out, &movie, &["--force"]).done(), 1);
        assert!(!ps_path.exists());

        // No pixel size, or more pixels than 1.4 Å leaves: refused before aligning.
        let error = failure(&run_with(&out, &movie, &["--ps-grouping", "2", "--force"]));
        assert!(
            error.contains("--ps-grouping needs the frames' pixel size"),
            "{error}"
        );
        let too_large = ["--ps-grouping", "2", "--pixel-size", "1", "--force"];
        let error = failure(&run_with(&out, &movie, &too_large));
        assert!(
            error.contains("--ps-size 512 is more than the 92 pixels"),
            "{error}"
        );
        for bad in [
            &["--ps-grouping", "2", "--ps-size", "31"][..],
            &["--ps-size", "32"],
        ] {
            let argv = [&["phase_correlation"][..], bad].concat();
            assert!(Args::try_parse_from(argv).is_err(), "{bad:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `--float16` writes the sums and the stack in float16, as the float32 run's rounded to
    /// it, and the power spectrum in float32 (as RELION); it is a setting of the results, and
    /// with `--relion-micrographs` it needs `--ps-grouping`.
    #[test]
    fn float16_writes_the_sums_rounded_in_half_the_space() {
        use crate::synth::SynthOptions;
        let dir = temp_dir("float16");
        let options = SynthOptions {
            frames: 6,
            shape: (64, 64),
            dose: Some(4.0),
            ..Default::default()
        };
        let (_, movie) = npy_movie(&dir, "drift", options);
        let flags = [
            "--split-sums",
            "--aligned-stack",
            "--dose-per-frame",
            "1",
            "--pixel-size",
            "1",
            "--ps-grouping",
            "2",
            "--ps-size",
            "32",
        ];
        let (single, half) = (dir.join("single"), dir.join("half"));
        assert_eq!(run_with(&single, &movie, &flags).done(), 1);
        let halved = [&flags[..], &["--float16"]].concat();
        assert_eq!(run_with(&half, &movie, &halved).done(), 1);
        let mode = |path: &Path| {
            let bytes = std::fs::read(path).unwrap();
            i32::from_le_bytes(bytes[12..16].try_into().unwrap())
        };
        for suffix in MRC_SUFFIXES {
            let (a, b) = (
                single.join(format!("drift.{suffix}")),
                half.join(format!("drift.{suffix}")),
            );
            let spectrum = suffix == "aligned_PS.mrc";
            assert_eq!(
                (mode(&a), mode(&b)),
                (2, if spectrum { 2 } else { 12 }),
                "{suffix}"
            );
            let (sa, sb) = (
                std::fs::metadata(&a).unwrap().len(),
                std::fs::metadata(&b).unwrap().len(),
            );
            if !spectrum {
                assert_eq!(sb - 1024, (sa - 1024) / 2, "{suffix}");
            }
            let ((mut frames, _), (back, _)) = (read_mrc(&a), read_mrc(&b));
            if !spectrum {
                frames.mapv_inplace(|v| half::f16::from_f32(v).to_f32());
            }
            assert_eq!(frames, back, "{suffix}");
        }
        let error = failure(&run_with(&half, &movie, &flags));
        assert!(
            error.contains("settings.float16 true (now false)"),
            "{error}"
        );
        let star = dir.join("mics.star");
        let relion = [
            "--float16",
            "--relion-star",
            "--dose-per-frame",
            "1",
            "--cs",
            "2.7",
            "--relion-micrographs",
            star.to_str().unwrap(),
        ];
        let mut argv = vec!["phase_correlation".to_owned()];
        argv.extend(movie.iter().cloned());
        argv.extend(relion.iter().map(|s| s.to_string()));
        let error = run(&Args::parse_from(argv), Progress::Quiet).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("--float16 with --relion-micrographs needs --ps-grouping"),
            "{error}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A frame that cannot be written to the stack stops the reading, and the writing's error
    /// is the one told.
    #[test]
    fn a_stack_that_cannot_be_written_says_why() {
        /// Takes the header, then fails.
        struct Full(usize);
        impl std::io::Write for Full {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                match self.0 >= 1024 {
                    true => Err(std::io::Error::other("no space left")),
                    false => {
                        self.0 += bytes.len();
                        Ok(bytes.len())
                    }
                }
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        impl std::io::Seek for Full {
            fn seek(&mut self, _: std::io::SeekFrom) -> std::io::Result<u64> {
                Ok(0)
            }
        }
        let mut stack =
            MrcStackWriter::new(Full(0), (4, 4), 2, Precision::Float32, 1.0, "full").unwrap();
        let mut frames = ndarray::Array3::<f32>::ones((2, 4, 4));
        let mut stacking = Stacking::new(&mut frames, &mut stack, (4, 4), 1);
        let error = read_through(&mut stacking).unwrap_err().to_string();
        assert_eq!(error, "the aligned stack could not be written");
        let failure = format!("{:#}", stacking.failure.unwrap());
        assert!(
            failure.starts_with("cannot write frame 0 to the aligned stack")
                && failure.ends_with("no space left"),
            "{failure}"
        );
    }

    /// `--relion-micrographs` lists the movies done or skipped, not those that failed, by the
    /// canonical paths of their sums and STARs, with an optics group per pixel size and
    /// RELION's accumulated motion; it is rewritten by a rerun that skips them, and a run that
    /// leaves nothing to list fails saying so.
    #[test]
    fn relion_micrographs_lists_the_movies_with_results() {
        let dir = temp_dir("micrographs");
        let other = dir.join("other.mrc");
        let mut pixels = ndarray::Array2::<f32>::zeros((16, 20));
        pixels
            .indexed_iter_mut()
            .for_each(|((y, x), v)| *v = ((y * 7 + x * 13) % 11) as f32);
        let mut file = std::fs::File::create(&other).unwrap();
        crate::io::mrc::write_mrc(&mut file, pixels.view(), 0.5, "one frame").unwrap();
        let movies = [
            fixture("movie_stack.mrcs"),
            other.display().to_string(),
            fixture("movie_u16.npy"),
        ];
        let star = dir.join("relion/corrected_micrographs.star");
        let flags = [
            "--upsample",
            "4",
            "--iterations",
            "2",
            "--dose-per-frame",
            "1.5",
            "--relion-star",
            "--relion-micrographs",
            star.to_str().unwrap(),
            "--cs",
            "2.7",
        ];
        let out = dir.join("out");
        let summary = run_with(&out, &movies, &flags);
        // The .npy gives no pixel size, which the exposure needs.
        assert_eq!((summary.done(), summary.failed()), (2, 1));
        assert!(summary.errors.is_empty(), "{:?}", summary.errors);
        let rows = |text: &str, block: &str| -> Vec<Vec<String>> {
            let block = text.split(&format!("data_{block}")).nth(1).unwrap();
            let block = block.split("data_").next().unwrap();
            block
                .lines()
                .filter(|l| !l.is_empty() && !l.starts_with(['_', '#']) && *l != "loop_")
                .map(|l| l.split_whitespace().map(str::to_owned).collect())
                .collect()
        };
        let text = std::fs::read_to_string(&star).unwrap();
        let optics = rows(&text, "optics");
        assert_eq!(optics.len(), 2);
        assert_eq!(
            optics[0][1..],
            [
                "1",
                "1.060000",
                "300.000000",
                "2.700000",
                "0.100000",
                "1.060000"
            ]
        );
        assert_eq!(
            optics[1][1..],
            [
                "2",
                "0.500000",
                "300.000000",
                "2.700000",
                "0.100000",
                "0.500000"
            ]
        );
        let mics = rows(&text, "micrographs");
        assert_eq!(mics.len(), 2);
        for (row, name, group) in [(&mics[0], "movie_stack", "1"), (&mics[1], "other", "2")] {
            let at = |suffix: &str| canonical(&out.join(format!("{name}.{suffix}")));
            assert_eq!(
                row[..4],
                [
                    at("aligned.mrc").display().to_string(),
                    at("aligned_DW.mrc").display().to_string(),
                    at("star").display().to_string(),
                    group.to_owned(),
                ]
            );
            assert!(at("aligned_DW.mrc").is_file() && at("star").is_file());
            // The total is the drift's length: the CSV's steps.
            let csv = std::fs::read_to_string(at("shifts.csv")).unwrap();
            let steps: Vec<f64> = csv
                .lines()
                .skip(1)
                .map(|l| l.split(',').nth(4).unwrap().parse().unwrap())
                .collect();
            let motion: Vec<f64> = row[4..].iter().map(|v| v.parse().unwrap()).collect();
            // 4 e/Å² end early motion: frame 2 (at 3 e/Å²) is early, frame 3 (4.5) late.
            let early = steps.get(1).copied().unwrap_or(0.0);
            let want = [steps.iter().sum(), early, steps.iter().skip(2).sum::<f64>()];
            for (got, want) in motion.iter().zip(want) {
                assert!(
                    (got - want).abs() < 1e-3,
                    "{name}: {motion:?} against {want}"
                );
            }
        }

        // A rerun skips them and writes the list again.
        std::fs::remove_file(&star).unwrap();
        let summary = run_with(&out, &movies, &flags);
        assert_eq!((summary.skipped(), summary.failed()), (2, 1));
        assert_eq!(std::fs::read_to_string(&star).unwrap(), text);

        // Nothing to list: the run fails, naming the file, and leaves the old one.
        let summary = run_with(&out, &movies[2..], &flags);
        assert!(!summary.succeeded());
        assert!(
            summary.errors.len() == 1
                && summary.errors[0].contains(star.to_str().unwrap())
                && summary.errors[0].contains("no movie of this run has results"),
            "{:?}",
            summary.errors
        );
        assert_eq!(std::fs::read_to_string(&star).unwrap(), text);

        // An --out that the STAR could not name is refused before any movie is aligned.
        let spaced = dir.join("with space");
        let argv = [
            &[
                "phase_correlation",
                "--out",
                spaced.to_str().unwrap(),
                &movies[0],
            ][..],
            &flags,
        ]
        .concat();
        let error = run(&Args::parse_from(argv), Progress::Quiet)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("--relion-micrographs") && error.contains("with space"),
            "{error}"
        );
        assert!(!spaced.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A blank frame and passes that did not settle are said in the log line and the JSON.
    #[test]
    fn unregistered_frames_and_unsettled_passes_are_reported() {
        use crate::synth::{synth_movie, SynthOptions};
        let out = temp_dir("warnings");
        let mut frames = synth_movie(&SynthOptions {
            frames: 6,
            shape: (64, 64),
            dose: None,
            margin: 16,
            ..Default::default()
        })
        .frames;
        frames.index_axis_mut(ndarray::Axis(0), 2).fill(0.0);
        let meta = MovieMeta {
            frames_of_file: None,
            movie: "blank.npy".into(),
            report_name: "blank.npy".into(),
            title: "blank".into(),
            pixel_size: None,
            settings: Settings::of(&Args::parse_from(["phase_correlation"])),
            relion_star: false,
            aligned_stack: false,
            defects: None,
        };
        let outputs = OutputPaths::new(&out, "blank");
        let align = |max_iterations| {
            let options = AlignOptions {
                max_iterations,
                tolerance: 0.0,
                ..Default::default()
            };
            align_and_write(&mut frames.clone(), &meta, &outputs, &options, None).unwrap()
        };
        let done = align(1);
        assert_eq!(
            (done.converged, &done.unregistered_frames[..]),
            (false, &[2][..])
        );
        let line = Status::Done(done).describe();
        assert!(line.contains("did not settle in 1 iteration"), "{line}");
        assert!(line.contains("frame 2 has nothing to register"), "{line}");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("blank.shifts.json")).unwrap())
                .unwrap();
        assert_eq!(json["converged"], false);
        assert_eq!(json["unregistered_frames"], serde_json::json!([2]));
        // Noise-free frames settle: no warning but the blank frame's.
        let done = align(20);
        assert!(done.converged, "{} passes", done.iterations);
        let line = Status::Done(done).describe();
        assert!(!line.contains("settle"), "{line}");
        // From the movie's frame 1 on, the blank frame is still the movie's frame 2.
        let movie = out.join("blank.npy");
        ndarray_npy::write_npy(&movie, &frames).unwrap();
        let ranged = out.join("ranged");
        let args = ["--first-frame", "2"];
        assert_eq!(
            run_with(&ranged, &[movie.display().to_string()], &args).done(),
            1
        );
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(ranged.join("blank.shifts.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(json["unregistered_frames"], serde_json::json!([2]));
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn align_size_bins_the_alignment_and_keeps_the_full_size_sum() {
        let out = temp_dir("max-size");
        let summary = run_with(&out, &[fixture("movie_u16.npy")], &["--align-size", "8"]);
        assert_eq!(summary.done(), 1);
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join("movie_u16.shifts.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(json["frame_shape"], serde_json::json!([16, 20]));
        assert_eq!(json["options"]["max_size"], 8);
        assert!(
            json["alignment_shape"][1].as_u64().unwrap() <= 8,
            "{}",
            json["alignment_shape"]
        );
        let sum = crate::io::Movie::open(&out.join("movie_u16.aligned.mrc")).unwrap();
        assert_eq!((sum.len(), sum.frame_shape()), (1, (16, 20)));
        std::fs::remove_dir_all(&out).unwrap();
    }

    /// An EER movie of a drifting specimen, its electrons drawn page by page at 0.25 per pixel
    /// per page: grouped 8 pages to a frame (the 3 left over left out), the program finds the
    /// drift; the report and NAME.star record the grouping, and a rerun with another grouping
    /// is not skipped on.
    #[test]
    fn an_eer_movie_is_grouped_and_aligned() {
        use crate::io::eer::{writer::write_eer, Event};
        use crate::synth::{synth_movie, SynthOptions};
        use rand::{RngExt, SeedableRng};
        let dir = temp_dir("eer");
        let (frames, per_frame, shape) = (8, 8, (128, 128));
        let synth = synth_movie(&SynthOptions {
            frames,
            shape,
            dose: None,
            ..Default::default()
        });
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(29);
        let mut pages = Vec::new();
        // Three pages more than whole groups: left out, as RELION leaves them.
        for page in 0..frames * per_frame + 3 {
            let expected = synth
                .frames
                .index_axis(ndarray::Axis(0), (page / per_frame).min(frames - 1));
            let mut events = Vec::new();
            for ((row, col), &v) in expected.indexed_iter() {
                if rng.random::<f64>() < 0.25 * f64::from(v) {
                    let (x, y) = (rng.random_range(0..4), rng.random_range(0..4));
                    events.push(Event { row, col, x, y });
                }
            }
            pages.push(events);
        }
        let movie = dir.join("falcon.eer");
        write_eer(&movie, &pages, shape);
        let movies = [movie.display().to_string()];
        let out = dir.join("out");
        let summary = run_with(&out, &movies, &["--eer-grouping", "8", "--relion-star"]);
        assert_eq!(summary.done(), 1, "{:?}", statuses(&summary));
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("falcon.shifts.json")).unwrap())
                .unwrap();
        assert_eq!(report["frames"], frames);
        assert_eq!(
            report["settings"]["eer"],
            serde_json::json!({"grouping": 8, "upsampling": 1})
        );
        // RELION's polishing renders the frames again as its motion correction says.
        let star = std::fs::read_to_string(out.join("falcon.star")).unwrap();
        assert!(
            star.contains("_rlnImageSizeZ 8\n")
                && star.contains(
                    "_rlnMicrographStartFrame 1\n_rlnEERUpsampling 1\n_rlnEERGrouping 8\n"
                ),
            "{star}"
        );
        let shifts: Vec<[f64; 2]> = report["shifts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| [s["dy"].as_f64().unwrap(), s["dx"].as_f64().unwrap()])
            .collect();
        let error = rms_error(&shifts, &synth.truth);
        assert!(error < 0.15, "rms error {error} px: {shifts:?}");
        let sum = read_image(&out.join("falcon.aligned.mrc")).unwrap();
        let electrons: usize = pages[..frames * per_frame].iter().map(Vec::len).sum();
        assert!((f64::from(sum.sum()) / electrons as f64 - 1.0).abs() < 1e-3);
        // Upsampled, the frames and the sum are 2x2 times larger, and the drift twice as long.
        let up = dir.join("up");
        let args = ["--eer-grouping", "8", "--eer-upsampling", "2"];
        assert_eq!(run_with(&up, &movies, &args).done(), 1);
        assert_eq!(
            read_image(&up.join("falcon.aligned.mrc")).unwrap().dim(),
            (256, 256)
        );
        // RELION would divide by a gain that is not a .gain file: NAME.star cannot name one.
        let gain = dir.join("gain.mrc");
        let ones = ndarray::Array2::<f32>::ones(shape);
        crate::io::mrc::write_mrc(
            &mut std::fs::File::create(&gain).unwrap(),
            ones.view(),
            1.0,
            "",
        )
        .unwrap();
        let argv = [
            "phase_correlation",
            movies[0].as_str(),
            "--out",
            up.to_str().unwrap(),
            "--relion-star",
            "--gain",
            gain.to_str().unwrap(),
            "--eer-grouping",
            "8",
        ];
        let error = format!(
            "{:#}",
            run(&Args::parse_from(argv), Progress::Quiet).unwrap_err()
        );
        assert!(
            error.contains("RELION divides an EER movie's frames"),
            "{error}"
        );
        // Another grouping is another result: a rerun into the same folder refuses to skip.
        let again = run_with(&out, &movies, &["--eer-grouping", "4"]);
        let error = failure(&again);
        assert!(error.contains("settings.eer.grouping 8 (now 4)"), "{error}");
    }

    /// `--first-frame 4 --last-frame 13` of 16 frames: the shifts, sums and dose weighting are
    /// those of a movie of just those frames whose pre-exposure counts the three before; the
    /// tables number the frames as the movie's, and NAME.star lists all 16 as RELION does.
    #[test]
    fn a_frame_range_aligns_and_sums_only_those_frames() {
        use crate::synth::{synth_movie, SynthOptions};
        let dir = temp_dir("range");
        let synth = synth_movie(&SynthOptions {
            frames: 16,
            shape: (128, 128),
            dose: Some(4.0),
            ..Default::default()
        });
        let whole = dir.join("whole.npy");
        ndarray_npy::write_npy(&whole, &synth.frames).unwrap();
        let part = dir.join("part.npy");
        let kept = synth.frames.slice(ndarray::s![3..13, .., ..]).to_owned();
        ndarray_npy::write_npy(&part, &kept).unwrap();
        // The weighted sum and the halves from one reading of the frames.
        let common = [
            "--pixel-size",
            "1",
            "--dose-per-frame",
            "1",
            "--relion-star",
            "--split-sums",
        ];
        let ranged = dir.join("ranged");
        let mut args = common.to_vec();
        args.extend(["--first-frame", "4", "--last-frame", "13"]);
        assert_eq!(
            run_with(&ranged, &[whole.display().to_string()], &args).done(),
            1
        );
        let alone = dir.join("alone");
        let mut args = common.to_vec();
        args.extend(["--pre-exposure", "3"]);
        assert_eq!(
            run_with(&alone, &[part.display().to_string()], &args).done(),
            1
        );
        // The same frames, the same sums, weighted alike.
        for suffix in [
            "aligned.mrc",
            "aligned_DW.mrc",
            "aligned_EVN.mrc",
            "aligned_ODD.mrc",
        ] {
            let a = read_image(&ranged.join(format!("whole.{suffix}"))).unwrap();
            let b = read_image(&alone.join(format!("part.{suffix}"))).unwrap();
            assert_eq!(a, b, "{suffix}");
        }
        let report = |path: PathBuf| -> serde_json::Value {
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
        };
        let ranged_report = report(ranged.join("whole.shifts.json"));
        let alone_report = report(alone.join("part.shifts.json"));
        assert_eq!(ranged_report["frames"], 10);
        let timing = &ranged_report["timing"];
        assert_eq!(timing["dose_weighting_s"], timing["split_sums_s"]);
        assert_eq!(
            ranged_report["settings"]["frames"],
            serde_json::json!({"first": 4, "last": 13})
        );
        // `--first-frame 1` alone is every frame: no range recorded, as without the flag.
        let first_only = Args::parse_from(["phase_correlation", "--first-frame", "1"]);
        assert!(Settings::of(&first_only).frames.is_none());
        // The frames numbered as the movie's (from 0), the shifts from the first kept.
        let shifts = |report: &serde_json::Value| -> Vec<(u64, f64, f64)> {
            report["shifts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    let frame = r["frame"].as_u64().unwrap();
                    (frame, r["dy"].as_f64().unwrap(), r["dx"].as_f64().unwrap())
                })
                .collect()
        };
        let (ranged_shifts, alone_shifts) = (shifts(&ranged_report), shifts(&alone_report));
        assert_eq!(
            ranged_shifts.iter().map(|s| s.0).collect::<Vec<_>>(),
            (3..13).collect::<Vec<_>>()
        );
        for (r, a) in ranged_shifts.iter().zip(&alone_shifts) {
            assert_eq!((r.1, r.2), (a.1, a.2));
        }
        let truth: Vec<[f64; 2]> = (3..13)
            .map(|i| {
                let (t, t0) = (synth.truth[i], synth.truth[3]);
                [t[0] - t0[0], t[1] - t0[1]]
            })
            .collect();
        let measured: Vec<[f64; 2]> = ranged_shifts.iter().map(|s| [s.1, s.2]).collect();
        let error = rms_error(&measured, &truth);
        assert!(error < 0.2, "rms error {error} px");
        let csv = std::fs::read_to_string(ranged.join("whole.shifts.csv")).unwrap();
        assert!(
            csv.lines().nth(1).unwrap().starts_with("3,0.0000,0.0000,"),
            "{csv}"
        );
        // RELION's metadata: all 16 frames, those left out not observed, from frame 4.
        let star = std::fs::read_to_string(ranged.join("whole.star")).unwrap();
        assert!(star.contains("_rlnImageSizeZ 16\n"), "{star}");
        assert!(star.contains("_rlnMicrographStartFrame 4\n"), "{star}");
        assert!(
            star.contains("\n3 -9999.000000 -9999.000000\n4 0.000000 0.000000\n"),
            "{star}"
        );
        assert!(star.contains("\n14 -9999.000000 -9999.000000\n"), "{star}");
        assert!(star.contains("\n16 -9999.000000 -9999.000000\n"), "{star}");
        // The patches' tables number the frames as the movie's too.
        let patched = dir.join("patched");
        let args = ["--first-frame", "4", "--relion-star", "--patches", "3"];
        assert_eq!(
            run_with(&patched, &[whole.display().to_string()], &args).done(),
            1
        );
        let csv = std::fs::read_to_string(patched.join("whole.patches.csv")).unwrap();
        let frames: std::collections::BTreeSet<usize> = csv
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(3).unwrap().parse().unwrap())
            .collect();
        assert_eq!(frames, (3..16).collect());
        let star = std::fs::read_to_string(patched.join("whole.star")).unwrap();
        let local = &star[star.find("data_local_shift").unwrap()..];
        let numbers: std::collections::BTreeSet<usize> = local
            .lines()
            .filter(|l| l.split_whitespace().count() == 5)
            .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(numbers.first(), Some(&4), "{local}");
        assert_eq!(numbers.last(), Some(&16), "{local}");
        // Ranges beyond the movie, or backwards, fail naming it.
        for (flags, wanted) in [
            (
                &["--first-frame", "17"][..],
                "--first-frame 17 is beyond its 16 frames",
            ),
            (
                &["--last-frame", "17"],
                "--last-frame 17 is beyond its 16 frames",
            ),
            (
                &["--first-frame", "5", "--last-frame", "4"],
                "--last-frame 4 comes before --first-frame 5",
            ),
        ] {
            let summary = run_with(&dir.join("bad"), &[whole.display().to_string()], flags);
            let error = failure(&summary);
            assert!(
                error.contains(wanted) && error.contains("whole.npy"),
                "{error}"
            );
        }
    }

    /// Hot pixels (the same in every frame) pull a low-dose movie's shifts towards zero;
    /// `--hot-pixels 6` finds and replaces them and the drift comes back; `--defects` listing
    /// the same pixels gives the same results; the report records both, and a rerun with other
    /// defects is not skipped on.
    #[test]
    fn hot_pixels_are_found_and_replaced() {
        use crate::synth::{synth_movie, SynthOptions};
        let dir = temp_dir("hot");
        let synth = synth_movie(&SynthOptions {
            frames: 16,
            shape: (128, 128),
            dose: Some(0.5),
            ..Default::default()
        });
        let mut frames = synth.frames.clone();
        let hot: Vec<(usize, usize)> = (0..40)
            .map(|k| ((7 + 13 * k) % 128, (11 + 29 * k) % 128))
            .collect();
        for &(y, x) in &hot {
            frames
                .slice_mut(ndarray::s![.., y, x])
                .mapv_inplace(|v| v + 20.0);
        }
        let movie = dir.join("hot.npy");
        ndarray_npy::write_npy(&movie, &frames).unwrap();
        let movies = [movie.display().to_string()];
        let error_of = |out: &Path| {
            let csv = std::fs::read_to_string(out.join("hot.shifts.csv")).unwrap();
            let shifts: Vec<[f64; 2]> = csv
                .lines()
                .skip(1)
                .map(|l| {
                    let v: Vec<f64> = l.split(',').map(|w| w.parse().unwrap()).collect();
                    [v[1], v[2]]
                })
                .collect();
            rms_error(&shifts, &synth.truth)
        };
        let plain = dir.join("plain");
        assert_eq!(run_with(&plain, &movies, &[]).done(), 1);
        let fixed = dir.join("fixed");
        assert_eq!(
            run_with(&fixed, &movies, &["--hot-pixels", "6", "--relion-star"]).done(),
            1
        );
        // The same movie without them: what replacing them can come back to.
        let clean_movie = dir.join("clean").join("hot.npy");
        std::fs::create_dir_all(clean_movie.parent().unwrap()).unwrap();
        ndarray_npy::write_npy(&clean_movie, &synth.frames).unwrap();
        let clean = dir.join("clean");
        assert_eq!(
            run_with(&clean, &[clean_movie.display().to_string()], &[]).done(),
            1
        );
        let (before, after, none) = (error_of(&plain), error_of(&fixed), error_of(&clean));
        println!(
            "rms error {before:.3} px with 40 hot pixels, {after:.3} px replaced, {none:.3} px \
             without them"
        );
        assert!(
            before > 1.0 && after < 0.5 && after < 1.25 * none + 0.02,
            "rms error {before} px with the hot pixels, {after} replaced, {none} without"
        );
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(fixed.join("hot.shifts.json")).unwrap())
                .unwrap();
        assert_eq!(
            report["defects"],
            serde_json::json!({"listed": 0, "zero_gain": 0, "hot": 40})
        );
        assert_eq!(report["settings"]["defects"]["hot_pixels"], 6.0);
        assert!(report["timing"]["defects_s"].as_f64().is_some());
        let plain_report = std::fs::read_to_string(plain.join("hot.shifts.json")).unwrap();
        assert!(!plain_report.contains("defects"), "{plain_report}");

        // The same pixels listed: the same frames, so the same shifts.
        let list = dir.join("defects.txt");
        let lines: Vec<String> = hot.iter().map(|(y, x)| format!("{x} {y} 1 1")).collect();
        std::fs::write(&list, lines.join("\n")).unwrap();
        let listed = dir.join("listed");
        let listed_flags = ["--defects", list.to_str().unwrap(), "--relion-star"];
        assert_eq!(run_with(&listed, &movies, &listed_flags).done(), 1);
        let csv = |out: &Path| std::fs::read_to_string(out.join("hot.shifts.csv")).unwrap();
        assert_eq!(csv(&listed), csv(&fixed));

        // RELION's metadata lists the hot pixels (x, y), and names the defect file, so that
        // polishing replaces them again when it reads the movie.
        let star = |out: &Path| std::fs::read_to_string(out.join("hot.star")).unwrap();
        let hot_block = star(&fixed);
        let listed_hot: std::collections::BTreeSet<(usize, usize)> = hot_block
            .split("data_hot_pixels")
            .nth(1)
            .unwrap()
            .lines()
            .filter_map(|l| {
                let v: Vec<f64> = l
                    .split_whitespace()
                    .filter_map(|w| w.parse().ok())
                    .collect();
                (v.len() == 2).then(|| (v[1] as usize, v[0] as usize))
            })
            .collect();
        assert_eq!(listed_hot, hot.iter().copied().collect());
        assert!(!hot_block.contains("_rlnMicrographDefectFile"));
        let named = star(&listed);
        let defect_line = format!("_rlnMicrographDefectFile {}", canonical(&list).display());
        assert!(
            named.contains(&defect_line) && !named.contains("data_hot_pixels"),
            "{named}"
        );

        // Other defects: not skipped on.
        let error = failure(&run_with(&fixed, &movies, &["--hot-pixels", "5"]));
        assert!(error.contains("settings.defects"), "{error}");
        let error = failure(&run_with(&fixed, &movies, &[]));
        assert!(error.contains("settings.defects"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Pixels the gain zeroes are replaced after the gain is applied (before, they would be
    /// zeroed again): each reads as one of its good neighbours, never 0.
    #[test]
    fn zero_gain_pixels_are_replaced_after_the_gain() {
        let path = PathBuf::from(fixture("movie_u16.npy"));
        let mut gain = ndarray::Array2::<f32>::from_elem((16, 20), 2.0);
        gain[[2, 3]] = 0.0;
        gain[[10, 15]] = 0.0;
        let gained = || {
            Movie::open(&path)
                .unwrap()
                .with_gain(gain.clone(), &path)
                .unwrap()
        };
        let mut movie = gained();
        let found = find_defects(
            &mut movie,
            &path,
            None,
            None,
            Some(&(gain.clone(), path.clone())),
        )
        .unwrap();
        assert_eq!(found.counts.zero_gain, 2);
        let mut fixed = movie.with_defects(found);
        let (mut plain, mut frame) = (
            ndarray::Array2::<f32>::zeros((16, 20)),
            ndarray::Array2::<f32>::zeros((16, 20)),
        );
        for i in 0..3 {
            gained().read_frame(i, plain.view_mut()).unwrap();
            fixed.read_frame(i, frame.view_mut()).unwrap();
            for (y, x) in [(2, 3), (10, 15)] {
                assert_eq!(plain[[y, x]], 0.0);
                let near: Vec<f32> = (y - 2..=y + 2)
                    .flat_map(|r| (x - 2..=x + 2).map(move |c| (r, c)))
                    .filter(|&p| gain[p] != 0.0)
                    .map(|p| plain[p])
                    .collect();
                assert!(
                    frame[[y, x]] != 0.0 && near.contains(&frame[[y, x]]),
                    "frame {i}"
                );
            }
        }
    }

    /// `--patches XxY` aligns the patches after the whole frames: NAME.patches.csv gives each
    /// patch's drift and the model's fit, the report the model, NAME.star RELION's model and
    /// observations; the weighted sum is of the frames as the model moves them. The grid is
    /// recorded (a rerun without it, or with another, is not skipped on), the patches' CSV is
    /// required of a rerun with it and removed by one without, and a grid too fine for the
    /// frames is named by its flag.
    #[test]
    fn patches_write_the_local_drift_and_relions_model() {
        use crate::synth::SynthOptions;
        let dir = temp_dir("patches");
        let options = SynthOptions {
            frames: 8,
            shape: (144, 160),
            ..Default::default()
        };
        let (_, movies) = npy_movie(&dir, "local", options);
        let flags = [
            "--patches",
            "4x3",
            "--split-sums",
            "--relion-star",
            "--pixel-size",
            "1",
            "--dose-per-frame",
            "1",
        ];
        let summary = run_with(&dir, &movies, &flags);
        let line = summary.outcomes[0].status.describe();
        assert!(
            line.contains("local model of 12 of 12 patches settled, fit rms"),
            "{line}"
        );
        let text_of = |path: &Path| std::fs::read_to_string(path).unwrap();
        let text = |suffix: &str| text_of(&dir.join(format!("local.{suffix}")));
        let report: serde_json::Value = serde_json::from_str(&text("shifts.json")).unwrap();
        assert_eq!(
            report["settings"]["patches"],
            serde_json::json!({ "x": 4, "y": 3, "taper": 0.1, "max_fit_rms": 10.0 })
        );
        let local = &report["local"];
        assert_eq!(local["patches"], 12);
        assert_eq!(local["fitted"], true, "{local}");
        let coefficients_x: Vec<f64> =
            serde_json::from_value(local["coefficients_x"].clone()).unwrap();
        let coefficients_y: Vec<f64> =
            serde_json::from_value(local["coefficients_y"].clone()).unwrap();
        assert_eq!((coefficients_x.len(), coefficients_y.len()), (18, 18));
        assert!(dir.join("local.aligned_DW.mrc").is_file());
        assert!(dir.join("local.patches.png").is_file());
        // The halves are of the frames as the model moves them: they add up to the sum.
        let image = |suffix: &str| read_image(&dir.join(format!("local.{suffix}"))).unwrap();
        let halves = image("aligned_EVN.mrc") + image("aligned_ODD.mrc");
        let sum = image("aligned.mrc");
        let scale = sum.iter().fold(0f32, |s, v| s.max(v.abs()));
        let worst = (&halves - &sum).iter().fold(0f32, |w, v| w.max(v.abs()));
        assert!(
            worst < 1e-4 * scale,
            "the halves add up to the local sum within {worst}"
        );

        // The CSV: 12 patches of 8 frames, 3 rows of 4 columns, numbered row by row.
        let csv = text("patches.csv");
        let mut lines = csv.lines();
        assert_eq!(
            lines.next(),
            Some("patch,row,col,frame,dy,dx,fit_dy,fit_dx,peak,settled")
        );
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        assert_eq!(rows.len(), 12 * 8);
        // Patch 5: the second row's second, rows 48..96 and columns 40..80.
        let patch5: Vec<&Vec<&str>> = rows.iter().filter(|r| r[0] == "5").collect();
        assert_eq!((patch5[0][1], patch5[0][2]), ("71.5", "59.5"));
        assert_eq!(
            (patch5[0][3], patch5[0][4], patch5[0][5]),
            ("0", "0.0000", "0.0000")
        );
        assert_eq!((patch5[0][6], patch5[0][7]), ("0.0000", "0.0000")); // the model at frame 0
        let settled = rows.iter().filter(|r| r[3] == "0" && r[9] == "1").count();
        assert_eq!(local["settled"], settled);

        // NAME.star: the model (x's 18 coefficients, then y's) and the settled observations.
        let star = text("star");
        assert!(
            star.contains(
                "_rlnMotionModelVersion 1
"
            ),
            "{star}"
        );
        let block = |name: &str| -> Vec<Vec<f64>> {
            let after = star
                .split(&format!(
                    "data_{name}
"
                ))
                .nth(1)
                .unwrap();
            after
                .lines()
                .skip_while(|l| !l.starts_with("_rln"))
                .skip_while(|l| l.starts_with("_rln"))
                .take_while(|l| !l.trim().is_empty())
                .map(|l| l.split_whitespace().map(|w| w.parse().unwrap()).collect())
                .collect()
        };
        let model = block("local_motion_model");
        assert_eq!(model.len(), 36);
        for k in 0..18 {
            assert_eq!(model[k][0], k as f64);
            assert!(
                (model[k][1] - coefficients_x[k]).abs()
                    <= 1e-8 * coefficients_x[k].abs().max(1e-12)
            );
            assert!(
                (model[18 + k][1] - coefficients_y[k]).abs()
                    <= 1e-8 * coefficients_y[k].abs().max(1e-12)
            );
        }
        let observed = block("local_shift");
        assert_eq!(observed.len(), settled * 8);
        let first_of_5 = observed
            .iter()
            .find(|r| r[1] == 59.5 && r[2] == 71.5)
            .unwrap();
        assert_eq!(&first_of_5[..], &[1.0, 59.5, 71.5, 0.0, 0.0]);

        // Reruns: the same flags skip; without the CSV, not taken as finished; without
        // --patches, redone and the CSV removed; another grid is not skipped on either.
        assert_eq!(run_with(&dir, &movies, &flags).skipped(), 1);
        std::fs::remove_file(dir.join("local.patches.csv")).unwrap();
        let error = failure(&run_with(&dir, &movies, &flags));
        assert!(error.contains("local.patches.csv"), "{error}");
        let whole = &flags[3..];
        let error = failure(&run_with(&dir, &movies, whole));
        assert!(error.contains("settings.patches"), "{error}");
        assert_eq!(
            run_with(&dir, &movies, &[whole, &["--force"]].concat()).done(),
            1
        );
        assert!(!dir.join("local.patches.csv").exists());
        assert!(!dir.join("local.patches.png").exists());
        assert!(text("star").contains(
            "_rlnMotionModelVersion 0
"
        ));
        let error = failure(&run_with(
            &dir,
            &movies,
            &[&["--patches", "3"][..], whole].concat(),
        ));
        assert!(error.contains("settings.patches"), "{error}");

        // Too fine a grid for the frames is named by its flag, before any file is written.
        let summary = run_with(&dir.join("fine"), &movies, &["--patches", "11x3"]);
        let error = failure(&summary);
        assert!(
            error.contains("invalid --patches") && error.contains("3 rows and 11 columns"),
            "{error}"
        );
        assert!(!dir.join("fine").join("local.shifts.csv").exists());

        // A movie with nothing to register has no model: said, and the sums are the whole
        // frames'.
        let flat = dir.join("flat.npy");
        ndarray_npy::write_npy(&flat, &ndarray::Array3::<f32>::from_elem((6, 64, 64), 2.0))
            .unwrap();
        let summary = run_with(&dir, &[flat.display().to_string()], &["--patches", "3"]);
        let line = summary.outcomes[0].status.describe();
        assert!(
            line.contains(
                "WARNING: no local model (9 of 9 patches settled, with 0 registered frames"
            ),
            "{line}"
        );
        let report: serde_json::Value =
            serde_json::from_str(&text_of(&dir.join("flat.shifts.json"))).unwrap();
        assert_eq!(report["local"]["fitted"], false);
        assert!(report["local"]["unfitted_because"]
            .as_str()
            .unwrap()
            .contains("too few"));
        assert!(report["local"].get("coefficients_x").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `--group N` aligns groups of frames, is recorded in the report (not at 1, as reports
    /// from before it have it) and is named where a movie has too few frames for it.
    #[test]
    fn frame_groups_are_recorded_and_named_by_their_flag() {
        let out = temp_dir("group");
        let argv = [
            "phase_correlation",
            "--out",
            out.to_str().unwrap(),
            "--group",
            "3",
        ];
        let synth = crate::synth::SynthOptions {
            frames: 12,
            shape: (64, 64),
            ..Default::default()
        };
        let summary =
            crate::demo::run_synthetic(&Args::parse_from(argv), Progress::Quiet, &synth).unwrap();
        assert_eq!(summary.done(), 2);
        let report = |name: &str| -> serde_json::Value {
            let text = std::fs::read_to_string(out.join(format!("{name}.shifts.json"))).unwrap();
            serde_json::from_str(&text).unwrap()
        };
        let grouped = report("synthetic_sum");
        assert_eq!(grouped["options"]["group"], 3);
        assert_eq!(grouped["shifts"].as_array().unwrap().len(), 12);
        // (The demo's drift settles within the first groups, which a group's line cannot
        // follow: no accuracy is asked of it here; tests/align.rs measures it.)
        let summary =
            crate::demo::run_synthetic(&Args::parse_from(&argv[..3]), Progress::Quiet, &synth)
                .unwrap();
        assert_eq!(summary.done(), 2);
        assert!(report("synthetic_sum")["options"].get("group").is_none());

        let summary = run_with(&out, &[fixture("movie_u16.npy")], &["--group", "2"]);
        let error = failure(&summary);
        assert!(
            error.contains("invalid --group") && error.contains("a movie of 3 frames"),
            "{error}"
        );
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn the_demo_reports_the_error_against_the_truth_for_both_references() {
        let out = temp_dir("demo");
        let args = Args::parse_from(["phase_correlation", "--out", out.to_str().unwrap()]);
        let synth = crate::synth::SynthOptions {
            frames: 8,
            shape: (64, 64),
            ..Default::default()
        };
        let summary = crate::demo::run_synthetic(&args, Progress::Quiet, &synth).unwrap();
        assert_eq!(summary.done(), 2);
        for outcome in &summary.outcomes {
            let Status::Done(done) = &outcome.status else {
                panic!("{outcome:?}")
            };
            assert!(done.rms_error.is_some_and(f64::is_finite));
        }
        assert_eq!(files(&out).len(), 10);
        assert!(summary.peak_rss.is_some());
        // With the stack, the power spectrum and float16: three more files each; the power
        // spectrum needs a pixel size, which the built-in movie has not.
        let with = |extra: &[&str]| {
            let argv = [
                &["phase_correlation", "--out", out.to_str().unwrap()],
                extra,
            ]
            .concat();
            crate::demo::run_synthetic(&Args::parse_from(argv), Progress::Quiet, &synth).unwrap()
        };
        let flags = [
            "--aligned-stack",
            "--ps-grouping",
            "2",
            "--ps-size",
            "32",
            "--float16",
        ];
        let summary = with(&[&flags[..], &["--pixel-size", "1.5", "--force"]].concat());
        assert_eq!(summary.done(), 2);
        assert_eq!(files(&out).len(), 14);
        let summary = with(&[&flags[..], &["--force"]].concat());
        let error = failure(&summary);
        assert!(
            error.ends_with(
                "--ps-grouping needs the frames' pixel size, which the built-in \
                 movie has none: pass --pixel-size"
            ),
            "{error}"
        );
        std::fs::remove_dir_all(&out).unwrap();
    }
}
