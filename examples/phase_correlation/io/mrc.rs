//! MRC2014 files (`.mrc`, `.mrcs`, `.st`): a stack of NZ frames of NY rows by NX columns after a
//! 1024-byte header and NSYMBT bytes of extended header. Modes 0 (int8), 1 (int16), 2 (float32),
//! 6 (uint16), 12 (float16) and SerialEM's 101 (4-bit) are read, in the byte order the machine
//! stamp (MACHST) gives; the writers write little-endian float32 or float16 images and image
//! stacks. No maintained crate reads MRC, hence this one.
//!
//! Header words used (4 bytes each, from byte 0): NX NY NZ MODE at 0..16, MX MY MZ at 28..40,
//! CELLA at 40..52, MAPC MAPR MAPS at 64..76, DMIN DMAX DMEAN at 76..88, ISPG at 88, NSYMBT at
//! 92, EXTTYP at 104, NVERSION at 108, MAP ("MAP ") at 208, MACHST at 212, RMS at 216, NLABL at
//! 220, then ten 80-character labels from 224.

use super::{file_len, show_bytes, RawFrames, Sample, Values};
use anyhow::{bail, Context, Result};
use half::{f16, slice::HalfFloatSliceExt};
use ndarray::{Array2, ArrayView2};
use std::borrow::Cow;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

const HEADER: usize = 1024;

/// Opens an MRC file's frames: reads and checks the header, and the file's size against it.
pub fn open(path: &Path) -> Result<RawFrames> {
    let mut file = File::open(path).context("cannot open")?;
    let len = file_len(&file)?;
    let mut header = [0u8; HEADER];
    if len < HEADER as u64 {
        bail!("{len} bytes: shorter than the 1024-byte MRC header");
    }
    file.read_exact(&mut header)
        .context("cannot read the header")?;
    if &header[208..212] != b"MAP " {
        bail!("not an MRC2014 file: no \"MAP \" at byte 208");
    }
    // MACHST: 0x44 0x44 (or 0x44 0x41) little-endian, 0x11 0x11 big-endian.
    let little = match header[212] {
        0x44 => true,
        0x11 => false,
        other => bail!(
            "unknown MRC machine stamp 0x{other:02x} (expected 0x44 little-endian or 0x11 \
             big-endian)"
        ),
    };
    let word = |i: usize| {
        let b: [u8; 4] = [
            header[4 * i],
            header[4 * i + 1],
            header[4 * i + 2],
            header[4 * i + 3],
        ];
        if little {
            i32::from_le_bytes(b)
        } else {
            i32::from_be_bytes(b)
        }
    };
    let (nx, ny, nz, mode, nsymbt) = (word(0), word(1), word(2), word(3), word(23));
    let cell_x = f32::from_bits(word(10) as u32);
    let pixel_size = Some(cell_x / word(7) as f32)
        .filter(|p| word(7) > 0 && cell_x > 0.0 && p.is_finite() && *p > 0.0);
    let values = match mode {
        0 => Values::Samples(Sample::I8),
        1 => Values::Samples(Sample::I16),
        2 => Values::Samples(Sample::F32),
        6 => Values::Samples(Sample::U16),
        12 => Values::Samples(Sample::F16),
        101 => Values::Nibbles,
        3 | 4 => bail!("MRC mode {mode} (complex) is not supported: movies are real images"),
        _ => bail!(
            "unknown MRC mode {mode} (supported: 0 int8, 1 int16, 2 float32, 6 uint16, \
                 12 float16, 101 4-bit)"
        ),
    };
    if nx < 0 || ny < 0 || nz < 0 || nsymbt < 0 {
        bail!("negative size in the header: NX={nx} NY={ny} NZ={nz} NSYMBT={nsymbt}");
    }
    let (nx, ny, nz) = (nx as u64, ny as u64, nz as u64);
    let data_offset = HEADER as u64 + nsymbt as u64;
    // Checked: sizes of up to 2^31 each make more than 2^64 bytes.
    let frame_bytes = values.frame_bytes((ny, nx));
    let expected = frame_bytes
        .and_then(|f| f.checked_mul(nz))
        .and_then(|d| d.checked_add(data_offset));
    if expected.is_none_or(|expected| len < expected) {
        bail!(
            "truncated: the file has {len} bytes, the header describes {} \
                 (1024 + {nsymbt} extended header + {nz} frames of {ny}x{nx} {})",
            show_bytes(expected),
            values.name()
        );
    }
    // No more than the file's length, as just checked.
    let shape = (ny as usize, nx as usize);
    let frames = RawFrames::new(file, data_offset, nz as usize, shape, values, little);
    Ok(frames.with_pixel_size(pixel_size))
}

