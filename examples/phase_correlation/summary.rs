//! The outcome of a run: per movie done (with its numbers), skipped or failed, printed as a
//! table at the end, and the process's peak memory.

use std::io::Write;
use std::path::PathBuf;

/// A movie aligned and written.
#[derive(Debug, Clone)]
pub struct Done {
    pub frames: usize,
    pub shape: (usize, usize),
    /// Seconds reading and aligning.
    pub align_s: f64,
    /// Of which seconds reading the frames.
    pub read_s: f64,
    pub iterations: usize,
    /// Whether the passes settled within the tolerance (see `Alignment::converged`).
    pub converged: bool,
    /// The frames with nothing to register (blank, or against only blank frames), reported
    /// unmoved with peak 0.
    pub unregistered_frames: Vec<usize>,
    /// The largest shift of any frame from frame 0, in pixels.
    pub max_shift: f64,
    /// The rms distance to the true shifts, when known.
    pub rms_error: Option<f64>,
    /// With `--patches`, what the local alignment found: the model's fit, or why there is none.
    pub local: Option<Result<String, String>>,
}

/// What happened to one movie.
#[derive(Debug, Clone)]
pub enum Status {
    Done(Done),
    /// Its results already existed (no `--force`).
    Skipped,
    /// The error, naming the file and the problem.
    Failed(String),
}

/// "1 iteration", "4 iterations".
pub fn iterations(n: usize) -> String {
    format!("{n} iteration{}", if n == 1 { "" } else { "s" })
}

impl Status {
    /// One line for the log.
    pub fn describe(&self) -> String {
        match self {
            Status::Done(d) => {
                let mut line = format!(
                    "done in {:.2} s (reading {:.2} s; {:.1} ms per frame, {}, largest shift {:.2} px)",
                    d.align_s,
                    d.read_s,
                    1e3 * d.align_s / d.frames.max(1) as f64,
                    iterations(d.iterations),
                    d.max_shift
                );
                if !d.converged {
                    line += &format!(
                        "; WARNING: the shifts did not settle in {}, so they may not be final \
                         (allow more with --iterations, or try --reference first)",
                        iterations(d.iterations)
                    );
                }
                match &d.local {
                    Some(Ok(fit)) => line += &format!("; {fit}"),
                    Some(Err(reason)) => {
                        line += &format!(
                            "; WARNING: no local model ({reason}), so the sums are of the whole \
                             frames' shifts alone"
                        )
                    }
                    None => {}
                }
                if !d.unregistered_frames.is_empty() {
                    let list: Vec<String> = d
                        .unregistered_frames
                        .iter()
                        .map(|i| i.to_string())
                        .collect();
                    let (frames, have) = match list.len() {
                        1 => ("frame", "has"),
                        _ => ("frames", "have"),
                    };
                    line += &format!(
                        "; WARNING: {frames} {} {have} nothing to register (blank: one value \
                         everywhere; or only blank frames to register against), reported \
                         unmoved with peak 0",
                        list.join(", ")
                    );
                }
                line
            }
            Status::Skipped => "skipped: its results exist (--force to redo)".into(),
            Status::Failed(e) => format!("FAILED: {e}"),
        }
    }
}

/// One movie's outcome.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The movie (or the demo's name for the synthetic one).
    pub movie: PathBuf,
    pub status: Status,
}

/// Every movie's outcome and the peak memory.
#[derive(Debug, Clone)]
pub struct Summary {
    pub outcomes: Vec<Outcome>,
    /// Peak resident memory in bytes (Linux), measured when the summary was made.
    pub peak_rss: Option<u64>,
    /// What failed of the run's own results, beside the movies' (`--relion-micrographs`).
    pub errors: Vec<String>,
}

impl Summary {
    pub fn new(outcomes: Vec<Outcome>) -> Summary {
        Summary {
            outcomes,
            peak_rss: crate::memory::peak_rss(),
            errors: Vec::new(),
        }
    }

    /// Whether nothing failed: no movie, nor the run's own results.
    pub fn succeeded(&self) -> bool {
        self.failed() == 0 && self.errors.is_empty()
    }

    /// The number of movies that failed.
    pub fn failed(&self) -> usize {
        self.count(|s| matches!(s, Status::Failed(_)))
    }

    /// The number of movies skipped.
    pub fn skipped(&self) -> usize {
        self.count(|s| matches!(s, Status::Skipped))
    }

    /// The number of movies done.
    pub fn done(&self) -> usize {
        self.count(|s| matches!(s, Status::Done(_)))
    }

    fn count(&self, f: impl Fn(&Status) -> bool) -> usize {
        self.outcomes.iter().filter(|o| f(&o.status)).count()
    }

    /// Prints the table: one row per movie, then the totals and the memory.
    pub fn print(&self, out: &mut impl Write) -> std::io::Result<()> {
        let width = self
            .outcomes
            .iter()
            .map(|o| o.movie.display().to_string().len())
            .max()
            .unwrap_or(5)
            .clamp(5, 60);
        writeln!(
            out,
            "{:<width$}  {:>7}  {:>11}  {:>8}  {:>6}  {:>9}  {:>5}  {:>10}",
            "movie", "status", "size", "time s", "read s", "ms/frame", "iters", "rms err px"
        )?;
        for o in &self.outcomes {
            let name = o.movie.display().to_string();
            match &o.status {
                Status::Done(d) => writeln!(
                    out,
                    "{name:<width$}  {:>7}  {:>11}  {:>8.2}  {:>6.2}  {:>9.1}  {:>5}  {:>10}",
                    "done",
                    format!("{}x{}x{}", d.frames, d.shape.0, d.shape.1),
                    d.align_s,
                    d.read_s,
                    1e3 * d.align_s / d.frames.max(1) as f64,
                    d.iterations,
                    d.rms_error.map(|e| format!("{e:.3}")).unwrap_or("-".into())
                )?,
                Status::Skipped => {
                    writeln!(out, "{name:<width$}  {:>7}  (results exist)", "skipped")?
                }
                Status::Failed(e) => writeln!(out, "{name:<width$}  {:>7}  {e}", "FAILED")?,
            }
        }
        write!(
            out,
            "{} done, {} skipped, {} failed",
            self.done(),
            self.skipped(),
            self.failed()
        )?;
        match self.peak_rss {
            Some(bytes) => writeln!(out, "; peak memory {}", crate::memory::mib(bytes.into()))?,
            None => writeln!(out)?,
        }
        for error in &self.errors {
            writeln!(out, "FAILED: {error}")?;
        }
        Ok(())
    }
}
