//! The drift plot: each frame's shift (dx, dy) in pixels joined in frame order, frame numbers
//! marked, and the true trajectory beside it when it is known; with `--patches`, the patches'
//! plot: each patch's drift after the whole-frame shifts, and the model's, at its place. Drawn by plotters into an RGB
//! buffer and encoded with `png`; text uses an embedded DejaVu Sans subset (font/LICENSE), so
//! nothing depends on the system's fonts.

use crate::output::write_png;
use anyhow::{anyhow, Result};
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use std::io::Write;
use std::sync::OnceLock;
use ufunc::registration::LocalAlignment;

/// The plot's size in pixels.
pub const SIZE: (u32, u32) = (800, 720);

const FONT: &[u8] = include_bytes!("font/DejaVuSans-ascii.ttf");

fn ensure_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok =
        *REGISTERED.get_or_init(|| register_font("sans-serif", FontStyle::Normal, FONT).is_ok());
    ok.then_some(())
        .ok_or_else(|| anyhow!("the embedded plot font could not be loaded"))
}

/// Writes the drift plot of `shifts` (`[dy, dx]` per frame, of the movie's frames from
/// `first` on) as a PNG, titled `title`.
pub fn write_drift_plot(
    out: &mut impl Write,
    title: &str,
    shifts: &[[f64; 2]],
    truth: Option<&[[f64; 2]]>,
    first: usize,
) -> Result<()> {
    render(out, "the drift plot", |pixels| {
        draw(pixels, title, shifts, truth, first)
    })
}

/// A plot of [`SIZE`] drawn by `draw` into an RGB buffer, written as a PNG.
fn render(
    out: &mut impl Write,
    what: &str,
    draw: impl FnOnce(&mut [u8]) -> Result<(), Box<dyn std::error::Error>>,
) -> Result<()> {
    ensure_font()?;
    let (w, h) = SIZE;
    let mut pixels = vec![255u8; (w * h * 3) as usize];
    draw(&mut pixels).map_err(|e| anyhow!("cannot draw {what}: {e}"))?;
    write_png(out, w as usize, h as usize, png::ColorType::Rgb, &pixels)
}

type Chart<'a, 'b> = ChartContext<
    'a,
    BitMapBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// The legend, upper right, and the plot finished.
fn finish<'b>(
    mut chart: Chart<'b, 'b>,
    root: &DrawingArea<BitMapBackend<'b>, plotters::coord::Shift>,
) -> Result<(), Box<dyn std::error::Error>> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Equal ranges on both axes (so the trajectory keeps its shape) around every point, at least
/// one pixel either side of the origin.
fn ranges(points: impl Iterator<Item = (f64, f64)> + Clone) -> ((f64, f64), (f64, f64)) {
    let bounds = |f: fn((f64, f64)) -> f64| {
        points
            .clone()
            .map(f)
            .filter(|v| v.is_finite())
            .fold((-1.0f64, 1.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)))
    };
    let (x, y) = (bounds(|p| p.0), bounds(|p| p.1));
    let half = 0.55 * (x.1 - x.0).max(y.1 - y.0);
    let centre = |r: (f64, f64)| 0.5 * (r.0 + r.1);
    let (cx, cy) = (centre(x), centre(y));
    ((cx - half, cx + half), (cy - half, cy + half))
}