/// How the values are written: float32 (mode 2) or float16 (mode 12, half the bytes, as
/// RELION's `--float16` writes its sums).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    #[default]
    Float32,
    Float16,
}

impl Precision {
    fn mode(self) -> i32 {
        match self {
            Precision::Float32 => 2,
            Precision::Float16 => 12,
        }
    }

    fn bytes(self) -> usize {
        match self {
            Precision::Float32 => 4,
            Precision::Float16 => 2,
        }
    }

    /// `image`'s values in this precision, little-endian, row by row, into `bytes`; for
    /// float16 also the values as written (its nearest), for the statistics. An error where a
    /// value is beyond float16's range (65504), which it would hold as infinite.
    fn encode(
        self,
        image: ArrayView2<'_, f32>,
        bytes: &mut Vec<u8>,
    ) -> Result<Option<Array2<f32>>> {
        bytes.resize(image.len() * self.bytes(), 0);
        if self == Precision::Float32 {
            for (b, &v) in bytes.chunks_exact_mut(4).zip(image) {
                b.copy_from_slice(&v.to_le_bytes());
            }
            return Ok(None);
        }
        let mut rounded = image.as_standard_layout().into_owned();
        let mut halves = vec![f16::ZERO; image.ncols()];
        let rows = bytes.chunks_exact_mut(2 * image.ncols().max(1));
        for (mut row, out) in rounded.rows_mut().into_iter().zip(rows) {
            let row = row
                .as_slice_mut()
                .expect("an owned array's rows are contiguous");
            // Whole rows at a time, which the half crate converts with the CPU's F16C.
            halves.convert_from_f32_slice(row);
            if halves.iter().any(|h| h.is_infinite()) {
                let largest = image.iter().fold(0f32, |m, v| m.max(v.abs()));
                bail!(
                    "values up to {largest} do not fit in float16 (MRC mode 12 holds at most \
                     65504): leave out --float16"
                );
            }
            halves.convert_to_f32_slice(row);
            for (b, h) in out.chunks_exact_mut(2).zip(&halves) {
                b.copy_from_slice(&h.to_le_bytes());
            }
        }
        Ok(Some(rounded))
    }
}

/// Writes `image` as a little-endian MRC2014 float32 file (mode 2, NZ = 1), with one label and
/// a pixel size of `pixel_size` Å (in CELLA). Statistics (DMIN, DMAX, DMEAN, RMS) are filled in.
pub fn write_mrc(
    out: &mut impl Write,
    image: ArrayView2<'_, f32>,
    pixel_size: f32,
    label: &str,
) -> Result<()> {
    write_mrc_in(out, image, pixel_size, label, Precision::Float32)
}

/// [`write_mrc`] in `precision`; the statistics are those of the values as written.
pub fn write_mrc_in(
    out: &mut impl Write,
    image: ArrayView2<'_, f32>,
    pixel_size: f32,
    label: &str,
    precision: Precision,
) -> Result<()> {
    let mut bytes = Vec::new();
    let rounded = precision.encode(image, &mut bytes)?;
    let image = rounded.as_ref().map_or(image, |r| r.view());
    let mut stats = Statistics::default();
    stats.add(image);
    out.write_all(&header(
        image.dim(),
        1,
        precision,
        pixel_size,
        &stats,
        label,
    )?)?;
    out.write_all(&bytes)?;
    Ok(())
}

