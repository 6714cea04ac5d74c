//! Movies on disk: one [`Movie`] type over the npy, TIFF and MRC readers, each streaming one
//! frame at a time (memory holds one frame, never the whole movie), every sample type converted
//! to `f32`, an optional gain reference multiplied in; and the samples' byte decoding they share.

pub mod mrc;
pub mod npy;
pub mod tiff;

use anyhow::{bail, Context, Result};
use ndarray::{Array2, ArrayViewMut2};
use std::path::{Path, PathBuf};

/// A movie file's frames, one at a time.
pub trait FrameReader: Send {
    /// `(rows, cols)` of every frame.
    fn frame_shape(&self) -> (usize, usize);
    /// The number of frames.
    fn len(&self) -> usize;
    /// Reads frame `index` (< `len`) into `out`, of `frame_shape`.
    fn read_frame(&mut self, index: usize, out: ArrayViewMut2<'_, f32>) -> Result<()>;
}

/// An open movie: its reader, and the gain reference its frames are multiplied by.
pub struct Movie {
    path: PathBuf,
    reader: Box<dyn FrameReader>,
    gain: Option<Array2<f32>>,
}

/// The file extensions [`Movie::open`] reads.
pub const EXTENSIONS: &[&str] = &["npy", "tif", "tiff", "mrc", "mrcs", "st"];

impl Movie {
    /// Opens a movie by its extension (see [`EXTENSIONS`]); it must have at least one frame.
    pub fn open(path: &Path) -> Result<Movie> {
        let reader = open_reader(path).with_context(|| path.display().to_string())?;
        let (ny, nx) = reader.frame_shape();
        if reader.len() == 0 || ny == 0 || nx == 0 {
            bail!(
                "{}: empty movie ({} frames of {ny}x{nx})",
                path.display(),
                reader.len()
            );
        }
        Ok(Movie {
            path: path.to_owned(),
            reader,
            gain: None,
        })
    }

    /// Multiplies every frame by `gain`, a single frame of the same shape read from `gain_path`.
    pub fn with_gain(mut self, gain: Array2<f32>, gain_path: &Path) -> Result<Movie> {
        let (ny, nx) = self.frame_shape();
        if gain.dim() != (ny, nx) {
            bail!(
                "gain reference {} is {}x{} but the frames of {} are {ny}x{nx}",
                gain_path.display(),
                gain.nrows(),
                gain.ncols(),
                self.path.display()
            );
        }
        self.gain = Some(gain);
        Ok(self)
    }

    /// `(rows, cols)` of every frame.
    pub fn frame_shape(&self) -> (usize, usize) {
        self.reader.frame_shape()
    }

    /// The number of frames.
    pub fn len(&self) -> usize {
        self.reader.len()
    }

    /// Reads frame `index` into `out` (of `frame_shape`), multiplied by the gain if any.
    pub fn read_frame(&mut self, index: usize, mut out: ArrayViewMut2<'_, f32>) -> Result<()> {
        if index >= self.len() || out.dim() != self.frame_shape() {
            bail!(
                "{}: frame {index} of {} into a {:?} buffer (frames are {:?})",
                self.path.display(),
                self.len(),
                out.dim(),
                self.frame_shape()
            );
        }
        self.reader
            .read_frame(index, out.view_mut())
            .with_context(|| format!("{}: frame {index}", self.path.display()))?;
        if let Some(gain) = &self.gain {
            out *= gain;
        }
        Ok(())
    }

    /// Reads every frame (for small movies and tests).
    #[cfg(test)]
    pub fn read_all(&mut self) -> Result<ndarray::Array3<f32>> {
        let (ny, nx) = self.frame_shape();
        let mut all = ndarray::Array3::zeros((self.len(), ny, nx));
        for (i, frame) in all.outer_iter_mut().enumerate() {
            self.read_frame(i, frame)?;
        }
        Ok(all)
    }
}

impl ufunc::registration::FrameSource for Movie {
    fn frame_shape(&self) -> (usize, usize) {
        Movie::frame_shape(self)
    }
    fn len(&self) -> usize {
        Movie::len(self)
    }
    fn read_frame(
        &mut self,
        index: usize,
        out: ArrayViewMut2<'_, f32>,
    ) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
        Ok(Movie::read_frame(self, index, out)?)
    }
}

