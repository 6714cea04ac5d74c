//! Movies on disk: one [`Movie`] type over the npy, TIFF, MRC, EER and DM readers, each streaming
//! one frame at a time (memory holds one frame, never the whole movie), every sample type
//! converted to `f32`, an optional gain reference multiplied in; and the samples' byte decoding they share.

pub mod dm;
pub mod eer;
pub mod mrc;
pub mod npy;
pub mod tiff;

use crate::defects::Defects;
use anyhow::{bail, Context, Result};
use eer::EerRendering;
use ndarray::{Array2, ArrayViewMut2, Axis};
use std::path::{Path, PathBuf};

/// A movie file's frames, one at a time.
pub trait FrameReader: Send {
    /// `(rows, cols)` of every frame.
    fn frame_shape(&self) -> (usize, usize);
    /// The number of frames.
    fn len(&self) -> usize;
    /// Reads frame `index` (< `len`) into `out`, of `frame_shape`.
    fn read_frame(&mut self, index: usize, out: ArrayViewMut2<'_, f32>) -> Result<()>;
    /// The pixel size in Å that the file states, if it states one.
    fn pixel_size(&self) -> Option<f32> {
        None
    }
    /// What the log should say of how the frames are made from the file, if anything.
    fn note(&self) -> Option<String> {
        None
    }
    /// How many times the detector's pixels per axis the frames are rendered at.
    fn upsampling(&self) -> usize {
        1
    }
}

/// An open movie: its reader, the gain reference its frames are multiplied by, and the
/// detector's defects replaced in them.
pub struct Movie {
    path: PathBuf,
    reader: Box<dyn FrameReader>,
    /// The file's frames this movie is (`with_frames`).
    frames: std::ops::Range<usize>,
    gain: Option<Array2<f32>>,
    defects: Option<Defects>,
}

/// The file extensions [`Movie::open`] reads.
pub const EXTENSIONS: &[&str] = &[
    "npy", "tif", "tiff", "mrc", "mrcs", "st", "eer", "dm4", "dm3",
];

impl Movie {
    /// Opens a movie by its extension (see [`EXTENSIONS`]); it must have at least one frame.
    pub fn open(path: &Path) -> Result<Movie> {
        Movie::open_with(path, EerRendering::default())
    }

    /// [`Movie::open`], with an EER movie's frames rendered as `eer` says.
    pub fn open_with(path: &Path, eer: EerRendering) -> Result<Movie> {
        let reader = open_reader(path, eer).with_context(|| path.display().to_string())?;
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
            frames: 0..reader.len(),
            reader,
            gain: None,
            defects: None,
        })
    }

    /// Only the file's frames `first` to `last` (from 1; `None`: its last), as the movie's.
    pub fn with_frames(mut self, first: usize, last: Option<usize>) -> Result<Movie> {
        let (n, name) = (self.reader.len(), self.path.display());
        let last = last.unwrap_or(n);
        if first > n {
            bail!("{name}: --first-frame {first} is beyond its {n} frames");
        }
        if last > n {
            bail!("{name}: --last-frame {last} is beyond its {n} frames");
        }
        if last < first {
            bail!("{name}: --last-frame {last} comes before --first-frame {first}");
        }
        self.frames = first - 1..last;
        Ok(self)
    }

    /// The file's frames this movie is: all, or those [`Movie::with_frames`] kept.
    pub fn frames_of_file(&self) -> (std::ops::Range<usize>, usize) {
        (self.frames.clone(), self.reader.len())
    }

    /// Replaces `defects` in every frame, after the gain (see [`Defects::fix`]).
    pub fn with_defects(mut self, defects: Defects) -> Movie {
        self.defects = Some(defects).filter(|d| !d.is_empty());
        self
    }

    /// `gain` as the frames take it: a gain of the detector's size, for frames rendered at more
    /// pixels (upsampled EER), enlarged so that each of its values covers the frames' pixels in
    /// that detector pixel, as RELION does; any other as it is.
    pub fn fitted_gain(&self, gain: Array2<f32>) -> Array2<f32> {
        let (ny, nx) = self.frame_shape();
        let up = self.reader.upsampling();
        if up > 1 && gain.dim() == (ny / up, nx / up) {
            Array2::from_shape_fn((ny, nx), |(y, x)| gain[(y / up, x / up)])
        } else {
            gain
        }
    }

    /// Multiplies every frame by `gain`, a single frame of the same shape read from `gain_path`
    /// (see [`Movie::fitted_gain`]).
    pub fn with_gain(mut self, gain: Array2<f32>, gain_path: &Path) -> Result<Movie> {
        let (ny, nx) = self.frame_shape();
        let up = self.reader.upsampling();
        if gain.dim() != (ny, nx) {
            let turned = if gain.dim() == (nx, ny) || gain.dim() == (nx / up, ny / up) {
                "; a quarter turn more or less (--gain-rotate) would fit it"
            } else {
                ""
            };
            bail!(
                "gain reference {} is {}x{} but the frames of {} are {ny}x{nx}{turned}",
                gain_path.display(),
                gain.nrows(),
                gain.ncols(),
                self.path.display()
            );
        }
        self.gain = Some(gain);
        Ok(self)
    }

    /// The pixel size in Å the file states (an MRC header's), if any.
    pub fn pixel_size(&self) -> Option<f32> {
        self.reader.pixel_size()
    }

    /// How the frames are made from the file, where the log should say so (an EER movie's
    /// groups).
    pub fn note(&self) -> Option<String> {
        self.reader.note()
    }

    /// `(rows, cols)` of every frame.
    pub fn frame_shape(&self) -> (usize, usize) {
        self.reader.frame_shape()
    }

    /// The number of frames.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Reads frame `index` into `out` (of `frame_shape`), multiplied by the gain if any; an
    /// error names the file and the frame.
    pub fn read_frame(&mut self, index: usize, out: ArrayViewMut2<'_, f32>) -> Result<()> {
        let in_file = index + self.frames.start;
        self.read_samples(index, out)
            .with_context(|| format!("{}: frame {in_file}", self.path.display()))
    }

    /// [`Movie::read_frame`] with an error that names neither the file nor the frame: the
    /// alignment ([`FrameSource`](ufunc::registration::FrameSource)) names the frame, and
    /// the program the movie it was aligning.
    fn read_samples(&mut self, index: usize, mut out: ArrayViewMut2<'_, f32>) -> Result<()> {
        if index >= self.len() {
            bail!("beyond the movie's {} frames", self.len());
        }
        if out.dim() != self.frame_shape() {
            let (frame, buffer) = (self.frame_shape(), out.dim());
            bail!("a buffer of {buffer:?} for frames of {frame:?}");
        }
        self.reader
            .read_frame(index + self.frames.start, out.view_mut())?;
        if let Some(gain) = &self.gain {
            out *= gain;
        }
        if let Some(defects) = &self.defects {
            defects.fix(out, index + self.frames.start);
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
        Ok(self.read_samples(index, out)?)
    }
}