/// Writes an image stack (MRC2014 float32 or float16, NZ images, ISPG 0 and MZ 1 as mrcfile
/// marks a stack), frame by frame, to a file whose statistics are known only at the end: the
/// header is written again by [`MrcStackWriter::finish`].
pub struct MrcStackWriter<W: Write + Seek> {
    out: W,
    shape: (usize, usize),
    precision: Precision,
    written: Vec<bool>,
    pixel_size: f32,
    label: String,
    stats: Statistics,
    /// An image's bytes, kept from one image to the next.
    bytes: Vec<u8>,
}

impl<W: Write + Seek> MrcStackWriter<W> {
    /// A stack of `frames` images of `(rows, cols)` in `out`, of `pixel_size` Å, labelled,
    /// written in `precision`.
    pub fn new(
        mut out: W,
        shape: (usize, usize),
        frames: usize,
        precision: Precision,
        pixel_size: f32,
        label: &str,
    ) -> Result<Self> {
        let stats = Statistics::default();
        out.write_all(&header(
            shape, frames, precision, pixel_size, &stats, label,
        )?)?;
        Ok(MrcStackWriter {
            out,
            shape,
            precision,
            written: vec![false; frames],
            pixel_size,
            label: label.to_owned(),
            stats,
            bytes: Vec::new(),
        })
    }

    /// Writes image `index` of the stack (each once, in any order).
    pub fn write_frame(&mut self, index: usize, image: ArrayView2<'_, f32>) -> Result<()> {
        let frames = self.written.len();
        match self.written.get(index) {
            None => bail!("the stack has {frames} images, not an image {index}"),
            Some(true) => bail!("image {index} of the stack is written twice"),
            Some(false) if image.dim() != self.shape => bail!(
                "image {index} is {}x{}, not {}x{} as the stack's",
                image.nrows(),
                image.ncols(),
                self.shape.0,
                self.shape.1
            ),
            Some(false) => {}
        }
        let rounded = self.precision.encode(image, &mut self.bytes)?;
        let image = rounded.as_ref().map_or(image, |r| r.view());
        self.out
            .seek(SeekFrom::Start((HEADER + index * self.bytes.len()) as u64))?;
        self.out.write_all(&self.bytes)?;
        self.stats.add(image);
        self.written[index] = true;
        Ok(())
    }