fn draw(
    pixels: &mut [u8],
    title: &str,
    shifts: &[[f64; 2]],
    truth: Option<&[[f64; 2]]>,
    first: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let root = BitMapBackend::with_buffer(pixels, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let measured: Vec<(f64, f64)> = shifts.iter().map(|s| (s[1], s[0])).collect();
    let truth: Vec<(f64, f64)> = truth
        .unwrap_or_default()
        .iter()
        .map(|s| (s[1], s[0]))
        .collect();
    let ((x0, x1), (y0, y1)) = ranges(measured.iter().chain(&truth).copied());
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    chart
        .configure_mesh()
        .x_desc("dx (pixels)")
        .y_desc("dy (pixels)")
        .axis_desc_style(("sans-serif", 18))
        .label_style(("sans-serif", 14))
        .draw()?;
    if !truth.is_empty() {
        let gray = RGBColor(150, 150, 150);
        chart
            .draw_series(LineSeries::new(truth.iter().copied(), gray.stroke_width(2)))?
            .label("true shift")
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], gray.stroke_width(2))
            });
    }
    let blue = RGBColor(31, 90, 180);
    chart
        .draw_series(LineSeries::new(
            measured.iter().copied(),
            blue.stroke_width(2),
        ))?
        .label(format!("measured shift (frame {first} at the origin)"))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], blue.stroke_width(2)));
    chart.draw_series(measured.iter().map(|&p| Circle::new(p, 3, blue.filled())))?;
    // Frame numbers at about a dozen points, first and last always, none closer than 24 pixels
    // on the plot to one already written (the last one wins over its neighbours).
    let every = measured.len().div_ceil(12).max(1);
    let mut marked: Vec<(usize, (i32, i32))> = Vec::new();
    for (i, p) in measured.iter().enumerate() {
        let last = i + 1 == measured.len();
        if i % every != 0 && !last {
            continue;
        }
        let at = chart.backend_coord(p);
        let near =
            |m: &(usize, (i32, i32))| (m.1 .0 - at.0).pow(2) + (m.1 .1 - at.1).pow(2) < 24 * 24;
        if last {
            marked.retain(|m| m.0 == 0 || !near(m));
            marked.push((i, at));
        } else if !marked.iter().any(near) {
            marked.push((i, at));
        }
    }
    chart.draw_series(marked.iter().map(|&(i, _)| {
        EmptyElement::at(measured[i])
            + Circle::new((0, 0), 4, RED.filled())
            + Text::new(
                (first + i).to_string(),
                (6, -16),
                ("sans-serif", 14).into_font().color(&BLACK),
            )
    }))?;
    finish(chart, &root)
}

/// Writes the patches' plot of a local alignment as a PNG, titled `title`: the frame
/// (`frame_shape`, row 0 at the bottom as the preview shows it) with, at each patch's centre,
/// the drift it had left after the whole-frame shifts (grey, settled; orange, left out of the
/// fit) and the model's (blue), magnified alike so that the largest fits in a patch, as RELION's
/// motion-correction plot shows them.
pub fn write_patch_plot(
    out: &mut impl Write,
    title: &str,
    local: &LocalAlignment,
    frame_shape: (usize, usize),
) -> Result<()> {
    render(out, "the patches' plot", |pixels| {
        draw_patches(pixels, title, local, frame_shape)
    })
}

/// Per patch, its centre `(x, y)` and its trajectories `(dx, dy)` per frame: measured, and the
/// model's (none without one).
type PatchPaths = Vec<((f64, f64), Vec<(f64, f64)>, Vec<(f64, f64)>)>;

fn patch_paths(local: &LocalAlignment) -> PatchPaths {
    local
        .patches
        .iter()
        .map(|p| {
            let [cy, cx] = p.centre();
            let measured = p.shifts.iter().map(|s| (s[1], s[0])).collect();
            let fitted = match local.motion.model() {
                Some(model) => (0..p.shifts.len())
                    .map(|i| {
                        let [dy, dx] = model.shift_at(i as f64, cy, cx);
                        (dx, dy)
                    })
                    .collect(),
                None => vec![],
            };
            ((cx, cy), measured, fitted)
        })
        .collect()
}

