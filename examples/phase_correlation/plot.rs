//! The drift plot: each frame's shift (dx, dy) in pixels joined in frame order, frame numbers
//! marked, and the true trajectory beside it when it is known. Drawn by plotters into an RGB
//! buffer and encoded with `png`; text uses an embedded DejaVu Sans subset (font/LICENSE), so
//! nothing depends on the system's fonts.

use crate::output::write_png;
use anyhow::{anyhow, Result};
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};
use std::io::Write;
use std::sync::OnceLock;

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

/// Writes the drift plot of `shifts` (`[dy, dx]` per frame) as a PNG, titled `title`.
pub fn write_drift_plot(
    out: &mut impl Write,
    title: &str,
    shifts: &[[f64; 2]],
    truth: Option<&[[f64; 2]]>,
) -> Result<()> {
    ensure_font()?;
    let (w, h) = SIZE;
    let mut pixels = vec![255u8; (w * h * 3) as usize];
    draw(&mut pixels, title, shifts, truth)
        .map_err(|e| anyhow!("cannot draw the drift plot: {e}"))?;
    write_png(out, w as usize, h as usize, png::ColorType::Rgb, &pixels)
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
        .label("measured shift (frame 0 at the origin)")
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
                i.to_string(),
                (6, -16),
                ("sans-serif", 14).into_font().color(&BLACK),
            )
    }))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plot_is_an_rgb_png_of_its_size_with_ink_on_it() {
        let shifts: Vec<[f64; 2]> = (0..30).map(|i| [0.1 * i as f64, -0.2 * i as f64]).collect();
        let mut out = Vec::new();
        write_drift_plot(&mut out, "test movie", &shifts, Some(&shifts)).unwrap();
        let mut reader = png::Decoder::new(std::io::Cursor::new(out))
            .read_info()
            .unwrap();
        let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut pixels).unwrap();
        assert_eq!((info.width, info.height), SIZE);
        assert_eq!(info.color_type, png::ColorType::Rgb);
        let dark = pixels
            .chunks(3)
            .filter(|p| p.iter().all(|&c| c < 100))
            .count();
        assert!(dark > 2000, "only {dark} dark pixels: no axes or text?");
        // A single frame, or NaN shifts, still make a plot.
        write_drift_plot(&mut Vec::new(), "one", &[[0.0, 0.0]], None).unwrap();
        write_drift_plot(&mut Vec::new(), "nan", &[[f64::NAN, 0.0]], None).unwrap();
    }
}
