//! The drift-correction program: aligns the frames of electron-microscopy movies by phase
//! correlation (`ufunc::registration`) and writes the shifts, the aligned sum and previews.
//! See `--help`, and the README's section on it.

#[allow(dead_code)] // Until the driver uses every reader method.
mod io;
#[allow(dead_code)]
mod output;
#[allow(dead_code)]
mod plot;
#[allow(dead_code)]
mod synth;

fn main() {}