/// Reads a single 2-d image (a gain reference): a file of exactly one frame.
pub fn read_image(path: &Path) -> Result<Array2<f32>> {
    let mut movie = Movie::open(path)?;
    if movie.len() != 1 {
        bail!(
            "{}: expected a single image, found {} frames",
            path.display(),
            movie.len()
        );
    }
    let mut image = Array2::zeros(movie.frame_shape());
    movie.read_frame(0, image.view_mut())?;
    Ok(image)
}

fn open_reader(path: &Path) -> Result<Box<dyn FrameReader>> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    Ok(match ext.as_str() {
        "npy" => Box::new(npy::NpyReader::open(path)?),
        "tif" | "tiff" => Box::new(tiff::TiffReader::open(path)?),
        "mrc" | "mrcs" | "st" => Box::new(mrc::MrcReader::open(path)?),
        _ => bail!(
            "unknown movie format .{ext} (supported: {})",
            EXTENSIONS
                .iter()
                .map(|e| format!(".{e}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })
}

/// The sample types stored in movie files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sample {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    F16,
    F32,
    F64,
}

impl Sample {
    /// Bytes per sample.
    pub fn size(self) -> usize {
        match self {
            Sample::I8 | Sample::U8 => 1,
            Sample::I16 | Sample::U16 | Sample::F16 => 2,
            Sample::I32 | Sample::U32 | Sample::F32 => 4,
            Sample::F64 => 8,
        }
    }

    /// The name users know it by.
    pub fn name(self) -> &'static str {
        match self {
            Sample::I8 => "int8",
            Sample::U8 => "uint8",
            Sample::I16 => "int16",
            Sample::U16 => "uint16",
            Sample::I32 => "int32",
            Sample::U32 => "uint32",
            Sample::F16 => "float16",
            Sample::F32 => "float32",
            Sample::F64 => "float64",
        }
    }
}

/// Decodes `bytes` (samples of type `sample`, little- or big-endian, row-major) into `out`:
/// a contiguous `out` in pieces side by side (a frame of a large movie is 16 MB or more).
pub fn decode(bytes: &[u8], sample: Sample, little: bool, out: &mut ArrayViewMut2<'_, f32>) {
    use rayon::prelude::*;
    debug_assert_eq!(bytes.len(), out.len() * sample.size());
    const PIECE: usize = 1 << 16;
    match out.as_slice_mut() {
        Some(out) => out
            .par_chunks_mut(PIECE)
            .zip(bytes.par_chunks(PIECE * sample.size()))
            .for_each(|(out, bytes)| decode_into(bytes, sample, little, out.iter_mut())),
        // `iter_mut` walks `out` in row-major order whatever its strides, the order of the
        // samples on disk.
        None => decode_into(bytes, sample, little, out.iter_mut()),
    }
}

/// Decodes `bytes` into the samples `out` yields, in order.
fn decode_into<'a>(
    bytes: &[u8],
    sample: Sample,
    little: bool,
    out: impl Iterator<Item = &'a mut f32>,
) {
    // One sample's bytes to f32, for each type; `N` is the sample size.
    fn each<'a, const N: usize>(
        bytes: &[u8],
        little: bool,
        out: impl Iterator<Item = &'a mut f32>,
        f: impl Fn([u8; N]) -> f32,
    ) {
        for (o, chunk) in out.zip(bytes.chunks_exact(N)) {
            let mut b = [0u8; N];
            b.copy_from_slice(chunk);
            if !little {
                b.reverse();
            }
            *o = f(b);
        }
    }
    match sample {
        Sample::I8 => each::<1>(bytes, little, out, |b| b[0] as i8 as f32),
        Sample::U8 => each::<1>(bytes, little, out, |b| b[0] as f32),
        Sample::I16 => each::<2>(bytes, little, out, |b| i16::from_le_bytes(b) as f32),
        Sample::U16 => each::<2>(bytes, little, out, |b| u16::from_le_bytes(b) as f32),
        Sample::I32 => each::<4>(bytes, little, out, |b| i32::from_le_bytes(b) as f32),
        Sample::U32 => each::<4>(bytes, little, out, |b| u32::from_le_bytes(b) as f32),
        Sample::F16 => each::<2>(bytes, little, out, |b| half::f16::from_le_bytes(b).to_f32()),
        Sample::F32 => each::<4>(bytes, little, out, f32::from_le_bytes),
        Sample::F64 => each::<8>(bytes, little, out, |b| f64::from_le_bytes(b) as f32),
    }
}

