//! The driver: finds the movies (paths, folders, globs; `--shard`), aligns each one and writes
//! its results, skipping finished ones unless `--force`, keeping on after a failing movie, with
//! progress on the terminal (or log lines), and returns the summary.

use crate::cli::Args;
use crate::io::{read_image, Movie, EXTENSIONS};
use crate::output::{frame_rows, write_csv, write_json, write_preview, OutputPaths, Staging};
use crate::plot::write_drift_plot;
use crate::summary::{Done, Outcome, Status, Summary};
use anyhow::{bail, Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use ndarray::ArrayViewMut2;
use serde::Serialize;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;
use ufunc::registration::{align_movie, AlignOptions, FrameSource};

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
    let mut movies = find_movies(&args.movies)?;
    if let Some(shard) = args.shard {
        movies = shard.select(movies);
    }
    let gain = match &args.gain {
        Some(path) => Some((
            read_image(path).context("cannot read the gain reference")?,
            path.clone(),
        )),
        None => None,
    };
    let options = args.align_options();
    let bars = MultiProgress::with_draw_target(match progress {
        Progress::Bars => ProgressDrawTarget::stderr(),
        _ => ProgressDrawTarget::hidden(),
    });
    let overall = bars.add(ProgressBar::new(movies.len() as u64));
    overall.set_style(style("movies {bar:30.green/white} {pos}/{len} {wide_msg}"));
    let mut outcomes = Vec::new();
    let mut names = HashSet::new();
    for (i, path) in movies.iter().enumerate() {
        let tag = format!("[{}/{}] {}", i + 1, movies.len(), path.display());
        overall.set_message(path.display().to_string());
        let out_dir = args
            .out
            .clone()
            .unwrap_or_else(|| path.parent().unwrap_or(Path::new(".")).to_owned());
        let name = movie_name(path);
        let outputs = OutputPaths::new(&out_dir, &name);
        let status = if !names.insert(outputs.csv.clone()) {
            Status::Failed(format!(
                "{}: another movie of this batch already writes {name}.* into {}",
                path.display(),
                out_dir.display()
            ))
        } else if outputs.complete() && !args.force {
            Status::Skipped
        } else {
            let frame_bar = bars.add(ProgressBar::new(0));
            let result = (|| {
                let mut movie = Movie::open(path)?;
                if let Some((gain, gain_path)) = &gain {
                    movie = movie.with_gain(gain.clone(), gain_path)?;
                }
                progress.log(
                    &bars,
                    format!(
                        "{tag}: {} frames of {}x{}",
                        movie.len(),
                        movie.frame_shape().0,
                        movie.frame_shape().1
                    ),
                );
                frame_bar.set_length(movie.len() as u64);
                frame_bar.set_style(style("  frames {bar:30.cyan/white} {pos}/{len} {msg}"));
                frame_bar.set_message("reading");
                std::fs::create_dir_all(&out_dir)
                    .with_context(|| format!("cannot create {}", out_dir.display()))?;
                let meta = MovieMeta {
                    movie: path.display().to_string(),
                    gain: args.gain.as_ref().map(|g| g.display().to_string()),
                    title: name.clone(),
                };
                let mut source = Ticking {
                    movie: &mut movie,
                    bar: &frame_bar,
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
        outcomes.push(Outcome {
            movie: path.clone(),
            status,
        });
        overall.inc(1);
    }
    overall.finish_and_clear();
    Ok(Summary::new(outcomes))
}

/// The movies named by `inputs`: files as given (a missing one fails later, in its turn),
/// folders' movies and globs' matches sorted; each once.
pub fn find_movies(inputs: &[String]) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for input in inputs {
        let path = Path::new(input);
        if path.is_dir() {
            let mut inside: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("cannot list {input}"))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && is_movie(p))
                .collect();
            inside.sort();
            found.extend(inside);
        } else if !path.exists() && input.contains(['*', '?', '[']) {
            let mut matches: Vec<PathBuf> = glob::glob(input)
                .with_context(|| format!("bad glob pattern {input:?}"))?
                .filter_map(|p| p.ok())
                .filter(|p| p.is_file())
                .collect();
            if matches.is_empty() {
                bail!("no file matches {input:?}");
            }
            matches.sort();
            found.extend(matches);
        } else {
            found.push(path.to_owned());
        }
    }
    let mut seen = HashSet::new();
    found.retain(|p| seen.insert(p.clone()));
    Ok(found)
}

fn is_movie(path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
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

/// A movie that advances a progress bar as its frames are read.
struct Ticking<'a> {
    movie: &'a mut Movie,
    bar: &'a ProgressBar,
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
        self.movie.read_frame(index, out)?;
        self.bar.inc(1);
        if self.bar.position() == self.movie.len() as u64 {
            self.bar.set_message("aligning");
        }
        Ok(())
    }
}