/// `gain` as a gain reference: finite values, not all zero (either would make every frame's
/// registration meaningless, and be reported against the movies rather than the gain file).
pub fn usable_gain(gain: Array2<f32>, path: &Path) -> Result<Array2<f32>> {
    if let Some(((y, x), v)) = gain.indexed_iter().find(|(_, v)| !v.is_finite()) {
        bail!("{}: the gain at row {y}, column {x} is {v}", path.display());
    }
    if gain.iter().all(|&v| v == 0.0) {
        bail!("{}: the gain is zero everywhere", path.display());
    }
    Ok(gain)
}

/// `gain` turned counter-clockwise by `degrees` (0, 90, 180 or 270) as IMOD shows it, row 0 at
/// the bottom (NumPy's `rot90(gain, -degrees // 90)`, MotionCor2's `-RotGain degrees / 90`), then
/// reversed along `flip`.
pub fn oriented_gain(gain: Array2<f32>, degrees: u16, flip: Option<Axis>) -> Array2<f32> {
    let mut view = gain.view();
    match degrees {
        90 => {
            view = view.reversed_axes();
            view.invert_axis(Axis(1));
        }
        180 => {
            view.invert_axis(Axis(0));
            view.invert_axis(Axis(1));
        }
        270 => {
            view.invert_axis(Axis(1));
            view = view.reversed_axes();
        }
        _ => debug_assert_eq!(degrees, 0, "checked by --gain-rotate"),
    }
    if let Some(axis) = flip {
        view.invert_axis(axis);
    }
    view.as_standard_layout().into_owned()
}

/// Reads a single 2-d image (a gain reference): a file of exactly one frame. Thermo Fisher's
/// `.gain` files (the gain of EER movies) are TIFFs whose rows are read top-down, as EER
/// frames' are, and as RELION reads them.
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
    let mut rows = image.view_mut();
    if is_dot_gain(path) {
        rows.invert_axis(Axis(0)); // undoes the TIFF reader's turning the rows upside down
    }
    movie.read_frame(0, rows)?;
    Ok(image)
}

/// Whether `path` is read as an EER movie.
pub fn is_eer(path: &Path) -> bool {
    extension(path) == "eer"
}

/// Whether `path` is read as a DigitalMicrograph file (`.dm4`, `.dm3`).
pub fn is_dm(path: &Path) -> bool {
    matches!(extension(path).as_str(), "dm4" | "dm3")
}

/// Whether `path` is Thermo Fisher's `.gain`, which RELION multiplies EER frames by (it
/// divides them by any other gain).
pub fn is_dot_gain(path: &Path) -> bool {
    extension(path) == "gain"
}

/// A file's extension in lower case ("" for none).
fn extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default()
}

