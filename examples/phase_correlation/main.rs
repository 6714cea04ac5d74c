//! The drift-correction program: aligns the frames of electron-microscopy movies by phase
//! correlation (`ufunc::registration`) and writes the shifts, the aligned sum and previews.
//! `cargo run --release --example phase_correlation -- --help`; with no movie it runs on a
//! built-in synthetic movie.

mod binning;
mod cli;
mod defects;
mod demo;
mod io;
mod memory;
mod output;
mod plot;
mod power_spectrum;
mod run;
mod summary;
mod synth;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Args::parse();
    match run::run(&args, run::Progress::auto()) {
        Ok(summary) => {
            let _ = summary.print(&mut std::io::stdout().lock());
            if summary.succeeded() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
