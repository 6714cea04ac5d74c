//! Detector defects: pixels whose values do not come from the specimen (hot pixels, which count
//! in every frame; pixels a defect file lists; pixels the gain reference zeroes). Each adds to
//! every frame a pattern that does not move with the specimen, which pulls the frames' shifts
//! towards zero. As RELION's motion correction does, each is replaced in every frame by the
//! value of a good pixel near it.

use anyhow::{bail, Context, Result};
use ndarray::{Array2, ArrayView2, ArrayViewMut2};
use serde::Serialize;
use std::path::Path;

/// The defects of a detector's frames, and why each was taken for one.
#[derive(Debug, Clone)]
pub struct Defects {
    bad: Array2<bool>,
    /// `(row, col)` of each bad pixel.
    pixels: Vec<(usize, usize)>,
    /// `(row, col)` of the hot pixels among them (RELION's motion metadata lists these; the
    /// others it finds again from the defect file and the gain).
    pub hot: Vec<(usize, usize)>,
    pub counts: DefectCounts,
}

/// How many pixels each source made defects (a pixel counted once, by the first that found it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DefectCounts {
    /// Listed by `--defects`.
    pub listed: usize,
    /// Zero in the gain reference.
    pub zero_gain: usize,
    /// Above `--hot-pixels` standard deviations in the movie's unaligned sum.
    pub hot: usize,
}

/// A bad pixel is replaced by one of its good neighbours this far away on each axis (RELION's
/// 2, a 5x5 square), where there are more than [`FEWEST_NEIGHBOURS`]; otherwise by the mean of
/// the frame's good pixels.
const REACH: usize = 2;
const FEWEST_NEIGHBOURS: usize = 6;