fn draw_patches(
    pixels: &mut [u8],
    title: &str,
    local: &LocalAlignment,
    (ny, nx): (usize, usize),
) -> Result<(), Box<dyn std::error::Error>> {
    let root = BitMapBackend::with_buffer(pixels, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let paths = patch_paths(local);
    let largest = paths
        .iter()
        .flat_map(|(_, m, f)| m.iter().chain(f))
        .map(|(x, y)| x.hypot(*y))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    // The largest trajectory reaches 0.45 of the closest patches' spacing.
    let spacing = local
        .patches
        .iter()
        .map(|p| p.shape.0.min(p.shape.1) as f64)
        .fold(f64::INFINITY, f64::min);
    let scale = if largest > 0.0 {
        0.45 * spacing / largest
    } else {
        1.0
    };
    let side = nx.max(ny) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{title}: drift left in each patch, x{scale:.0}"),
            ("sans-serif", 20),
        )
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..side, 0.0..side)?;
    chart
        .configure_mesh()
        .x_desc("column (pixels)")
        .y_desc("row (pixels)")
        .max_light_lines(0)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .axis_desc_style(("sans-serif", 18))
        .label_style(("sans-serif", 14))
        .draw()?;
    let frame = [
        (0.0, 0.0),
        (nx as f64, 0.0),
        (nx as f64, ny as f64),
        (0.0, ny as f64),
        (0.0, 0.0),
    ];
    chart.draw_series(std::iter::once(PathElement::new(frame, BLACK)))?;
    let at = |(cx, cy): (f64, f64), path: &[(f64, f64)]| -> Vec<(f64, f64)> {
        path.iter()
            .map(|(dx, dy)| (cx + scale * dx, cy + scale * dy))
            .collect()
    };
    let (grey, orange, blue) = (
        RGBColor(120, 120, 120),
        RGBColor(230, 120, 20),
        RGBColor(31, 90, 180),
    );
    for (k, ((centre, measured, _), patch)) in paths.iter().zip(&local.patches).enumerate() {
        let colour = if patch.converged { grey } else { orange };
        let series = chart.draw_series(LineSeries::new(
            at(*centre, measured),
            colour.stroke_width(2),
        ))?;
        if k == 0 {
            series
                .label("measured (orange: not settled, left out)")
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], grey.stroke_width(2))
                });
        }
    }
    for (k, (centre, _, fitted)) in paths.iter().enumerate() {
        let series =
            chart.draw_series(LineSeries::new(at(*centre, fitted), blue.stroke_width(2)))?;
        if k == 0 && !fitted.is_empty() {
            series.label("the model").legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], blue.stroke_width(2))
            });
        }
    }
    chart.draw_series(
        paths
            .iter()
            .map(|(c, _, _)| Circle::new(*c, 3, BLACK.filled())),
    )?;
    finish(chart, &root)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The RGB pixels of a PNG plot, checked to be of [`SIZE`].
    fn decoded(png_bytes: Vec<u8>) -> Vec<u8> {
        let mut reader = png::Decoder::new(std::io::Cursor::new(png_bytes))
            .read_info()
            .unwrap();
        let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut pixels).unwrap();
        assert_eq!((info.width, info.height), SIZE);
        assert_eq!(info.color_type, png::ColorType::Rgb);
        pixels
    }

    #[test]
    fn the_plot_is_an_rgb_png_of_its_size_with_ink_on_it() {
        let shifts: Vec<[f64; 2]> = (0..30).map(|i| [0.1 * i as f64, -0.2 * i as f64]).collect();
        let mut out = Vec::new();
        write_drift_plot(&mut out, "test movie", &shifts, Some(&shifts), 0).unwrap();
        let pixels = decoded(out);
        let dark = pixels
            .chunks(3)
            .filter(|p| p.iter().all(|&c| c < 100))
            .count();
        assert!(dark > 2000, "only {dark} dark pixels: no axes or text?");
        // A single frame, or NaN shifts, still make a plot.
        write_drift_plot(&mut Vec::new(), "one", &[[0.0, 0.0]], None, 0).unwrap();
        write_drift_plot(&mut Vec::new(), "nan", &[[f64::NAN, 0.0]], None, 3).unwrap();
    }

    /// The patches' plot: grey trajectories, the model's in blue, orange for an unsettled
    /// patch; one without a model still draws.
    #[test]
    fn the_patches_plot_draws_each_patch_and_the_model() {
        use ufunc::registration::{Alignment, LocalMotion, MotionModel, PatchTrack};
        let frames = 10;
        let patches: Vec<PatchTrack> = (0..9)
            .map(|k| PatchTrack {
                origin: (100 * (k / 3), 100 * (k % 3)),
                shape: (100, 100),
                shifts: (0..frames)
                    .map(|i| [0.1 * i as f64, -0.05 * (k * i) as f64])
                    .collect(),
                peaks: vec![0.5; frames],
                converged: k != 4,
            })
            .collect();
        let mut coefficients_x = [0.0; 18];
        coefficients_x[0] = -0.2;
        let model = MotionModel {
            coefficients_y: [0.0; 18],
            coefficients_x,
            frame_shape: (300, 300),
            rms: [0.1, 0.1],
        };
        let mut local = LocalAlignment {
            global: Alignment {
                shifts: vec![[0.0; 2]; frames],
                peaks: vec![0.5; frames],
                iterations: 1,
                converged: true,
                sum: ndarray::Array2::zeros((300, 300)),
                alignment_shape: (300, 300),
            },
            patches,
            motion: LocalMotion::Fitted(Box::new(model)),
            sum: ndarray::Array2::zeros((300, 300)),
        };
        let count = |local: &LocalAlignment, colour: [u8; 3]| {
            let mut out = Vec::new();
            write_patch_plot(&mut out, "movie", local, (300, 300)).unwrap();
            decoded(out).chunks(3).filter(|p| p == &colour).count()
        };
        let (grey, orange, blue) = ([120, 120, 120], [230, 120, 20], [31, 90, 180]);
        assert!(count(&local, grey) > 200);
        assert!(count(&local, orange) > 20);
        assert!(count(&local, blue) > 200);
        local.motion = LocalMotion::Unfitted("too few".into());
        assert!(count(&local, grey) > 200);
        assert!(count(&local, blue) < 20); // the legend's key at most
    }
}
