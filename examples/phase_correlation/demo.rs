//! The run with no movie: the synthetic default movie (see `synth`) aligned with each reference
//! mode, the error against the true drift printed for each, and the results written to
//! `target/phase_correlation_demo/` (or `--out`), always afresh.

use crate::cli::Args;
use crate::output::OutputPaths;
use crate::run::{align_and_write, MovieMeta, Progress, Settings};
use crate::summary::{Outcome, Status, Summary};
use crate::synth::{synth_movie, SynthOptions};
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::time::Instant;
use ufunc::registration::Reference;

/// The demo's default output folder.
pub fn demo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/phase_correlation_demo")
}

/// Makes the synthetic movie and aligns it against each reference.
pub fn run_demo(args: &Args, progress: Progress) -> Result<Summary> {
    run_synthetic(args, progress, &SynthOptions::default())
}

/// [`run_demo`] on any synthetic movie (tests use small ones).
pub fn run_synthetic(args: &Args, progress: Progress, synth: &SynthOptions) -> Result<Summary> {
    let say = |line: String| {
        if progress != Progress::Quiet {
            eprintln!("{line}");
        }
    };
    let out_dir = args.out.clone().unwrap_or_else(demo_dir);
    std::fs::create_dir_all(&out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let start = Instant::now();
    let movie = synth_movie(synth);
    let (n, ny, nx) = movie.frames.dim();
    say(format!(
        "synthetic movie: {n} frames of {ny}x{nx}, {} counts per pixel per frame, true drift up to {:.2} px (made in {:.2} s)",
        synth.dose.map_or("noise-free".into(), |d| d.to_string()),
        movie.truth.iter().map(|t| t[0].hypot(t[1])).fold(0.0, f64::max),
        start.elapsed().as_secs_f64()
    ));
    let mut outcomes = Vec::new();
    for reference in [Reference::Sum, Reference::First] {
        let name = format!("synthetic_{}", format!("{reference:?}").to_lowercase());
        let options = ufunc::registration::AlignOptions {
            reference,
            ..args.align_options()
        };
        let movie_name = format!("built-in synthetic movie (seed {})", synth.seed);
        let meta = MovieMeta {
            frames_of_file: None,
            movie: movie_name.clone(),
            report_name: movie_name,
            pixel_size: args.pixel_size,
            // The demo's movie has no gain.
            settings: Settings {
                gain: None,
                defects: None,
                // Every frame of it.
                frames: None,
                ..Settings::of(args)
            },
            // No file of it for RELION to read.
            relion_star: false,
            aligned_stack: args.aligned_stack,
            // Nor a detector.
            defects: None,
            title: format!(
                "synthetic movie, {name} reference",
                name = format!("{reference:?}").to_lowercase()
            ),
        };
        let outputs = OutputPaths::new(&out_dir, &name);
        let mut frames = movie.frames.view();
        let status =
            match align_and_write(&mut frames, &meta, &outputs, &options, Some(&movie.truth)) {
                Ok(done) => Status::Done(done),
                Err(e) => Status::Failed(format!("{e:#}")),
            };
        if let Status::Done(d) = &status {
            say(format!(
                "reference {:<5}: rms error {:.3} px against the truth, {:.1} ms per frame, {}",
                format!("{reference:?}").to_lowercase(),
                d.rms_error.unwrap_or(f64::NAN),
                1e3 * d.align_s / n as f64,
                super::summary::iterations(d.iterations)
            ));
        }
        outcomes.push(Outcome {
            movie: PathBuf::from(name),
            status,
        });
    }
    say(format!("results written to {}", out_dir.display()));
    Ok(Summary::new(outcomes))
}