/// Fills `buffer` from `file` at `offset`, in pieces read side by side: one reader copies a
/// frame out of the page cache at a few GB/s, several at many.
pub fn read_at(file: &std::fs::File, offset: u64, buffer: &mut [u8]) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use rayon::prelude::*;
        use std::os::unix::fs::FileExt;
        const PIECE: usize = 1 << 20;
        buffer
            .par_chunks_mut(PIECE)
            .enumerate()
            .try_for_each(|(i, piece)| file.read_exact_at(piece, offset + (i * PIECE) as u64))
    }
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = file;
        file.seek(SeekFrom::Start(offset))?;
        file.read_exact(buffer)
    }
}

/// The length of a file, for the truncation checks.
pub fn file_len(file: &std::fs::File) -> Result<u64> {
    Ok(file
        .metadata()
        .context("cannot read the file's size")?
        .len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array3;

    pub(crate) fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/movie")
            .join(name)
    }

    fn read(name: &str) -> Array3<f32> {
        Movie::open(&fixture(name))
            .and_then(|mut m| m.read_all())
            .unwrap_or_else(|e| panic!("{name}: {e:#}"))
    }

    fn error(name: &str) -> String {
        match Movie::open(&fixture(name)).and_then(|mut m| m.read_all()) {
            Ok(_) => panic!("{name} was read without error"),
            Err(e) => format!("{e:#}"),
        }
    }

    #[test]
    fn every_format_reads_the_same_frames_bit_for_bit() {
        let reference = read("movie_u16.npy");
        assert_eq!(reference.dim(), (3, 16, 20));
        let names = [
            "movie_u8.npy",
            "movie_i16.npy",
            "movie_f32.npy",
            "movie_f16.npy",
            "movie_f64.npy",
            "movie_u16_be.npy",
            "movie_u8_raw.tif",
            "movie_u8_lzw.tif",
            "movie_u8_deflate.tif",
            "movie_u16_raw.tif",
            "movie_u16_lzw.tif",
            "movie_u16_deflate.tif",
            "movie_f32_raw.tif",
            "movie_f32_lzw.tif",
            "movie_f32_deflate.tif",
            "movie_mode0.mrc",
            "movie_mode1.mrc",
            "movie_mode2.mrc",
            "movie_mode6.mrc",
            "movie_mode12.mrc",
            "movie_stack.mrcs",
            "movie_exthdr.mrc",
            "movie_mode1_be.mrc",
        ];
        for name in names {
            let frames = read(name);
            let same = frames.dim() == reference.dim()
                && frames
                    .iter()
                    .zip(&reference)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{name} differs from movie_u16.npy");
        }
    }

    #[test]
    fn a_2d_npy_is_one_frame() {
        let all = read("movie_u16.npy");
        let frame = read("frame_2d.npy");
        assert_eq!(frame.dim(), (1, 16, 20));
        assert_eq!(
            frame.index_axis(ndarray::Axis(0), 0),
            all.index_axis(ndarray::Axis(0), 0)
        );
    }

    #[test]
    fn the_gain_multiplies_every_frame() {
        let expected = read("movie_times_gain.npy");
        for gain_name in ["gain.mrc", "gain.tif"] {
            let gain = read_image(&fixture(gain_name)).unwrap();
            let mut movie = Movie::open(&fixture("movie_mode1.mrc"))
                .unwrap()
                .with_gain(gain, &fixture(gain_name))
                .unwrap();
            assert_eq!(movie.read_all().unwrap(), expected, "{gain_name}");
        }
    }

    #[test]
    fn a_gain_of_the_wrong_shape_names_both_files_and_shapes() {
        let path = fixture("gain_wrong_shape.mrc");
        let gain = read_image(&path).unwrap();
        let err = Movie::open(&fixture("movie_mode2.mrc"))
            .unwrap()
            .with_gain(gain, &path)
            .err()
            .map(|e| format!("{e:#}"))
            .unwrap_or_default();
        for part in ["gain_wrong_shape.mrc", "8x10", "movie_mode2.mrc", "16x20"] {
            assert!(err.contains(part), "{err:?} lacks {part:?}");
        }
        let err = read_image(&fixture("movie_mode2.mrc")).unwrap_err();
        assert!(format!("{err:#}").contains("expected a single image, found 3 frames"));
    }

    /// Frames larger than the pieces they are read (1 MiB) and decoded (65536 samples) in:
    /// every sample lands where it belongs, big-endian ones swapped.
    #[test]
    fn large_frames_are_read_and_decoded_whole() {
        let dir = std::env::temp_dir().join(format!("ufunc-io-large-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (frames, ny, nx) = (2, 700, 800);
        let value = |f: usize, y: usize, x: usize| ((f * 7919 + y * 613 + x * 31) % 65521) as u16;
        // An .npy of big-endian uint16 (1.1 MB a frame), written by hand.
        let dict = format!(
            "{{'descr': '>u2', 'fortran_order': False, 'shape': ({frames}, {ny}, {nx}), }}"
        );
        let mut header = dict.into_bytes();
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(b' ');
        }
        header.push(b'\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((header.len() as u16).to_le_bytes());
        bytes.extend(header);
        for f in 0..frames {
            for y in 0..ny {
                for x in 0..nx {
                    bytes.extend(value(f, y, x).to_be_bytes());
                }
            }
        }
        let npy = dir.join("large.npy");
        std::fs::write(&npy, bytes).unwrap();
        let read = Movie::open(&npy).and_then(|mut m| m.read_all()).unwrap();
        let want = Array3::from_shape_fn((frames, ny, nx), |(f, y, x)| value(f, y, x) as f32);
        assert_eq!(read, want);
        // An MRC of one float32 image (2.2 MB).
        let image = want.index_axis(ndarray::Axis(0), 1).mapv(|v| v * 0.5 - 7.0);
        let mrc = dir.join("large.mrc");
        let mut file = std::fs::File::create(&mrc).unwrap();
        crate::io::mrc::write_mrc(&mut file, image.view(), 1.0, "large").unwrap();
        drop(file);
        assert_eq!(read_image(&mrc).unwrap(), image);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_files_are_errors_naming_the_file_and_the_problem() {
        let cases = [
            ("bad_truncated.mrc", "truncated"),
            ("bad_mode.mrc", "unknown MRC mode 7"),
            ("bad_empty.mrc", "empty movie (0 frames"),
            (
                "bad_short_header.mrc",
                "shorter than the 1024-byte MRC header",
            ),
            ("bad_mixed_sizes.tif", "page 1 is 8x10 but page 0 is 16x20"),
            ("bad_garbage.tif", "not a readable TIFF"),
            ("bad_empty.npy", "empty movie (0 frames"),
            ("bad_1d.npy", "expected 2 or 3 dimensions"),
            ("bad_4d.npy", "expected 2 or 3 dimensions"),
            ("bad_truncated.npy", "truncated"),
            ("bad_complex.npy", "unsupported npy data type"),
            ("bad_fortran.npy", "Fortran"),
            ("missing.mrc", "cannot open"),
            ("gain.txt", "unknown movie format .txt"),
        ];
        for (name, problem) in cases {
            let err = error(name);
            assert!(err.contains(name), "{name}: {err:?} does not name the file");
            assert!(err.contains(problem), "{name}: {err:?} lacks {problem:?}");
        }
    }
}