fn open_reader(path: &Path, eer: EerRendering) -> Result<Box<dyn FrameReader>> {
    let ext = extension(path);
    Ok(match ext.as_str() {
        "npy" => Box::new(npy::open(path)?),
        // `.gain`: Thermo Fisher's gain references (see `read_image`).
        "tif" | "tiff" | "gain" => Box::new(tiff::TiffReader::open(path)?),
        "mrc" | "mrcs" | "st" => Box::new(mrc::open(path)?),
        "eer" => Box::new(eer::EerReader::open(path, eer)?),
        "dm4" | "dm3" => Box::new(dm::open(path)?),
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

/// How a file's values are stored.
#[derive(Debug, Clone, Copy)]
pub enum Values {
    /// One value in each `Sample`.
    Samples(Sample),
    /// SerialEM's mode 101: 4-bit unsigned values, two a byte, the first in the low 4 bits,
    /// each row starting on a byte (IMOD's definition; RELION's reading, LSB first).
    Nibbles,
}

impl Values {
    /// The bytes of a frame of `(rows, cols)`, where a file could hold them.
    pub fn frame_bytes(self, (rows, cols): (u64, u64)) -> Option<u64> {
        match self {
            Values::Samples(sample) => data_bytes(1, (rows, cols), sample),
            Values::Nibbles => rows.checked_mul(cols.div_ceil(2)),
        }
    }

    /// The name users know them by.
    pub fn name(self) -> &'static str {
        match self {
            Values::Samples(sample) => sample.name(),
            Values::Nibbles => "4-bit (mode 101)",
        }
    }
}

/// Frames stored one after another, uncompressed, from a byte offset: an MRC file's, an npy
/// file's, a DM file's, and those of an ImageJ stack of one page directory. Their format's
/// reader checked the file's size against them when it opened it.
pub struct RawFrames {
    file: std::fs::File,
    offset: u64,
    frames: usize,
    shape: (usize, usize),
    values: Values,
    little: bool,
    /// The file's first row is the image's top (DM's): the rows are read upside down, as IMOD
    /// reads them (see `tiff::TiffReader::read_frame`).
    top_down: bool,
    pixel_size: Option<f32>,
    buffer: Vec<u8>,
}

impl RawFrames {
    /// `frames` of `shape` from byte `offset` of `file`, of `values` in the byte order `little`
    /// says; rows bottom-up, as an MRC file's, and no pixel size.
    pub fn new(
        file: std::fs::File,
        offset: u64,
        frames: usize,
        shape: (usize, usize),
        values: Values,
        little: bool,
    ) -> RawFrames {
        RawFrames {
            file,
            offset,
            frames,
            shape,
            values,
            little,
            top_down: false,
            pixel_size: None,
            buffer: Vec::new(),
        }
    }

    /// The same, the file's rows top-down.
    pub fn top_down(self) -> RawFrames {
        RawFrames {
            top_down: true,
            ..self
        }
    }

    /// The same, with the pixel size the file states.
    pub fn with_pixel_size(self, pixel_size: Option<f32>) -> RawFrames {
        RawFrames { pixel_size, ..self }
    }

    /// Where the frames are in the file.
    #[cfg(test)]
    pub fn data_span(&self) -> std::ops::Range<usize> {
        let (rows, cols) = (self.shape.0 as u64, self.shape.1 as u64);
        let bytes = self.values.frame_bytes((rows, cols)).unwrap() as usize;
        let start = self.offset as usize;
        start..start + self.frames * bytes
    }
}

impl FrameReader for RawFrames {
    fn frame_shape(&self) -> (usize, usize) {
        self.shape
    }
    fn len(&self) -> usize {
        self.frames
    }
    fn pixel_size(&self) -> Option<f32> {
        self.pixel_size
    }
    fn read_frame(&mut self, index: usize, mut out: ArrayViewMut2<'_, f32>) -> Result<()> {
        if self.top_down {
            out.invert_axis(Axis(0));
        }
        let (rows, cols) = self.shape;
        let bytes = self.values.frame_bytes((rows as u64, cols as u64));
        let start = bytes
            .and_then(|b| b.checked_mul(index as u64))
            .and_then(|o| o.checked_add(self.offset));
        let (Some(start), Some(bytes)) = (start, bytes.and_then(|b| usize::try_from(b).ok()))
        else {
            let values = self.values.name();
            bail!("frame {index} of {rows}x{cols} {values} lies beyond what a file can hold");
        };
        self.buffer.resize(bytes, 0);
        read_at(&self.file, start, &mut self.buffer)?;
        match self.values {
            Values::Samples(sample) => decode(&self.buffer, sample, self.little, &mut out),
            Values::Nibbles => {
                use rayon::prelude::*;
                let row_bytes = cols.div_ceil(2).max(1);
                let mut out_rows: Vec<_> = out.outer_iter_mut().collect();
                out_rows
                    .par_iter_mut()
                    .zip(self.buffer.par_chunks(row_bytes))
                    .for_each(|(row, packed)| {
                        for (col, v) in row.iter_mut().enumerate() {
                            *v = ((packed[col / 2] >> (4 * (col % 2))) & 0x0f) as f32;
                        }
                    });
            }
        }
        Ok(())
    }
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
        // A row at a time (the rows upside down, say), in parallel; `iter_mut` walks a row in
        // order whatever its stride.
        None => {
            let row_bytes = (out.ncols() * sample.size()).max(1);
            let mut rows: Vec<_> = out.outer_iter_mut().collect();
            rows.par_iter_mut()
                .zip(bytes.par_chunks(row_bytes))
                .for_each(|(row, bytes)| decode_into(bytes, sample, little, row.iter_mut()));
        }
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
/// frame out of the page cache at a few GB/s, several at many. The readers checked the file's
/// size against its header when they opened it; a file that ends before `buffer` is filled was
/// cut short since, and the error says so with the sizes.
pub fn read_at(file: &std::fs::File, offset: u64, buffer: &mut [u8]) -> Result<()> {
    #[cfg(unix)]
    let read = {
        use rayon::prelude::*;
        use std::os::unix::fs::FileExt;
        const PIECE: usize = 1 << 20;
        buffer
            .par_chunks_mut(PIECE)
            .enumerate()
            .try_for_each(|(i, piece)| file.read_exact_at(piece, offset + (i * PIECE) as u64))
    };
    #[cfg(not(unix))]
    let read = {
        use std::io::{Read, Seek, SeekFrom};
        let mut file = file;
        file.seek(SeekFrom::Start(offset))
            .and_then(|_| file.read_exact(buffer))
    };
    match read {
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => bail!(
            "truncated: the frame's data ends at byte {} but the file now has {} bytes (it was \
             cut short after it was opened)",
            offset.saturating_add(buffer.len() as u64),
            file_len(file).map_or_else(|e| format!("? ({e})"), |len| len.to_string())
        ),
        read => read.context("cannot read the frame's data"),
    }
}

/// The bytes of `frames` frames of `rows`x`cols` samples of `sample`: what a header describes,
/// computed without overflow whatever it says (`None`: more than `u64::MAX`).
pub fn data_bytes(frames: u64, (rows, cols): (u64, u64), sample: Sample) -> Option<u64> {
    frames
        .checked_mul(rows)?
        .checked_mul(cols)?
        .checked_mul(sample.size() as u64)
}

/// A byte count from [`data_bytes`], for messages.
pub fn show_bytes(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "more than 2^64".to_string(), |b| b.to_string())
}

/// The length of a file, for the truncation checks.
pub fn file_len(file: &std::fs::File) -> Result<u64> {
    Ok(file
        .metadata()
        .context("cannot read the file's size")?
        .len())
}

#[cfg(test)]
pub(crate) mod tests {
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
        // Every movie fixture, so that one added to the script is compared too.
        let mut names: Vec<String> = std::fs::read_dir(fixture(""))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("movie_") && name != "movie_times_gain.npy")
            .collect();
        names.sort();
        // Update the count with a fixture added by the script.
        assert_eq!(names.len(), 36, "{names:?}");
        for name in &names {
            let frames = read(name);
            let same = frames.dim() == reference.dim()
                && frames
                    .iter()
                    .zip(&reference)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{name} differs from movie_u16.npy");
        }
    }

    /// SerialEM's 4-bit MRC (mode 101) reads as the same counts in int8 (mrcfile's), rows of
    /// odd width padded to a byte; a truncated one says its frames are 4-bit.
    #[test]
    fn four_bit_mrc_reads_as_its_counts() {
        for width in [18, 19] {
            let counts = read(&format!("counts_{width}.mrc"));
            assert_eq!(counts.dim(), (3, 16, width));
            assert!(counts.iter().any(|&v| v == 15.0) && counts.iter().all(|&v| v < 16.0));
            assert_eq!(
                read(&format!("counts_{width}_mode101.mrc")),
                counts,
                "{width}"
            );
        }
        let dir = std::env::temp_dir().join(format!("ufunc-mode101-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bytes = std::fs::read(fixture("counts_19_mode101.mrc")).unwrap();
        assert_eq!(bytes.len(), 1024 + 3 * 16 * 10);
        let path = dir.join("short.mrc");
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let error = format!("{:#}", Movie::open(&path).err().unwrap());
        assert!(
            error.contains(
                "the header describes 1504 (1024 + 0 extended header + 3 frames of \
                 16x19 4-bit (mode 101))"
            ),
            "{error}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
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
        for gain_name in ["gain.mrc", "gain.tif", "gain.dm4"] {
            let gain = read_image(&fixture(gain_name)).unwrap();
            let mut movie = Movie::open(&fixture("movie_mode1.mrc"))
                .unwrap()
                .with_gain(gain, &fixture(gain_name))
                .unwrap();
            assert_eq!(movie.read_all().unwrap(), expected, "{gain_name}");
        }
    }

    /// The gain turned and flipped as NumPy's `rot90(g, k)` and `flipud`/`fliplr` give (their
    /// values below), which is MotionCor2's `-RotGain`/`-FlipGain` and RELION's
    /// `--gain_rot`/`--gain_flip`: counter-clockwise as IMOD shows an image (row 0 at the
    /// bottom), clockwise as relion_display shows it.
    #[test]
    fn the_gain_turns_and_flips_as_numpy_rot90_and_flip() {
        let g = ndarray::array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let cases: [(u16, Option<Axis>, Array2<f32>); 6] = [
            (0, None, g.clone()),
            (
                90,
                None,
                ndarray::array![[4.0, 1.0], [5.0, 2.0], [6.0, 3.0]],
            ),
            (180, None, ndarray::array![[6.0, 5.0, 4.0], [3.0, 2.0, 1.0]]),
            (
                270,
                None,
                ndarray::array![[3.0, 6.0], [2.0, 5.0], [1.0, 4.0]],
            ),
            (
                90,
                Some(Axis(0)),
                ndarray::array![[6.0, 3.0], [5.0, 2.0], [4.0, 1.0]],
            ),
            (
                90,
                Some(Axis(1)),
                ndarray::array![[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]],
            ),
        ];
        for (degrees, flip, want) in cases {
            let got = oriented_gain(g.clone(), degrees, flip);
            assert_eq!(got, want, "{degrees} degrees, flip {flip:?}");
            assert!(got.is_standard_layout());
        }
    }

    #[test]
    fn a_gain_of_the_wrong_shape_names_both_files_and_shapes() {
        let with_gain = |gain, path: &Path| {
            Movie::open(&fixture("movie_mode2.mrc"))
                .unwrap()
                .with_gain(gain, path)
                .err()
                .map(|e| format!("{e:#}"))
                .unwrap_or_default()
        };
        let path = fixture("gain_wrong_shape.mrc");
        let err = with_gain(read_image(&path).unwrap(), &path);
        for part in ["gain_wrong_shape.mrc", "8x10", "movie_mode2.mrc", "16x20"] {
            assert!(err.contains(part), "{err:?} lacks {part:?}");
        }
        assert!(!err.contains("--gain-rotate"), "{err}");
        // A gain that a quarter turn would fit says so.
        let path = fixture("gain.mrc");
        let err = with_gain(oriented_gain(read_image(&path).unwrap(), 90, None), &path);
        assert!(
            err.contains("is 20x16 but the frames of")
                && err.ends_with(
                    "are 16x20; a quarter turn more or less (--gain-rotate) would fit it"
                ),
            "{err}"
        );
        let err = read_image(&fixture("movie_mode2.mrc")).unwrap_err();
        assert!(format!("{err:#}").contains("expected a single image, found 3 frames"));
    }

    /// A gain holding NaN or an infinity, or zero everywhere, is refused naming the gain file
    /// (it made every movie's alignment NaN, or all shifts zero, reported against the movie).
    #[test]
    fn an_unusable_gain_is_an_error_naming_it() {
        let path = fixture("gain.mrc");
        let gain = read_image(&path).unwrap();
        assert_eq!(usable_gain(gain.clone(), &path).unwrap(), gain);
        for (value, says) in [
            (f32::NAN, "the gain at row 1, column 2 is NaN"),
            (f32::INFINITY, "the gain at row 1, column 2 is inf"),
        ] {
            let mut bad = gain.clone();
            bad[[1, 2]] = value;
            let err = format!("{:#}", usable_gain(bad, &path).unwrap_err());
            assert!(err.contains("gain.mrc") && err.contains(says), "{err}");
        }
        let err = format!("{:#}", usable_gain(gain.mapv(|_| 0.0), &path).unwrap_err());
        assert!(
            err.contains("gain.mrc: the gain is zero everywhere"),
            "{err}"
        );
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
            // Its 6 pages were aligned as a movie, the channels interleaved.
            (
                "bad_imagej_hyperstack.tif",
                "an ImageJ hyperstack of 3 frames x 2 channels: its pages are not one series",
            ),
            ("bad_empty.npy", "empty movie (0 frames"),
            ("bad_1d.npy", "expected 2 or 3 dimensions"),
            ("bad_4d.npy", "expected 2 or 3 dimensions"),
            ("bad_truncated.npy", "truncated"),
            ("bad_complex.npy", "unsupported npy data type"),
            ("bad_fortran.npy", "Fortran"),
            // A good file the `tiff` crate cannot decode says so, not "truncated or damaged".
            (
                "bad_tiled_lzw.tif",
                "frame 0: cannot decode the page: a tiled LZW page that the `tiff` crate (0.11) \
                 cannot decode: damaged, or one of the many good ones",
            ),
            (
                "bad_complex.dm4",
                "a complex image (DM data type 3): not supported",
            ),
            (
                "bad_two_images.dm4",
                "2 images (20 x 16 by x, y, ...; 20 x 16 x 3 by x, y, ...): expected one image \
                 or stack of frames (beside DM's thumbnail)",
            ),
            (
                "bad_truncated.dm4",
                "truncated: a tag's 1920 bytes from byte",
            ),
            ("bad_tags.dm4", "truncated: the tags go on past byte"),
            (
                "bad_big_endian.dm4",
                "a big-endian DM file (byte order 0): not supported",
            ),
            ("missing.mrc", "cannot open"),
            ("gain.txt", "unknown movie format .txt"),
        ];
        for (name, problem) in cases {
            let err = error(name);
            assert!(err.contains(name), "{name}: {err:?} does not name the file");
            assert!(err.contains(problem), "{name}: {err:?} lacks {problem:?}");
        }
    }

    /// A truncated file says so once, with its size and the size its header (or directories)
    /// describe: the npy and TIFF readers said "failed to fill whole buffer" twice (the crates'
    /// errors repeat their source's text, which the chain printed again).
    #[test]
    fn truncated_files_say_so_once_with_the_sizes() {
        let dir = std::env::temp_dir().join(format!("ufunc-io-truncated-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cut = |name: &str, bytes: &[u8]| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            match Movie::open(&path).and_then(|mut m| m.read_all()) {
                Ok(_) => panic!("{name} was read"),
                Err(e) => (path, format!("{e:#}")),
            }
        };
        let npy = std::fs::read(fixture("movie_u16.npy")).unwrap();
        let raw = std::fs::read(fixture("movie_u16_raw.tif")).unwrap();
        let big = std::fs::read(fixture("movie_u16_bigtiff.tif")).unwrap();
        let mrc = std::fs::read(fixture("movie_mode1.mrc")).unwrap();
        // The raw TIFF's second page: its directory at 2176 (12 entries, to 2326), its strip
        // (offset given inline at entry 5 of the 12) at 896, 640 bytes.
        assert_eq!(u16::from_le_bytes([raw[2176], raw[2177]]), 12);
        let mut strip_far = raw.clone();
        let strip = 2176 + 2 + 12 * 5;
        assert_eq!(u16::from_le_bytes([raw[strip], raw[strip + 1]]), 273);
        strip_far[strip + 8..strip + 12].copy_from_slice(&1_000_000u32.to_le_bytes());
        let cases: [(&str, &[u8], &str); 10] = [
            ("a.npy", &npy[..0], "truncated: the file has 0 bytes, fewer than the 10 of an npy preamble"),
            ("b.npy", &npy[..9], "truncated: the file has 9 bytes, fewer than the 10 of an npy preamble"),
            ("c.npy", &npy[..100], "truncated: the header ends at byte 128 but the file has 100 bytes"),
            ("d.npy", &npy[..1000], "truncated: 872 bytes of data where the header describes 1920"),
            ("e.tif", &raw[..5], "truncated: the file has 5 bytes, fewer than the 8 of a TIFF header"),
            ("f.tif", &big[..12], "truncated: the file has 12 bytes, fewer than the 16 of a TIFF header"),
            ("g.tif", &raw[..1000], "truncated: page 1's directory starts at byte 2176, but the file has 1000 bytes"),
            ("h.tif", &raw[..2200], "truncated: page 1's directory of 12 entries at byte 2176 ends at byte 2326 but the file has 2200 bytes"),
            ("i.tif", &strip_far, "truncated: page 1's data ends at byte 1000640 but the file has 2508 bytes"),
            ("j.mrc", &mrc[..1500], "truncated: the file has 1500 bytes, the header describes 2944"),
        ];
        for (name, bytes, says) in cases {
            let (path, err) = cut(name, bytes);
            assert!(
                err.starts_with(&format!("{}: {says}", path.display())),
                "{name}: {err}"
            );
            assert!(!err.contains("fill whole buffer"), "{name}: {err}");
        }
        // Not an npy file at all, and a TIFF of a wrong signature: said once too.
        let (_, err) = cut("k.npy", b"hello");
        assert!(err.ends_with("k.npy: not an npy file: it does not begin with the npy magic string \"\\x93NUMPY\""), "{err}");
        let (_, err) = cut("l.tif", b"II\x00\x00");
        assert!(
            err.ends_with("l.tif: not a readable TIFF file: format error: TIFF signature invalid"),
            "{err}"
        );
        // A file cut short after it was opened: the frame's read says so (npy and MRC).
        for (name, bytes, data) in [("m.npy", &npy, 128u64), ("n.mrc", &mrc, 1024)] {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            let mut movie = Movie::open(&path).unwrap();
            let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            file.set_len(data + 700).unwrap();
            let mut frame = Array2::zeros(movie.frame_shape());
            let err = format!("{:#}", movie.read_frame(1, frame.view_mut()).unwrap_err());
            let says = format!(
                "{}: frame 1: truncated: the frame's data ends at byte {} but the file now has {} bytes",
                path.display(),
                data + 2 * 640,
                data + 700
            );
            assert!(err.starts_with(&says), "{name}: {err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    // The corruption test's watch on allocations: the largest single allocation (or
    // reallocation) a thread made since it last asked. The program's test build alone has it
    // (a thread-local maximum per allocation; nothing else changes).
    struct Largest;

    std::thread_local! {
        static LARGEST: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn note(size: usize) {
        let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
    }

    // SAFETY: forwards every call to the system allocator, noting sizes.
    unsafe impl std::alloc::GlobalAlloc for Largest {
        unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
            note(layout.size());
            // SAFETY: the caller's contract, passed on.
            unsafe { std::alloc::System.alloc(layout) }
        }
        unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
            note(layout.size());
            // SAFETY: as above.
            unsafe { std::alloc::System.alloc_zeroed(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
            // SAFETY: as above.
            unsafe { std::alloc::System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(
            &self,
            ptr: *mut u8,
            layout: std::alloc::Layout,
            new_size: usize,
        ) -> *mut u8 {
            note(new_size);
            // SAFETY: as above.
            unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
        }
    }

    #[global_allocator]
    static LARGEST_ALLOCATION: Largest = Largest;

    /// A seeded xorshift64 generator: the corruptions are the same on every run.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }
        /// A number in `lo..hi` (`lo` when the range is empty).
        fn within(&mut self, lo: usize, hi: usize) -> usize {
            if hi <= lo {
                lo
            } else {
                lo + (self.next() % (hi - lo) as u64) as usize
            }
        }
    }

    /// Where a TIFF's fields are: classic TIFF's 2-byte entry counts, 12-byte entries and
    /// 4-byte offsets, or BigTIFF's 8, 20 and 8.
    #[derive(Clone, Copy)]
    struct Geometry {
        big_endian: bool,
        /// The size of an offset, a count and a value (inline or its offset).
        word: usize,
        /// The size of a directory's entry count.
        count: usize,
    }

    impl Geometry {
        fn of(bytes: &[u8]) -> Geometry {
            let big_endian = bytes.starts_with(b"MM");
            let magic = bytes
                .get(2..4)
                .map(|b| if big_endian { b[1] } else { b[0] });
            match magic {
                Some(43) => Geometry {
                    big_endian,
                    word: 8,
                    count: 8,
                },
                _ => Geometry {
                    big_endian,
                    word: 4,
                    count: 2,
                },
            }
        }
        fn entry(self) -> usize {
            4 + 2 * self.word
        }
        /// Where the first directory's offset is.
        fn first(self) -> usize {
            if self.word == 8 {
                8
            } else {
                4
            }
        }
        fn get(self, bytes: &[u8], at: usize, width: usize) -> u64 {
            let mut word = [0u8; 8];
            let b = &bytes[at..at + width];
            if self.big_endian {
                word[8 - width..].copy_from_slice(b);
                u64::from_be_bytes(word)
            } else {
                word[..width].copy_from_slice(b);
                u64::from_le_bytes(word)
            }
        }
        /// Writes the low `width` bytes of `v` at `at`.
        fn put(self, bytes: &mut [u8], at: usize, width: usize, v: u64) {
            if self.big_endian {
                bytes[at..at + width].copy_from_slice(&v.to_be_bytes()[8 - width..]);
            } else {
                bytes[at..at + width].copy_from_slice(&v.to_le_bytes()[..width]);
            }
        }
    }

    /// The byte ranges of a TIFF's structure (the header, every directory and the values its
    /// entries point to) and where its directories are: `(offset, entries)`.
    fn tiff_layout(bytes: &[u8]) -> (Vec<std::ops::Range<usize>>, Vec<(usize, usize)>) {
        let g = Geometry::of(bytes);
        let header = g.first() + g.word;
        let mut ranges = Vec::new();
        ranges.push(0..bytes.len().min(header));
        let mut ifds = Vec::new();
        if bytes.len() < header || !(bytes.starts_with(b"II") || g.big_endian) {
            return (ranges, ifds);
        }
        let mut at = g.get(bytes, g.first(), g.word) as usize;
        while at != 0 && at.saturating_add(g.count) <= bytes.len() && ifds.len() < 64 {
            let n = g.get(bytes, at, g.count) as usize;
            let full_end = at
                .saturating_add(n.saturating_mul(g.entry()))
                .saturating_add(g.count + g.word);
            let end = full_end.min(bytes.len());
            ranges.push(at..end);
            ifds.push((at, n));
            for i in 0..n {
                let entry = at + g.count + g.entry() * i;
                if entry + g.entry() > bytes.len() {
                    break;
                }
                let size = match g.get(bytes, entry + 2, 2) {
                    1 | 2 | 6 | 7 => 1,
                    3 | 8 => 2,
                    4 | 9 | 11 => 4,
                    _ => 8,
                } * g.get(bytes, entry + 4, g.word) as usize;
                if size > g.word {
                    let value = g.get(bytes, entry + 4 + g.word, g.word) as usize;
                    ranges
                        .push(value.min(bytes.len())..value.saturating_add(size).min(bytes.len()));
                }
            }
            if end < full_end {
                break;
            }
            at = g.get(bytes, end - g.word, g.word) as usize;
        }
        (ranges, ifds)
    }

    /// Calls `each` with deterministic corruptions of `good`, a movie file named `name`:
    /// truncations (at every length through the header, at a sample beyond), single-byte
    /// changes (0x00, 0xFF, one bit flipped) at every header byte and at a sample of data
    /// bytes, and header fields set to huge values.
    fn corruptions(name: &str, good: &[u8], each: &mut dyn FnMut(String, &[u8])) {
        let mut rng = XorShift(name.bytes().fold(0x9E37_79B9_7F4A_7C15, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01B3)
        }));
        let len = good.len();
        let ext = name.rsplit('.').next().unwrap_or_default();
        // The header's bytes, and how far every truncation is tried.
        let (header, truncate_to): (Vec<std::ops::Range<usize>>, usize) = match ext {
            "mrc" | "mrcs" | "st" => (std::iter::once(0..len.min(1024)).collect(), 1100),
            // A DM file's tags are all through it, around the image's data (in one DM4 and one
            // DM3 file: the others' tags are laid out as the DM4's).
            "dm4" | "dm3" if ["movie_u16.dm4", "movie_i16.dm3"].contains(&name) => {
                let data = dm::open(&fixture(name)).unwrap().data_span();
                (vec![0..data.start, data.end..len], 300)
            }
            "npy" => {
                let end = match good.get(6) {
                    Some(1) if len >= 10 => 10 + u16::from_le_bytes([good[8], good[9]]) as usize,
                    Some(2 | 3) if len >= 12 => {
                        12 + u32::from_le_bytes([good[8], good[9], good[10], good[11]]) as usize
                    }
                    _ => len,
                };
                (std::iter::once(0..end.min(len)).collect(), end + 16)
            }
            _ => {
                let (mut ranges, _) = tiff_layout(good);
                ranges.push(0..len.min(300));
                (ranges, 300)
            }
        };
        // Truncations.
        let mut lengths: Vec<usize> = (0..truncate_to.min(len)).collect();
        for range in &header {
            lengths.extend(range.clone());
        }
        for _ in 0..24 {
            lengths.push(rng.within(truncate_to, len));
        }
        lengths.push(len.saturating_sub(1));
        lengths.sort_unstable();
        lengths.dedup();
        for n in lengths.into_iter().filter(|&n| n < len) {
            each(format!("truncated to {n} bytes"), &good[..n]);
        }
        // Single-byte changes.
        let mut bytes = good.to_vec();
        let mut positions: Vec<usize> = header.iter().flat_map(|r| r.clone()).collect();
        for _ in 0..24 {
            positions.push(rng.within(truncate_to, len));
        }
        positions.sort_unstable();
        positions.dedup();
        for at in positions.into_iter().filter(|&at| at < len) {
            let bit = 1u8 << rng.within(0, 8);
            for value in [0x00, 0xFF, good[at] ^ bit] {
                if value != good[at] {
                    bytes[at] = value;
                    each(format!("byte {at} set to 0x{value:02x}"), &bytes);
                }
            }
            bytes[at] = good[at];
        }
        // Header fields set to huge values.
        match ext {
            "mrc" | "mrcs" | "st" if len >= 1024 => {
                let big = good[212] == 0x11;
                let put = |bytes: &mut Vec<u8>, word: usize, v: u32| {
                    let b = if big {
                        v.to_be_bytes()
                    } else {
                        v.to_le_bytes()
                    };
                    bytes[4 * word..4 * word + 4].copy_from_slice(&b);
                };
                let huge = [
                    0x7FFF_FFFF,
                    0x4000_0000,
                    0x0001_0000,
                    0xFFFF_FFFF,
                    0x8000_0000,
                ];
                for v in huge {
                    for words in [&[0][..], &[1], &[2], &[23], &[0, 1], &[1, 2], &[0, 1, 2]] {
                        let mut bytes = good.to_vec();
                        for &w in words {
                            put(&mut bytes, w, v);
                        }
                        each(format!("words {words:?} set to 0x{v:08x}"), &bytes);
                    }
                }
                // Sizes whose product is a multiple of 2^64.
                let sizes = [1 << 30, 1 << 16, 1 << 4, 1 << 2, 0x7FFF_FFFF];
                for nx in sizes {
                    for ny in sizes {
                        for nz in sizes {
                            let mut bytes = good.to_vec();
                            for (w, v) in [(0, nx), (1, ny), (2, nz)] {
                                put(&mut bytes, w, v);
                            }
                            each(format!("NX NY NZ set to {nx} {ny} {nz}"), &bytes);
                        }
                    }
                }
            }
            "npy" => {
                if good.get(6) != Some(&1) || len < 10 {
                    return;
                }
                let header_end = 10 + u16::from_le_bytes([good[8], good[9]]) as usize;
                let dict = std::str::from_utf8(&good[10..header_end]).unwrap_or_default();
                let data = &good[header_end..];
                let npy = |version: u8, header_len: Option<u32>, dict: &str| {
                    let mut bytes = b"\x93NUMPY".to_vec();
                    bytes.extend([version, 0]);
                    let n = header_len.unwrap_or(dict.len() as u32);
                    if version == 1 {
                        bytes.extend((n as u16).to_le_bytes());
                    } else {
                        bytes.extend(n.to_le_bytes());
                    }
                    bytes.extend(dict.as_bytes());
                    bytes.extend(data);
                    bytes
                };
                let (Some(open), Some(close)) = (dict.find("'shape': ("), dict.rfind(')')) else {
                    return;
                };
                let open = open + "'shape': (".len();
                let shapes = [
                    "18446744073709551615, 16, 20",
                    "1, 4294967296, 4294967296",
                    "3, 4294967296, 4294967296",
                    "4611686018427387904, 4611686018427387904, 2",
                    "16, 1152921504606846976, 16",
                    "3, 16, 18446744073709551615",
                    "4294967296, 4294967296",
                    "18446744073709551615, 1",
                    "99999999999999999999999999, 1, 1",
                    "-1, 16, 20",
                    "3, 0, 18446744073709551615",
                    "18446744073709551615, 0, 0",
                    "1152921504606846976, 1, 1",
                ];
                for shape in shapes {
                    let dict = format!("{}{shape}{}", &dict[..open], &dict[close..]);
                    each(format!("shape ({shape})"), &npy(1, None, &dict));
                }
                for (version, header_len) in [
                    (1, 0xFFFF),
                    (2, 0xFFFF_FFFF),
                    (2, 0x7FFF_FFFF),
                    (3, 0xFFFF_FFFF),
                    (2, 0x0100_0000),
                ] {
                    each(
                        format!("version {version} with a header length of {header_len}"),
                        &npy(version, Some(header_len), dict),
                    );
                }
                // Type descriptors of any UTF-8 (which a version 3.0 header may hold).
                if let Some(at) = dict.find("'descr': '") {
                    let at = at + "'descr': '".len();
                    let end = at + dict[at..].find('\'').unwrap_or(0);
                    for descr in ["é<f4", "<é", "é", "", "<", "\u{1F600}f4", "<f4\u{0}"] {
                        let dict = format!("{}{descr}{}", &dict[..at], &dict[end..]);
                        each(format!("descr {descr:?}"), &npy(3, None, &dict));
                    }
                }
                // Deeply nested headers.
                for (version, depth) in [(1u8, 30_000), (2, 200_000)] {
                    for (open, close) in [("(", ")"), ("[", "]"), ("{1: ", "}")] {
                        let mut nested = dict[..open_at(dict)].to_string();
                        nested.push_str(&open.repeat(depth));
                        nested.push_str(&close.repeat(depth));
                        nested.push_str(", }\n");
                        each(
                            format!("a shape nested {depth} deep in {open}{close}"),
                            &npy(version, None, &nested),
                        );
                    }
                }
                fn open_at(dict: &str) -> usize {
                    dict.find("'shape': ").map_or(0, |i| i + "'shape': ".len())
                }
            }
            _ => {
                let (_, ifds) = tiff_layout(good);
                let g = Geometry::of(good);
                let (w, e) = (g.word, g.entry());
                let mut variant = |what: String, f: &dyn Fn(&mut Vec<u8>)| {
                    let mut bytes = good.to_vec();
                    f(&mut bytes);
                    each(what, &bytes);
                };
                let all_ones = u64::MAX >> (64 - 8 * w);
                for v in [all_ones, len as u64 - 1, 8] {
                    variant(format!("first directory at {v}"), &|b| {
                        g.put(b, g.first(), w, v)
                    });
                }
                for &(at, n) in &ifds {
                    for v in [0xFFFF, n as u64 + 1, 0] {
                        variant(format!("directory {at}: {v} entries"), &|b| {
                            g.put(b, at, g.count, v)
                        });
                    }
                    let next = at + g.count + e * n;
                    if next + w <= len {
                        for v in [all_ones, at as u64, 8, len as u64 - 2] {
                            variant(format!("directory {at}: next at {v}"), &|b| {
                                g.put(b, next, w, v)
                            });
                        }
                    }
                    for i in 0..n {
                        let entry = at + g.count + e * i;
                        if entry + e > len {
                            break;
                        }
                        for v in [0, 12, 16, 0xFFFF] {
                            variant(format!("entry {entry}: type {v}"), &|b| {
                                g.put(b, entry + 2, 2, v)
                            });
                        }
                        for v in [all_ones, 0x1000_0000, 0x10000, 2, 0] {
                            variant(format!("entry {entry}: count {v}"), &|b| {
                                g.put(b, entry + 4, w, v)
                            });
                        }
                        for v in [all_ones, 0x7FFF_FFFF, 0x10000, 0xFFFF, len as u64] {
                            variant(format!("entry {entry}: value {v}"), &|b| {
                                g.put(b, entry + 4 + w, w, v)
                            });
                        }
                        variant(format!("entry {entry}: short value 0xffff"), &|b| {
                            g.put(b, entry + 4 + w, 2, 0xFFFF)
                        });
                    }
                    // Width and height (tags 256 and 257) together.
                    for v in [0xFFFF_FFFF, 0x7FFF_FFFF, 0x10000, 0x4000] {
                        variant(format!("directory {at}: {v}x{v} pixels"), &|b| {
                            for i in 0..n.min(2) {
                                g.put(b, at + g.count + e * i + 4 + w, 4, v);
                            }
                        });
                    }
                }
            }
        }
    }

    /// Makes `file`, which holds `on_disk`, hold `bytes`, writing only where they differ.
    fn rewrite(file: &mut std::fs::File, on_disk: &mut Vec<u8>, bytes: &[u8]) {
        use std::io::{Seek, SeekFrom, Write};
        let same = on_disk.len().min(bytes.len());
        let start = (0..same).find(|&i| on_disk[i] != bytes[i]).unwrap_or(same);
        let end = if bytes.len() == on_disk.len() {
            (start..same)
                .rev()
                .find(|&i| on_disk[i] != bytes[i])
                .map_or(start, |i| i + 1)
        } else {
            bytes.len()
        };
        if bytes.len() < on_disk.len() {
            file.set_len(bytes.len() as u64).unwrap();
        }
        file.seek(SeekFrom::Start(start as u64)).unwrap();
        file.write_all(&bytes[start..end]).unwrap();
        on_disk.clear();
        on_disk.extend_from_slice(bytes);
    }

    /// What is wrong with how the readers take the movie file at `path` (`len` bytes, whose
    /// frames may decode to `expansion` times that): a panic, an absurd size or allocation, an
    /// error that does not name the file; `None` for an error or frames read.
    fn misbehaviour(path: &Path, len: usize, expansion: usize) -> Option<String> {
        // The largest buffer a file of `len` bytes may need: its samples as f32.
        let limit = (1 << 20) + 4 * expansion * len;
        LARGEST.with(|l| l.set(0));
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // An EER movie's pages one by one: the fixtures have fewer than a default group.
            let one_by_one = eer::EerRendering {
                grouping: 1,
                upsampling: 1,
            };
            let mut movie = Movie::open_with(path, one_by_one)?;
            let (ny, nx) = movie.frame_shape();
            let samples = ny.checked_mul(nx).filter(|&n| n <= limit / 4);
            let Some(samples) = samples else {
                return Ok(Some(format!("frames of {ny}x{nx} from {len} bytes")));
            };
            if movie.len() > len || movie.len().saturating_mul(samples) > expansion * len {
                let n = movie.len();
                return Ok(Some(format!("{n} frames of {ny}x{nx} from {len} bytes")));
            }
            let mut frame = Array2::zeros((ny, nx));
            for i in 0..movie.len() {
                movie.read_frame(i, frame.view_mut())?;
            }
            if movie.len() == 1 {
                read_image(path)?;
            }
            anyhow::Ok(None)
        }));
        let largest = LARGEST.with(|l| l.replace(0));
        let name = path.display().to_string();
        match outcome {
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("?");
                Some(format!("panicked: {message}"))
            }
            Ok(_) if largest > limit => Some(format!(
                "allocated {largest} bytes at once for a file of {len}"
            )),
            Ok(Ok(absurd)) => absurd,
            Ok(Err(e)) if !format!("{e:#}").contains(&name) => {
                Some(format!("the error does not name the file: {e:#}"))
            }
            Ok(Err(_)) => None,
        }
    }

    /// Every good fixture, corrupted in every way `corruptions` knows, is an error naming the
    /// file or frames read: never a panic, an abort, an absurd allocation or a hang.
    #[test]
    fn corrupted_files_are_errors_or_frames_never_panics() {
        let dir = std::env::temp_dir().join(format!("ufunc-io-corrupt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Removed however the test ends.
        struct RemoveOnDrop(PathBuf);
        impl Drop for RemoveOnDrop {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
        let _cleanup = RemoveOnDrop(dir.clone());
        let eer_fixtures = fixture("").join("../eer");
        let mut names: Vec<PathBuf> = std::fs::read_dir(fixture(""))
            .unwrap()
            .chain(std::fs::read_dir(&eer_fixtures).unwrap())
            .map(|e| e.unwrap().path())
            .filter(|path| {
                let name = path.file_name().unwrap().to_string_lossy();
                let ext = path.extension().and_then(|e| e.to_str());
                !name.starts_with("bad_") && ext.is_some_and(|e| EXTENSIONS.contains(&e))
            })
            .collect();
        names.sort();
        // A hang shows as the case that was running when the time ran out.
        let current = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (done, finished) = std::sync::mpsc::channel();
        let worker = {
            let (current, dir) = (current.clone(), dir.clone());
            // On a pool of one thread: the readers' parallel loops run inline on it rather than
            // on the global pool's threads, so the allocations watched are all of them.
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .unwrap();
            std::thread::spawn(move || {
                pool.install(|| {
                    let mut problems = Vec::new();
                    let mut cases = 0usize;
                    for fixture in &names {
                        let good = std::fs::read(fixture).unwrap();
                        let name = &fixture.file_name().unwrap().to_string_lossy().into_owned();
                        let path = dir.join(name);
                        let expansion = match fixture.extension().and_then(|e| e.to_str()) {
                            Some("tif" | "tiff") => tiff::MAX_EXPANSION,
                            Some("eer") => eer::MAX_EXPANSION,
                            // A 4-bit MRC (mode 101) holds two samples a byte.
                            Some("mrc") => 2,
                            _ => 1,
                        };
                        // One file, rewritten in place where the bytes differ (truncating and
                        // rewriting whole files costs 100 times more on ext4).
                        let mut file = std::fs::File::create(&path).unwrap();
                        let mut on_disk = Vec::new();
                        corruptions(name, &good, &mut |what, bytes| {
                            *current.lock().unwrap() = format!("{name}, {what}");
                            rewrite(&mut file, &mut on_disk, bytes);
                            let start = std::time::Instant::now();
                            let wrong = misbehaviour(&path, bytes.len(), expansion);
                            let seconds = start.elapsed().as_secs_f64();
                            if let Some(wrong) = wrong {
                                problems.push(format!("{name}, {what}: {wrong}"));
                            } else if seconds > 20.0 {
                                problems.push(format!("{name}, {what}: took {seconds:.1} s"));
                            }
                            cases += 1;
                        });
                    }
                    done.send((cases, problems)).unwrap();
                })
            })
        };
        let outcome = finished.recv_timeout(std::time::Duration::from_secs(300));
        let Ok((cases, problems)) = outcome else {
            panic!("hung on {}", current.lock().unwrap());
        };
        worker.join().unwrap();
        assert!(cases > 10_000, "only {cases} corruptions tried");
        assert!(
            problems.is_empty(),
            "{} of {cases} corrupted files misbehaved:\n{}",
            problems.len(),
            problems.join("\n")
        );
    }
}