impl Defects {
    /// No defects in frames of `shape`.
    pub fn new(shape: (usize, usize)) -> Defects {
        Defects {
            bad: Array2::from_elem(shape, false),
            pixels: Vec::new(),
            hot: Vec::new(),
            counts: DefectCounts::default(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.pixels.is_empty()
    }

    /// Marks `(y, x)`; whether it was good before.
    fn mark(&mut self, y: usize, x: usize) -> bool {
        let was_good = !std::mem::replace(&mut self.bad[[y, x]], true);
        if was_good {
            self.pixels.push((y, x));
        }
        was_good
    }

    /// The pixels `list` (read from `--defects`) names in frames of this shape: a rectangle
    /// partly beyond the frame is cut at its edge, one wholly beyond it is an error, as is a
    /// map of another shape.
    pub fn add_listed(&mut self, list: &DefectList) -> Result<()> {
        let (ny, nx) = self.bad.dim();
        let before = self.pixels.len();
        match list {
            DefectList::Rectangles { file, rectangles } => {
                for &(line, [x, y, w, h]) in rectangles {
                    if x >= nx || y >= ny {
                        bail!(
                            "{} line {line}: the rectangle `{x} {y} {w} {h}` holds no pixel of \
                             the frames of {ny}x{nx} (rows x columns)",
                            file.display()
                        );
                    }
                    for row in y..(y.saturating_add(h)).min(ny) {
                        for col in x..(x.saturating_add(w)).min(nx) {
                            self.mark(row, col);
                        }
                    }
                }
            }
            DefectList::Map { file, map } => {
                if map.dim() != (ny, nx) {
                    bail!(
                        "the defect map {} is {}x{} but the frames are {ny}x{nx}",
                        file.display(),
                        map.nrows(),
                        map.ncols()
                    );
                }
                for ((y, x), &v) in map.indexed_iter() {
                    if v != 0.0 {
                        self.mark(y, x);
                    }
                }
            }
        }
        self.counts.listed += self.pixels.len() - before;
        Ok(())
    }

    /// The pixels that `gain` (of the frames' shape) zeroes: they never count.
    pub fn add_zero_gain(&mut self, gain: ArrayView2<'_, f32>) {
        for ((y, x), &g) in gain.indexed_iter() {
            if g == 0.0 && self.mark(y, x) {
                self.counts.zero_gain += 1;
            }
        }
    }

    /// The pixels of `sum` (the frames added unaligned) above its mean by more than `sigma`
    /// standard deviations (RELION's test, at its 6), the mean and deviation over every pixel.
    /// A pixel that is NaN or infinite in some frame is hot too (the statistics are of the
    /// others).
    pub fn add_hot(&mut self, sum: ArrayView2<'_, f64>, sigma: f64) {
        let finite = || sum.iter().filter(|v| v.is_finite());
        let n = finite().count().max(1) as f64;
        let mean = finite().sum::<f64>() / n;
        let std = (finite().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt();
        let threshold = mean + sigma * std;
        for ((y, x), &v) in sum.indexed_iter() {
            if (v > threshold || !v.is_finite()) && self.mark(y, x) {
                self.counts.hot += 1;
                self.hot.push((y, x));
            }
        }
    }

    /// An error where the defects are so many that their neighbours would be too: more than
    /// a tenth of the pixels.
    pub fn check(&self, what: &str) -> Result<()> {
        let total = self.bad.len();
        if self.pixels.len() * 10 > total {
            bail!(
                "{what}: {} of its {total} pixels would be replaced as defects ({:?}): more than \
                 a tenth, so the frames would be more replacement than image",
                self.pixels.len(),
                self.counts
            );
        }
        Ok(())
    }

    /// Replaces every bad pixel of `frame` (frame `index` of the movie) by one of its good
    /// neighbours', chosen by a hash of the frame and the pixel (the same on every run), or,
    /// with too few good neighbours, by the mean of the frame's good pixels.
    pub fn fix(&self, mut frame: ArrayViewMut2<'_, f32>, index: usize) {
        let (ny, nx) = frame.dim();
        let mut mean = None;
        let mut near = Vec::with_capacity((2 * REACH + 1).pow(2));
        for &(y, x) in &self.pixels {
            near.clear();
            for row in y.saturating_sub(REACH)..(y + REACH + 1).min(ny) {
                for col in x.saturating_sub(REACH)..(x + REACH + 1).min(nx) {
                    if !self.bad[[row, col]] {
                        near.push(frame[[row, col]]);
                    }
                }
            }
            frame[[y, x]] = if near.len() > FEWEST_NEIGHBOURS {
                near[(mix(index, y, x) % near.len() as u64) as usize]
            } else {
                *mean.get_or_insert_with(|| self.good_mean(frame.view()))
            };
        }
    }

    fn good_mean(&self, frame: ArrayView2<'_, f32>) -> f32 {
        let (sum, count) = frame
            .iter()
            .zip(&self.bad)
            .filter(|(_, &bad)| !bad)
            .fold((0.0f64, 0usize), |(s, c), (&v, _)| (s + v as f64, c + 1));
        (sum / count.max(1) as f64) as f32
    }
}

/// The defects `--defects` lists, read once for every movie.
#[derive(Debug, Clone)]
pub enum DefectList {
    /// MotionCor2's defect file (`.txt`): per line, `x y w h`, a rectangle of `w x h` pixels
    /// from column `x`, row `y` of the frames as read (RELION's reading), with its line number.
    Rectangles {
        file: std::path::PathBuf,
        rectangles: Vec<(usize, [usize; 4])>,
    },
    /// A defect map: an image of the frames' size, read as they are, bad where not 0.
    Map {
        file: std::path::PathBuf,
        map: Array2<f32>,
    },
}

impl DefectList {
    /// Reads `file`: MotionCor2's defect file if its name ends in `.txt` (lowercase, as RELION
    /// tells them, so that RELION reads the file named in the motion metadata as we did), a
    /// defect map (MRC, TIFF or DM4) otherwise.
    pub fn read(file: &Path) -> Result<DefectList> {
        let extension = file
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or_default();
        if extension == "txt" {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("cannot read the defect file {}", file.display()))?;
            let mut rectangles = Vec::new();
            for (index, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let numbers: Option<Vec<usize>> =
                    line.split_whitespace().map(|w| w.parse().ok()).collect();
                match numbers.and_then(|n| <[usize; 4]>::try_from(n).ok()) {
                    Some(r) if r[2] > 0 && r[3] > 0 => rectangles.push((index + 1, r)),
                    _ => bail!(
                        "{} line {}: expected MotionCor2's `x y w h` (four whole numbers, w and \
                         h at least 1), got {line:?} (a SerialEM defect file converts to a \
                         defect map with IMOD's `clip defect`)",
                        file.display(),
                        index + 1
                    ),
                }
            }
            if rectangles.is_empty() {
                bail!("the defect file {} lists no rectangle", file.display());
            }
            return Ok(DefectList::Rectangles {
                file: file.to_owned(),
                rectangles,
            });
        }
        if !crate::io::EXTENSIONS.contains(&extension.to_ascii_lowercase().as_str())
            || extension.eq_ignore_ascii_case("txt")
        {
            bail!(
                "{}: --defects takes a defect map (an MRC, TIFF or DM4 image) or MotionCor2's defect \
                 file, whose name ends in .txt (lowercase, as RELION tells them)",
                file.display()
            );
        }
        let map = crate::io::read_image(file).context("cannot read the defect map")?;
        Ok(DefectList::Map {
            file: file.to_owned(),
            map,
        })
    }
}

/// A well-mixed 64-bit hash of a frame and a pixel (SplitMix64's finaliser).
fn mix(index: usize, y: usize, x: usize) -> u64 {
    let mut z = (index as u64) << 42 ^ (y as u64) << 21 ^ x as u64;
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` in a file `name` of this process's folder for these tests (under `target/`,
    /// which `cargo clean` removes).
    fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join(format!("defects-tests-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// MotionCor2's rectangles, clipped at the frame's edge; lines that are not four whole
    /// numbers, empty files, rectangles wholly outside, and names that are neither `.txt` nor
    /// an image are errors naming the file (and the line).
    #[test]
    fn a_defect_file_lists_rectangles() {
        let file = temp_file("defects.txt", "1 2 3 1\n\n9 0 5 2\n");
        let mut d = Defects::new((4, 10));
        d.add_listed(&DefectList::read(&file).unwrap()).unwrap();
        let mut pixels = d.pixels.clone();
        pixels.sort();
        assert_eq!(pixels, [(0, 9), (1, 9), (2, 1), (2, 2), (2, 3)]);
        assert_eq!(d.counts.listed, 5);
        for (name, text, says) in [
            (
                "bad.txt",
                "1 2 3\n",
                "bad.txt line 1: expected MotionCor2's `x y w h`",
            ),
            (
                "bad.txt",
                "0 0 1 1\nBadPixels 3\n",
                "bad.txt line 2: expected",
            ),
            ("bad.txt", "1 -2 3 4\n", "bad.txt line 1: expected"),
            ("bad.txt", "0 0 0 1\n", "bad.txt line 1: expected"),
            ("bad.txt", "\n\n", "bad.txt lists no rectangle"),
            (
                "bad.TXT",
                "0 0 1 1\n",
                "bad.TXT: --defects takes a defect map",
            ),
            ("bad.dat", "0 0 1 1\n", "bad.dat: --defects takes"),
        ] {
            let file = temp_file(name, text);
            let error = DefectList::read(&file).unwrap_err().to_string();
            assert!(error.contains(says), "{text:?}: {error}");
        }
        let outside = DefectList::read(&temp_file("outside.txt", "10 0 1 1\n")).unwrap();
        let error = Defects::new((4, 10))
            .add_listed(&outside)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(
                "outside.txt line 1: the rectangle `10 0 1 1` holds no pixel of the \
                 frames of 4x10"
            ),
            "{error}"
        );
    }

    /// A defect map marks its pixels that are not 0, as read (an MRC's row 0 is the frames'
    /// row 0); one of another shape is an error naming both shapes.
    #[test]
    fn a_defect_map_marks_its_nonzero_pixels() {
        let mut map = Array2::<f32>::zeros((4, 6));
        map[[0, 5]] = 1.0;
        map[[3, 1]] = -2.0;
        let file = temp_file("map.mrc", "");
        let mut out = std::fs::File::create(&file).unwrap();
        crate::io::mrc::write_mrc(&mut out, map.view(), 1.0, "defects").unwrap();
        let list = DefectList::read(&file).unwrap();
        let mut d = Defects::new((4, 6));
        d.add_listed(&list).unwrap();
        let mut pixels = d.pixels.clone();
        pixels.sort();
        assert_eq!(pixels, [(0, 5), (3, 1)]);
        let error = Defects::new((6, 4))
            .add_listed(&list)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("map.mrc is 4x6 but the frames are 6x4"),
            "{error}"
        );
    }

    /// Hot pixels stand out of the unaligned sum; a pixel already listed is not counted
    /// twice; zero-gain pixels are defects.
    #[test]
    fn hot_pixels_and_zero_gain_pixels_are_found() {
        let mut sum =
            Array2::from_shape_fn((32, 32), |(y, x)| 100.0 + ((y * 31 + x * 17) % 7) as f64);
        sum[[3, 4]] = 400.0;
        sum[[20, 30]] = 350.0;
        let mut gain = Array2::<f32>::ones((32, 32));
        gain[[3, 4]] = 0.0;
        gain[[0, 0]] = 0.0;
        let mut d = Defects::new((32, 32));
        d.add_zero_gain(gain.view());
        d.add_hot(sum.view(), 6.0);
        assert_eq!(
            d.counts,
            DefectCounts {
                listed: 0,
                zero_gain: 2,
                hot: 1
            }
        );
        assert!(d.bad[[20, 30]] && d.bad[[3, 4]] && d.bad[[0, 0]]);
        d.check("m.tif").unwrap();
        // A pixel that is not finite is hot; the others' statistics stay finite.
        sum[[10, 10]] = f64::NAN;
        sum[[11, 11]] = f64::INFINITY;
        let mut d = Defects::new((32, 32));
        d.add_hot(sum.view(), 6.0);
        assert_eq!(d.counts.hot, 4);
        assert!(d.bad[[10, 10]] && d.bad[[11, 11]] && d.bad[[3, 4]] && d.bad[[20, 30]]);
        let mut many = Defects::new((4, 4));
        many.add_zero_gain(Array2::<f32>::zeros((4, 4)).view());
        let error = many.check("m.tif").unwrap_err().to_string();
        assert!(error.contains("m.tif: 16 of its 16 pixels"), "{error}");
    }

    /// A bad pixel takes a good neighbour's value, the same on every call; good pixels stay;
    /// a pixel with too few good neighbours takes the mean of the good pixels.
    #[test]
    fn a_bad_pixel_takes_a_good_neighbours_value() {
        let frame = Array2::from_shape_fn((8, 9), |(y, x)| (10 * y + x) as f32);
        let mut d = Defects::new((8, 9));
        d.mark(4, 4);
        // A 3x3 block in the corner: (0, 0) has no good neighbour in reach.
        for (y, x) in [
            (0, 0),
            (0, 1),
            (1, 0),
            (1, 1),
            (0, 2),
            (2, 0),
            (2, 2),
            (1, 2),
            (2, 1),
        ] {
            d.mark(y, x);
        }
        let mut fixed = frame.clone();
        d.fix(fixed.view_mut(), 3);
        let mut again = frame.clone();
        d.fix(again.view_mut(), 3);
        assert_eq!(fixed, again);
        let near: Vec<f32> = (2..7)
            .flat_map(|y| (2..7).map(move |x| (y, x)))
            .filter(|&p| !d.bad[p])
            .map(|p| frame[p])
            .collect();
        assert!(near.contains(&fixed[[4, 4]]), "{}", fixed[[4, 4]]);
        let good: Vec<f32> = frame
            .indexed_iter()
            .filter(|(p, _)| !d.bad[*p])
            .map(|(_, &v)| v)
            .collect();
        let mean = good.iter().map(|&v| v as f64).sum::<f64>() / good.len() as f64;
        assert!(
            (fixed[[0, 0]] as f64 - mean).abs() < 1e-4,
            "{}",
            fixed[[0, 0]]
        );
        for (p, &v) in frame.indexed_iter() {
            if !d.bad[p] {
                assert_eq!(fixed[p], v);
            }
        }
        // Exactly 7 good neighbours take one of them; exactly 6, the mean.
        let mut edge = Defects::new((8, 9));
        // (0, 8), a corner: 8 pixels in reach, (1, 7) bad too leaves 7 good.
        edge.mark(0, 8);
        edge.mark(1, 7);
        let mut f = frame.clone();
        edge.fix(f.view_mut(), 0);
        let near: Vec<f32> = [(0, 6), (0, 7), (1, 6), (1, 8), (2, 6), (2, 7), (2, 8)]
            .iter()
            .map(|&p| frame[p])
            .collect();
        assert!(near.contains(&f[[0, 8]]), "{}", f[[0, 8]]);
        edge.mark(2, 8);
        let mut f = frame.clone();
        edge.fix(f.view_mut(), 0);
        let good_mean = edge.good_mean(frame.view());
        assert_eq!(f[[0, 8]], good_mean);
        // Other frames choose other neighbours (with 23 to choose from, 20 frames agree on
        // one by chance with odds of about 1 in 23^19).
        let choices: std::collections::HashSet<u32> = (0..20)
            .map(|i| {
                let mut f = frame.clone();
                d.fix(f.view_mut(), i);
                f[[4, 4]].to_bits()
            })
            .collect();
        assert!(choices.len() > 1);
    }
}