/// What the report says about the movie besides its alignment.
pub struct MovieMeta {
    pub movie: String,
    pub gain: Option<String>,
    pub title: String,
}

/// The JSON report.
#[derive(Serialize)]
struct Report<'a> {
    program: &'static str,
    version: &'static str,
    movie: &'a str,
    gain: Option<&'a str>,
    frames: usize,
    frame_shape: [usize; 2],
    options: OptionsReport,
    iterations: usize,
    timing: Timing,
    #[serde(skip_serializing_if = "Option::is_none")]
    rms_error_px: Option<f64>,
    shifts: &'a [crate::output::FrameRow],
}

#[derive(Serialize)]
struct OptionsReport {
    reference: String,
    upsample_factor: u32,
    normalization: String,
    bfactor: f64,
    max_iterations: usize,
    tolerance: f64,
    target: String,
}

#[derive(Serialize)]
struct Timing {
    /// Reading and aligning, seconds.
    align_s: f64,
    /// The same per frame, milliseconds.
    per_frame_ms: f64,
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
    let start = Instant::now();
    let alignment = align_movie(source, options).context("alignment failed")?;
    let align_s = start.elapsed().as_secs_f64();
    let rows = frame_rows(&alignment.shifts, &alignment.peaks, truth);
    let rms_error = truth.map(|t| rms_error(&alignment.shifts, t));
    let written = Instant::now();
    let mut staging = Staging::default();
    staging.write(&outputs.csv, |w| write_csv(w, &rows))?;
    staging.write(&outputs.mrc, |w| {
        let label = format!("ufunc phase_correlation: aligned sum of {n} frames");
        crate::io::mrc::write_mrc(w, alignment.sum.view(), 1.0, &label)
    })?;
    staging.write(&outputs.png, |w| write_preview(w, alignment.sum.view()))?;
    staging.write(&outputs.drift, |w| {
        write_drift_plot(
            w,
            &format!("{}: shift per frame", meta.title),
            &alignment.shifts,
            truth,
        )
    })?;
    let timing = |write_s| Timing {
        align_s,
        per_frame_ms: 1e3 * align_s / n as f64,
        write_s,
    };
    let report = Report {
        program: "ufunc phase_correlation",
        version: env!("CARGO_PKG_VERSION"),
        movie: &meta.movie,
        gain: meta.gain.as_deref(),
        frames: n,
        frame_shape: [ny, nx],
        options: OptionsReport {
            reference: format!("{:?}", options.reference).to_lowercase(),
            upsample_factor: options.upsample_factor,
            normalization: format!("{:?}", options.normalization).to_lowercase(),
            bfactor: options.bfactor,
            max_iterations: options.max_iterations,
            tolerance: options.tolerance,
            target: options.target.name().to_owned(),
        },
        iterations: alignment.iterations,
        timing: timing(written.elapsed().as_secs_f64()),
        rms_error_px: rms_error,
        shifts: &rows,
    };
    staging.write(&outputs.json, |w| write_json(w, &report))?;
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
        iterations: alignment.iterations,
        max_shift,
        rms_error,
    })
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