    /// Writes the header again with the statistics of every image, once all are written.
    pub fn finish(mut self) -> Result<W> {
        if let Some(missing) = self.written.iter().position(|w| !w) {
            bail!("image {missing} of the stack was never written");
        }
        let frames = self.written.len();
        let header = header(
            self.shape,
            frames,
            self.precision,
            self.pixel_size,
            &self.stats,
            &self.label,
        )?;
        self.out.seek(SeekFrom::Start(0))?;
        self.out.write_all(&header)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// DMIN, DMAX, DMEAN and RMS of the values added so far: each image's mean and squared
/// deviations from it in two passes, merged with the others' (Chan, Golub and LeVeque), so
/// that an image of one value has an RMS of 0 however large the value.
#[derive(Debug)]
struct Statistics {
    min: f32,
    max: f32,
    mean: f64,
    /// The sum of the squared deviations from `mean`.
    deviations: f64,
    count: usize,
}

impl Default for Statistics {
    fn default() -> Self {
        Statistics {
            min: f32::INFINITY,
            max: f32::NEG_INFINITY,
            mean: 0.0,
            deviations: 0.0,
            count: 0,
        }
    }
}

/// Values taken at a time by [`Statistics::add`]: independent sums that the compiler
/// vectorises (one running sum would wait on each addition).
const LANES: usize = 8;

/// `f` of every value of `image`, row by row, `LANES` at a time (lane `k` of each chunk in
/// accumulator `k`; the rest of a row in lane 0).
fn each_lane(image: ArrayView2<'_, f32>, mut f: impl FnMut(usize, f32)) {
    for row in image.rows() {
        let row = row
            .to_slice()
            .map(Cow::Borrowed)
            .unwrap_or_else(|| row.to_vec().into());
        let chunks = row.chunks_exact(LANES);
        for &v in chunks.remainder() {
            f(0, v);
        }
        for chunk in chunks {
            for (k, &v) in chunk.iter().enumerate() {
                f(k, v);
            }
        }
    }
}

impl Statistics {
    fn add(&mut self, image: ArrayView2<'_, f32>) {
        if image.is_empty() {
            return;
        }
        let mut min = [f32::INFINITY; LANES];
        let mut max = [f32::NEG_INFINITY; LANES];
        let mut sum = [0f64; LANES];
        each_lane(image, |k, v| {
            min[k] = min[k].min(v);
            max[k] = max[k].max(v);
            sum[k] += v as f64;
        });
        let n = image.len() as f64;
        let mean = sum.iter().sum::<f64>() / n;
        let mut squares = [0f64; LANES];
        each_lane(image, |k, v| squares[k] += (v as f64 - mean).powi(2));
        let deviations = squares.iter().sum::<f64>();
        self.min = min.into_iter().fold(self.min, f32::min);
        self.max = max.into_iter().fold(self.max, f32::max);
        let before = self.count as f64;
        let total = before + n;
        let delta = mean - self.mean;
        self.mean += delta * n / total;
        self.deviations += deviations + delta * delta * before * n / total;
        self.count += image.len();
    }

    /// `(min, max, mean, rms)`, where RMS is the standard deviation from the mean (MRC2014's);
    /// zeros with no values.
    fn summary(&self) -> (f32, f32, f32, f32) {
        if self.count == 0 {
            return (0.0, 0.0, 0.0, 0.0);
        }
        let rms = (self.deviations / self.count as f64).sqrt();
        (self.min, self.max, self.mean as f32, rms as f32)
    }
}

/// The header of a stack of `frames` images of `(ny, nx)` in `precision`.
fn header(
    (ny, nx): (usize, usize),
    frames: usize,
    precision: Precision,
    pixel_size: f32,
    stats: &Statistics,
    label: &str,
) -> Result<[u8; HEADER]> {
    let mut h = [0u8; HEADER];
    let mut put = |word: usize, bytes: [u8; 4]| h[4 * word..4 * word + 4].copy_from_slice(&bytes);
    let (nxi, nyi, nzi) = (
        i32::try_from(nx)?,
        i32::try_from(ny)?,
        i32::try_from(frames)?,
    );
    for (word, v) in [
        (0, nxi),
        (1, nyi),
        (2, nzi),
        (3, precision.mode()),
        (7, nxi),
        (8, nyi),
        (9, 1),
    ] {
        put(word, v.to_le_bytes());
    }
    for (word, v) in [
        (10, nx as f32 * pixel_size),
        (11, ny as f32 * pixel_size),
        (12, pixel_size),
    ] {
        put(word, v.to_le_bytes());
    }
    for (word, v) in [(13, 90f32), (14, 90.0), (15, 90.0)] {
        put(word, v.to_le_bytes());
    }
    for (word, v) in [
        (16, 1i32),
        (17, 2),
        (18, 3),
        (22, 0),
        (23, 0),
        (27, 20141),
        (55, 1),
    ] {
        put(word, v.to_le_bytes());
    }
    let (min, max, mean, rms) = stats.summary();
    for (word, v) in [(19, min), (20, max), (21, mean), (54, rms)] {
        put(word, v.to_le_bytes());
    }
    put(52, *b"MAP ");
    put(53, [0x44, 0x44, 0, 0]);
    let label = label.as_bytes();
    let len = label.len().min(80);
    h[224..224 + len].copy_from_slice(&label[..len]);
    h[224 + len..304].fill(b' ');
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::FrameReader;
    use ndarray::Array2;

    #[test]
    fn written_files_read_back_exactly() {
        let image = Array2::from_shape_fn((5, 7), |(y, x)| y as f32 * 10.0 - x as f32 * 0.25);
        let mut bytes = Vec::new();
        write_mrc(&mut bytes, image.view(), 1.5, "test label").unwrap();
        assert_eq!(bytes.len(), 1024 + 5 * 7 * 4);
        let dir = std::env::temp_dir().join(format!("ufunc-mrc-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("image.mrc");
        std::fs::write(&path, &bytes).unwrap();
        let mut reader = open(&path).unwrap();
        assert_eq!((reader.len(), reader.frame_shape()), (1, (5, 7)));
        let mut back = Array2::zeros((5, 7));
        reader.read_frame(0, back.view_mut()).unwrap();
        assert_eq!(back, image);
        assert_eq!(&bytes[224..234], b"test label");
        assert_eq!(
            f32::from_le_bytes(bytes[40..44].try_into().unwrap()),
            7.0 * 1.5
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A stack written out of order reads back as its images, with the statistics of them all
    /// and the header of an image stack (ISPG 0, MZ 1); images written twice, beyond the
    /// stack, of another shape or never are errors.
    #[test]
    fn stacks_read_back_exactly_with_their_statistics() {
        let images: Vec<Array2<f32>> = (0..3)
            .map(|k| Array2::from_shape_fn((4, 6), |(y, x)| (k * 100 + y * 6 + x) as f32 - 7.5))
            .collect();
        let out = std::io::Cursor::new(Vec::new());
        let mut stack =
            MrcStackWriter::new(out, (4, 6), 3, Precision::Float32, 0.8, "a stack").unwrap();
        for k in [2, 0, 1] {
            stack.write_frame(k, images[k].view()).unwrap();
        }
        for (index, image, error) in [
            (1, images[1].view(), "image 1 of the stack is written twice"),
            (
                3,
                images[0].view(),
                "the stack has 3 images, not an image 3",
            ),
        ] {
            let message = stack.write_frame(index, image).unwrap_err().to_string();
            assert_eq!(message, error);
        }
        let bytes = stack.finish().unwrap().into_inner();
        assert_eq!(bytes.len(), 1024 + 3 * 4 * 6 * 4);
        let word = |w: usize| i32::from_le_bytes(bytes[4 * w..4 * w + 4].try_into().unwrap());
        let float = |w: usize| f32::from_le_bytes(bytes[4 * w..4 * w + 4].try_into().unwrap());
        assert_eq!([word(0), word(1), word(2), word(3)], [6, 4, 3, 2]);
        assert_eq!((word(9), word(22)), (1, 0), "MZ and ISPG of an image stack");
        let all: Vec<f64> = images.iter().flatten().map(|&v| v as f64).collect();
        let mean = all.iter().sum::<f64>() / all.len() as f64;
        let rms = (all.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / all.len() as f64).sqrt();
        assert_eq!((float(19), float(20)), (-7.5, 215.5));
        assert!((float(21) as f64 - mean).abs() < 1e-4 && (float(54) as f64 - rms).abs() < 1e-3);
        assert_eq!(float(12), 0.8);

        let dir = std::env::temp_dir().join(format!("ufunc-mrc-stack-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("stack.mrcs");
        std::fs::write(&path, &bytes).unwrap();
        let mut reader = open(&path).unwrap();
        assert_eq!((reader.len(), reader.frame_shape()), (3, (4, 6)));
        assert_eq!(reader.pixel_size(), Some(0.8));
        let mut back = Array2::zeros((4, 6));
        for (k, image) in images.iter().enumerate() {
            reader.read_frame(k, back.view_mut()).unwrap();
            assert_eq!(&back, image);
        }
        std::fs::remove_dir_all(&dir).unwrap();

        let out = std::io::Cursor::new(Vec::new());
        let mut stack =
            MrcStackWriter::new(out, (4, 6), 2, Precision::Float32, 1.0, "short").unwrap();
        let wrong = Array2::<f32>::zeros((6, 4));
        let message = stack.write_frame(0, wrong.view()).unwrap_err().to_string();
        assert_eq!(message, "image 0 is 6x4, not 4x6 as the stack's");
        stack.write_frame(1, images[0].view()).unwrap();
        let message = stack.finish().unwrap_err().to_string();
        assert_eq!(message, "image 0 of the stack was never written");
    }

    /// Float16 files (mode 12) read back as float16's nearest values, with their statistics,
    /// in half the bytes, images and stacks alike; a value beyond float16's range is refused.
    #[test]
    fn float16_files_hold_the_nearest_values() {
        let image = Array2::from_shape_fn((3, 5), |(y, x)| (y * 5 + x) as f32 * 1.1 - 4.0);
        let nearest = image.mapv(|v| f16::from_f32(v).to_f32());
        assert_ne!(nearest, image, "values that float16 rounds");
        let dir = std::env::temp_dir().join(format!("ufunc-mrc-f16-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut single = Vec::new();
        write_mrc_in(&mut single, image.view(), 1.0, "f16", Precision::Float16).unwrap();
        assert_eq!(single.len(), 1024 + 15 * 2);
        let mut stack = MrcStackWriter::new(
            std::io::Cursor::new(Vec::new()),
            (3, 5),
            2,
            Precision::Float16,
            1.0,
            "f16 stack",
        )
        .unwrap();
        stack.write_frame(1, image.view()).unwrap();
        stack.write_frame(0, image.view()).unwrap();
        let stacked = stack.finish().unwrap().into_inner();
        assert_eq!(stacked.len(), 1024 + 2 * 15 * 2);
        for (name, bytes, frames) in [("single.mrc", &single, 1), ("stack.mrcs", &stacked, 2)] {
            assert_eq!(i32::from_le_bytes(bytes[12..16].try_into().unwrap()), 12);
            let mean = f32::from_le_bytes(bytes[84..88].try_into().unwrap());
            assert!(
                (mean - nearest.mean().unwrap()).abs() < 1e-6,
                "{name}: {mean}"
            );
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            let mut reader = open(&path).unwrap();
            assert_eq!(reader.len(), frames);
            let mut back = Array2::zeros((3, 5));
            for k in 0..frames {
                reader.read_frame(k, back.view_mut()).unwrap();
                assert_eq!(back, nearest, "{name}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
        let mut large = image.clone();
        large[[2, 1]] = -70000.0;
        let error = write_mrc_in(&mut Vec::new(), large.view(), 1.0, "", Precision::Float16)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("values up to 70000 do not fit in float16"),
            "{error}"
        );
    }

    /// Images of one value have an RMS of 0 however large the value, and images of different
    /// means merge into the statistics of all their values.
    #[test]
    fn statistics_are_those_of_all_the_values() {
        let mut stats = Statistics::default();
        stats.add(Array2::from_elem((3, 11), 1e6f32).view());
        stats.add(Array2::from_elem((2, 11), 1e6f32).view());
        assert_eq!(stats.summary(), (1e6, 1e6, 1e6, 0.0));
        let (a, b) = (
            Array2::from_shape_fn((4, 9), |(y, x)| (y * 9 + x) as f32),
            Array2::from_shape_fn((5, 3), |(y, x)| 1000.0 + (y * x) as f32 * 0.5),
        );
        let mut stats = Statistics::default();
        stats.add(a.view());
        stats.add(b.t());
        let all: Vec<f64> = a.iter().chain(b.iter()).map(|&v| v as f64).collect();
        let mean = all.iter().sum::<f64>() / all.len() as f64;
        let rms = (all.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / all.len() as f64).sqrt();
        let (min, max, m, r) = stats.summary();
        assert_eq!((min, max), (0.0, 1004.0));
        assert!(((m as f64) - mean).abs() < 1e-3 && ((r as f64) - rms).abs() < 1e-3);
        assert_eq!(Statistics::default().summary(), (0.0, 0.0, 0.0, 0.0));
    }
}
