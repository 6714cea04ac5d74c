//! Multi-page TIFF movies: one grayscale page per frame (8/16/32-bit integers, float16/32/64;
//! uncompressed, LZW or Deflate), decoded by the `tiff` crate. Opening walks the page
//! directories only, to count the frames and check that they all have the same size and type,
//! and that the directories and the pages' data lie within the file (a truncated file is told
//! as such, with the sizes, rather than by the crate's end-of-file error). An ImageJ stack of
//! more images than page directories (one, as ImageJ writes stacks over 4 GiB) is read as its
//! images stored one after the other, as tifffile reads it; an ImageJ hyperstack of more than
//! one of channels, slices and frames is refused. Rows are read bottom-up (see
//! `read_frame`), whatever the Orientation tag says, as IMOD and RELION do.

use super::{
    data_bytes, decode, file_len, read_at, show_bytes, FrameReader, RawFrames, Sample, Values,
};
use anyhow::{anyhow, bail, Context, Result};
use ndarray::{ArrayViewMut2, Axis};
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use tiff::decoder::{ChunkType, Decoder, DecodingResult, Limits};
use tiff::tags::{PhotometricInterpretation, Tag};
use tiff::{ColorType, TiffError};

/// How many times the file's size a compressed page may decode to, at most: more than any
/// codec the `tiff` crate reads with the features enabled in `Cargo.toml` achieves (Deflate
/// 1032:1, LZW about 2600:1, PackBits 64:1; enabling `zstd`, say, needs a larger bound).
pub const MAX_EXPANSION: usize = 4096;

/// Reads the pages of a TIFF file.
pub struct TiffReader {
    decoder: Decoder<BufReader<File>>,
    frames: usize,
    shape: (usize, usize),
    /// The pages' photometric interpretation is WhiteIsZero, which the crate inverts (as
    /// `max - v`) and which is undone here: the stored values, as tifffile, libtiff and the
    /// other formats' readers give them.
    white_is_zero: bool,
    /// An ImageJ stack of more images than page directories (ImageJ's own layout for stacks
    /// over 4 GiB, tifffile's `truncate=True`): every frame is read from the contiguous data
    /// that starts at the first page's.
    contiguous: Option<RawFrames>,
    /// More decoders of the file, each decoding a share of a compressed page's strips side by
    /// side (`read_strips`): LZW and Deflate decode at 100-200 MB/s, 0.1-0.2 s a K3 frame.
    strip_decoders: Vec<Mutex<Decoder<BufReader<File>>>>,
    /// The decoded strips of a page, before they are converted.
    strip_bytes: Vec<u8>,
    path: PathBuf,
    limits: Limits,
}

impl TiffReader {
    /// Counts the pages, checking that they are grayscale and all of one size and type.
    pub fn open(path: &Path) -> Result<TiffReader> {
        let mut file = File::open(path).context("cannot open")?;
        let len = file_len(&file)?;
        check_directories(&mut file, len)?;
        file.seek(SeekFrom::Start(0))
            .context("cannot read the header")?;
        // Nothing that decodes from this file can be larger than it can expand to.
        let mut limits = Limits::default();
        let most = usize::try_from(len.saturating_mul(MAX_EXPANSION as u64)).unwrap_or(usize::MAX);
        limits.decoding_buffer_size = limits.decoding_buffer_size.min(most);
        let mut decoder = Decoder::new(BufReader::new(file))
            .map_err(tiff_error)
            .context("not a readable TIFF file")?
            .with_limits(limits.clone());
        let first = page_info(&mut decoder, 0, len)?;
        let imagej = ImageJ::of_page(&mut decoder);
        if let Some(imagej) = &imagej {
            imagej.check_one_series()?;
        }
        let mut frames = 1;
        while decoder.more_images() {
            decoder
                .next_image()
                .map_err(tiff_error)
                .with_context(|| format!("cannot read page {frames}"))?;
            let page = page_info(&mut decoder, frames, len)?;
            if page.0 != first.0 {
                bail!(
                    "inconsistent frame sizes: page {frames} is {}x{} but page 0 is {}x{} (rows x cols)",
                    page.0 .1,
                    page.0 .0,
                    first.0 .1,
                    first.0 .0
                );
            }
            if (page.1, page.2) != (first.1, first.2) {
                bail!(
                    "inconsistent sample types: page {frames} is {:?}{} but page 0 is {:?}{}",
                    page.1,
                    if page.2 { " WhiteIsZero" } else { "" },
                    first.1,
                    if first.2 { " WhiteIsZero" } else { "" },
                );
            }
            frames += 1;
        }
        let (width, height) = first.0;
        let shape = (height as usize, width as usize);
        let white_is_zero = first.2;
        let mut contiguous = None;
        if let Some(images) = imagej.map(|i| i.images).filter(|&n| n > 1 && frames == 1) {
            contiguous = Some(contiguous_stack(path, &mut decoder, images, shape, len)?);
            frames = images;
        }
        Ok(TiffReader {
            decoder,
            frames,
            shape,
            white_is_zero,
            contiguous,
            strip_decoders: Vec::new(),
            strip_bytes: Vec::new(),
            path: path.to_owned(),
            limits,
        })
    }
}

/// What an ImageJ description (`ImageJ=1.54f\nimages=6\nchannels=2\nframes=3\n...`) of
/// the current page says of the stack's images and their dimensions (1 where unsaid).
struct ImageJ {
    images: usize,
    channels: usize,
    slices: usize,
    frames: usize,
}

impl ImageJ {
    /// The description of the current page, if it is an ImageJ one. A description the crate
    /// cannot read (not UTF-8, as Latin-1 text of other programs) is no ImageJ one, and the
    /// page opens as before.
    fn of_page(decoder: &mut Decoder<BufReader<File>>) -> Option<ImageJ> {
        let description = decoder
            .find_tag(Tag::ImageDescription)
            .ok()
            .flatten()
            .and_then(|value| value.into_string().ok())?;
        if !description.starts_with("ImageJ=") {
            return None;
        }
        let count = |key: &str| {
            description
                .lines()
                .filter_map(|line| line.split_once('='))
                .find(|(k, _)| k.trim() == key)
                .and_then(|(_, n)| n.trim().parse().ok())
                .unwrap_or(1)
        };
        Some(ImageJ {
            images: count("images"),
            channels: count("channels"),
            slices: count("slices"),
            frames: count("frames"),
        })
    }

    /// A hyperstack of more than one of channels, slices and frames interleaves them page by
    /// page (ImageJ's order is channel, then slice, then frame), so its pages are no one
    /// movie: refused, naming its dimensions, where they were aligned as frames. A stack of
    /// any one of them (tifffile writes a plain stack as `channels=N`) is a movie.
    fn check_one_series(&self) -> Result<()> {
        let dimensions: Vec<String> = [
            (self.frames, "frames"),
            (self.slices, "slices"),
            (self.channels, "channels"),
        ]
        .iter()
        .filter(|(n, _)| *n > 1)
        .map(|(n, name)| format!("{n} {name}"))
        .collect();
        if dimensions.len() > 1 {
            bail!(
                "an ImageJ hyperstack of {}: its pages are not one series of frames; save one \
                 channel or slice of it as a stack of its own (ImageJ: Image > Hyperstacks > \
                 Reduce Dimensionality)",
                dimensions.join(" x ")
            );
        }
        Ok(())
    }
}

/// The sample type of TIFF's SampleFormat `format` (1 unsigned, 2 signed, 3 floating point) and
/// BitsPerSample `bits`, where it is one.
fn sample_of(format: u64, bits: u64) -> Option<Sample> {
    Some(match (format, bits) {
        (1, 8) => Sample::U8,
        (1, 16) => Sample::U16,
        (1, 32) => Sample::U32,
        (2, 8) => Sample::I8,
        (2, 16) => Sample::I16,
        (2, 32) => Sample::I32,
        (3, 16) => Sample::F16,
        (3, 32) => Sample::F32,
        (3, 64) => Sample::F64,
        _ => return None,
    })
}

/// The frames of an ImageJ stack of `images` frames of `shape` with one page directory (the
/// current one), stored one after another: its strips must be uncompressed and contiguous, and
/// the file must hold every frame.
fn contiguous_stack(
    path: &Path,
    decoder: &mut Decoder<BufReader<File>>,
    images: usize,
    shape: (usize, usize),
    len: u64,
) -> Result<RawFrames> {
    let mut tag = |tag: Tag| unsigned_values(decoder, tag, 0);
    let compression = tag(Tag::Compression)?.first().copied().unwrap_or(1);
    let format = tag(Tag::SampleFormat)?.first().copied().unwrap_or(1);
    let bits = tag(Tag::BitsPerSample)?.first().copied().unwrap_or(1);
    let (offsets, counts) = (tag(Tag::StripOffsets)?, tag(Tag::StripByteCounts)?);
    let contiguous = offsets.len() == counts.len()
        && offsets
            .windows(2)
            .zip(&counts)
            .all(|(o, &c)| o[0].checked_add(c) == Some(o[1]));
    let Some(&offset) = offsets.first().filter(|_| compression == 1 && contiguous) else {
        bail!(
            "an ImageJ stack of {images} images with one page directory, whose data is not \
                 one uncompressed run (compression {compression}, {} strips): not supported",
            offsets.len()
        );
    };
    let Some(sample) = sample_of(format, bits) else {
        bail!(
            "an ImageJ stack of {images} images of {bits}-bit samples of format {format}: \
                 not supported"
        )
    };
    let size = data_bytes(images as u64, (shape.0 as u64, shape.1 as u64), sample);
    let end = size.and_then(|size| size.checked_add(offset));
    if end.is_none_or(|end| end > len) {
        bail!(
            "truncated: an ImageJ stack of {images} images of {}x{} {} from byte {offset} \
                 ends at byte {} but the file has {len} bytes",
            shape.0,
            shape.1,
            sample.name(),
            show_bytes(end)
        );
    }
    let file = File::open(path).context("cannot open")?;
    let little = decoder.byte_order() == tiff::tags::ByteOrder::LittleEndian;
    Ok(RawFrames::new(
        file,
        offset,
        images,
        shape,
        Values::Samples(sample),
        little,
    ))
}

/// A page's (width, height) and color type, which must be one gray channel, of a size that a
/// file of `len` bytes can hold: the frames' buffers are allocated from it.
fn page_info(
    decoder: &mut Decoder<BufReader<File>>,
    page: usize,
    len: u64,
) -> Result<((u32, u32), ColorType, bool)> {
    let size = decoder
        .dimensions()
        .map_err(tiff_error)
        .with_context(|| format!("cannot read the size of page {page}"))?;
    let color = decoder
        .colortype()
        .map_err(tiff_error)
        .with_context(|| format!("cannot read the sample type of page {page}"))?;
    let ColorType::Gray(bits) = color else {
        bail!("page {page} is {color:?}: only grayscale (one sample per pixel) is supported");
    };
    // The crate hands packed samples (1 to 7 bits, 12 bits) over as packed bytes, which are
    // not one value per pixel.
    if !matches!(bits, 8 | 16 | 32 | 64) {
        let what = match bits {
            1 => "1-bit (bilevel)".to_string(),
            _ => format!("{bits}-bit"),
        };
        let s = if bits == 1 { "" } else { "s" };
        bail!(
            "page {page} has {bits} bit{s} per sample: {what} TIFFs are not supported \
             (8, 16, 32 or 64 bits per sample are)"
        );
    }
    // WhiteIsZero: the crate inverts unsigned samples as `max - v` (undone after decoding) and
    // floats as `1 - v`, which rounding makes impossible to undo.
    let white_is_zero = decoder
        .find_tag_unsigned::<u16>(Tag::PhotometricInterpretation)
        .map_err(tiff_error)
        .with_context(|| format!("cannot read the photometric interpretation of page {page}"))?
        == Some(PhotometricInterpretation::WhiteIsZero.to_u16());
    let format = decoder
        .find_tag_unsigned::<u16>(Tag::SampleFormat)
        .map_err(tiff_error)
        .with_context(|| format!("cannot read the sample format of page {page}"))?
        .unwrap_or(1);
    if white_is_zero && format != 1 {
        bail!(
            "page {page} is WhiteIsZero (inverted) with samples of format {format} (signed or \
             floating point): only unsigned integer samples are supported inverted"
        );
    }
    let compression = decoder
        .find_tag_unsigned::<u16>(Tag::Compression)
        .map_err(tiff_error)
        .with_context(|| format!("cannot read the compression of page {page}"))?
        .unwrap_or(1);
    let (width, height) = size;
    let bytes = (width as u64 * u64::from(bits / 8)).checked_mul(height as u64);
    let most = match compression {
        1 => len,
        _ => len.saturating_mul(MAX_EXPANSION as u64),
    };
    if bytes.is_none_or(|bytes| bytes > most) {
        let bound = match compression {
            1 => format!("the whole file ({len} bytes)"),
            _ => format!(
                "{MAX_EXPANSION} times the whole file ({len} bytes), which no compression reaches"
            ),
        };
        bail!(
            "page {page} is {height}x{width} pixels (rows x cols) of {bits} bits: {} bytes, \
             more than {bound}",
            show_bytes(bytes)
        );
    }
    // Its strips (or tiles) must lie within the file: one cut short ends inside them.
    let (offsets, counts) = match decoder.get_chunk_type() {
        ChunkType::Strip => (Tag::StripOffsets, Tag::StripByteCounts),
        ChunkType::Tile => (Tag::TileOffsets, Tag::TileByteCounts),
    };
    let mut chunk_tag = |tag: Tag| unsigned_values(decoder, tag, page);
    let (offsets, counts) = (chunk_tag(offsets)?, chunk_tag(counts)?);
    let end = offsets
        .iter()
        .zip(&counts)
        .map(|(&offset, &count)| offset.saturating_add(count))
        .max();
    if let Some(end) = end.filter(|&end| end > len) {
        bail!("truncated: page {page}'s data ends at byte {end} but the file has {len} bytes");
    }
    Ok((size, color, white_is_zero))
}

/// The unsigned values of `tag` of the current page (`page`, for the message); none if absent.
fn unsigned_values(
    decoder: &mut Decoder<BufReader<File>>,
    tag: Tag,
    page: usize,
) -> Result<Vec<u64>> {
    decoder
        .find_tag_unsigned_vec::<u64>(tag)
        .map_err(tiff_error)
        .with_context(|| format!("cannot read the {tag:?} of page {page}"))
        .map(Option::unwrap_or_default)
}

/// The `tiff` crate's error as one message. Its errors print their source's text within
/// their own and also give it as their source, so that a chain printed it twice ("failed to
/// fill whole buffer: failed to fill whole buffer"); an end of the data the checks at opening
/// did not foresee is said in words.
fn tiff_error(error: TiffError) -> anyhow::Error {
    match error {
        TiffError::IoError(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            anyhow!("the data ends early: the file is truncated, or a compressed page damaged")
        }
        other => anyhow!("{other}"),
    }
}

/// The tags the `tiff` crate reads to decode a page (and the description, read for ImageJ's
/// stacks). It allocates each one's values as many as the count says before reading them: up
/// to its default limit, 256 MiB, for a corrupted count, as `Decoder::new` reads the first page
/// before `with_limits` can lower that limit (tiff 0.11).
const DECODED_TAGS: &[u16] = &[
    256, 257, 258, 259, 262, 270, 273, 277, 278, 279, 284, 317, 322, 323, 324, 325, 338, 339, 347,
    530,
];

/// Walks the page directories as the `tiff` crate will, checking that each lies within the
/// file (`len` bytes; one beyond its end, or cut by it, is a truncated file) and that the
/// values of the tags the crate reads do too. What it cannot follow (no TIFF signature, a
/// cycle) is left for the crate to report.
fn check_directories(file: &mut File, len: u64) -> Result<()> {
    walk_directories(file, len, DECODED_TAGS, |_, _| Ok(())).map(|_| ())
}

/// A TIFF file's byte order and offset size (classic TIFF or BigTIFF).
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    big_endian: bool,
    bigtiff: bool,
}

impl Layout {
    /// An unsigned integer of 1, 2, 4 or 8 bytes in the file's byte order.
    pub fn uint(self, b: &[u8]) -> u64 {
        let mut word = [0u8; 8];
        if self.big_endian {
            word[8 - b.len()..].copy_from_slice(b);
            u64::from_be_bytes(word)
        } else {
            word[..b.len()].copy_from_slice(b);
            u64::from_le_bytes(word)
        }
    }

    /// The size of an offset, which is also the most bytes of values a directory entry holds.
    fn offset_bytes(self) -> usize {
        if self.bigtiff {
            8
        } else {
            4
        }
    }
}

/// One entry of a page directory: a tag and its values, held in the entry where they fit
/// (`field`) and at the offset it gives otherwise.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub tag: u16,
    /// The TIFF type of its values.
    kind: u64,
    bytes_each: u64,
    count: u64,
    field: [u8; 8],
}

impl Entry {
    /// The entry's values as unsigned integers (of the types BYTE, SHORT, LONG and LONG8;
    /// others are an error naming `what`), read from `file` when they are not held inline.
    pub fn unsigned(&self, file: &File, layout: Layout, what: &str) -> Result<Vec<u64>> {
        // BYTE, SHORT, LONG, LONG8.
        if !matches!(self.kind, 1 | 3 | 4 | 16) {
            bail!(
                "the {what} (tag {}) are of TIFF type {}, not unsigned integers",
                self.tag,
                self.kind
            );
        }
        let size = self.count * self.bytes_each; // checked against the file by the walk
        let offset_bytes = layout.offset_bytes();
        let bytes = if size <= offset_bytes as u64 {
            self.field[..size as usize].to_vec()
        } else {
            let mut bytes = vec![0u8; size as usize];
            read_at(file, layout.uint(&self.field[..offset_bytes]), &mut bytes)
                .with_context(|| format!("cannot read the {what} (tag {})", self.tag))?;
            bytes
        };
        Ok(bytes
            .chunks_exact(self.bytes_each as usize)
            .map(|b| layout.uint(b))
            .collect())
    }
}

/// Walks the page directories of the TIFF in `file` (`len` bytes), giving each page's index
/// and the entries of the tags in `wanted` to `page`; checks that every directory, and the
/// values of those tags, lie within the file (one beyond its end, or cut by it, is a
/// truncated file). `None`: no TIFF signature, or a page directory seen twice ends the walk.
pub fn walk_directories(
    file: &mut File,
    len: u64,
    wanted: &[u16],
    mut page: impl FnMut(usize, &[Entry]) -> Result<()>,
) -> Result<Option<Layout>> {
    let mut reader = BufReader::new(file);
    let mut head = Vec::with_capacity(16);
    reader
        .by_ref()
        .take(16)
        .read_to_end(&mut head)
        .context("cannot read the header")?;
    let big_endian = match head.get(..2) {
        Some(b"II") => false,
        Some(b"MM") => true,
        _ => return Ok(None),
    };
    let mut layout = Layout {
        big_endian,
        bigtiff: false,
    };
    layout.bigtiff = match head.get(2..4).map(|b| layout.uint(b)) {
        Some(42) | None => false,
        Some(43) => true,
        Some(_) => return Ok(None),
    };
    let header = if layout.bigtiff { 16 } else { 8 };
    if head.len() < header {
        bail!("truncated: the file has {len} bytes, fewer than the {header} of a TIFF header");
    }
    let mut next = if layout.bigtiff {
        layout.uint(&head[8..16])
    } else {
        layout.uint(&head[4..8])
    };
    // The sizes of a directory's entry count and of an offset (the largest inline value); an
    // entry is a tag, a type, a count and an offset.
    let offset_bytes = layout.offset_bytes();
    let count_bytes = if layout.bigtiff { 8 } else { 2 };
    let mut seen = std::collections::HashSet::new();
    let mut raw = [0u8; 20];
    let mut entries = Vec::new();
    for index in 0.. {
        if next == 0 || !seen.insert(next) {
            break;
        }
        let mut count = [0u8; 8];
        let directory_end = next.saturating_add(count_bytes as u64);
        if directory_end > len {
            bail!(
                "truncated: page {index}'s directory starts at byte {next}, but the file has \
                 {len} bytes"
            );
        }
        reader
            .seek(SeekFrom::Start(next))
            .and_then(|_| reader.read_exact(&mut count[..count_bytes]))
            .with_context(|| format!("cannot read page {index}'s directory"))?;
        let n = layout.uint(&count[..count_bytes]);
        let directory_end = n
            .checked_mul(4 + 2 * offset_bytes as u64)
            .and_then(|bytes| bytes.checked_add(directory_end + offset_bytes as u64));
        if directory_end.is_none_or(|end| end > len) {
            bail!(
                "truncated: page {index}'s directory of {n} entries at byte {next} ends at \
                 byte {} but the file has {len} bytes",
                show_bytes(directory_end)
            );
        }
        entries.clear();
        for _ in 0..n {
            let raw = &mut raw[..4 + 2 * offset_bytes];
            reader
                .read_exact(raw)
                .with_context(|| format!("cannot read page {index}'s directory"))?;
            let tag = layout.uint(&raw[..2]) as u16;
            let kind = layout.uint(&raw[2..4]);
            let bytes_each: u64 = match kind {
                1 | 2 | 6 | 7 => 1,
                3 | 8 => 2,
                4 | 9 | 11 | 13 => 4,
                5 | 10 | 12 | 16..=18 => 8,
                _ => continue, // an unknown type: the crate skips the entry
            };
            if !wanted.contains(&tag) {
                continue;
            }
            let count = layout.uint(&raw[4..4 + offset_bytes]);
            let mut field = [0u8; 8];
            field[..offset_bytes].copy_from_slice(&raw[4 + offset_bytes..]);
            let at = layout.uint(&field[..offset_bytes]);
            let size = count.checked_mul(bytes_each);
            let inline = size.is_some_and(|size| size <= offset_bytes as u64);
            if !inline
                && size
                    .and_then(|size| size.checked_add(at))
                    .is_none_or(|end| end > len)
            {
                bail!(
                    "page {index}: the {count} values of tag {tag} ({:?}), {} bytes at byte \
                     {at}, lie beyond the end of the file ({len} bytes)",
                    Tag::from_u16_exhaustive(tag),
                    show_bytes(size)
                );
            }
            entries.push(Entry {
                tag,
                kind,
                bytes_each,
                count,
                field,
            });
        }
        page(index, &entries)?;
        let mut pointer = [0u8; 8];
        reader
            .read_exact(&mut pointer[..offset_bytes])
            .with_context(|| format!("cannot read page {index}'s directory"))?;
        next = layout.uint(&pointer[..offset_bytes]);
    }
    Ok(Some(layout))
}

impl TiffReader {
    /// The sample type and strips of the current page, where its strips are decoded side by
    /// side: a compressed page of several strips, within the decoder's limits. Tiles,
    /// WhiteIsZero's inversion (which only the typed path undoes), and any page whose tags
    /// this cannot make out (RowsPerStrip 2^32 - 1, "one strip", overflows the crate's strip
    /// count) are decoded whole, which reports what is wrong with them.
    fn strips_to_share(&mut self) -> Option<(Sample, usize)> {
        if self.white_is_zero || self.decoder.get_chunk_type() != ChunkType::Strip {
            return None;
        }
        let mut tag = |tag: Tag| {
            let value = self.decoder.find_tag_unsigned::<u64>(tag).ok()?;
            Some(value.unwrap_or(1))
        };
        if tag(Tag::Compression)? == 1 {
            return None;
        }
        let sample = sample_of(tag(Tag::SampleFormat)?, tag(Tag::BitsPerSample)?)?;
        let strips = self.decoder.strip_count().ok()? as usize;
        let bytes = self.shape.0 * self.shape.1 * sample.size();
        (strips > 1 && bytes <= self.limits.decoding_buffer_size).then_some((sample, strips))
    }

    /// Decodes page `index`'s strips, a share on each worker with a decoder of its own, into
    /// `strip_bytes`, then converts them into `out`.
    fn read_strips(
        &mut self,
        index: usize,
        (sample, strips): (Sample, usize),
        out: &mut ArrayViewMut2<'_, f32>,
    ) -> Result<()> {
        use rayon::prelude::*;
        let strip_rows = self.decoder.chunk_dimensions().1 as usize;
        let row_bytes = self.shape.1 * sample.size();
        let workers = rayon::current_num_threads().clamp(1, strips);
        while self.strip_decoders.len() < workers {
            let file = File::open(&self.path).context("cannot open")?;
            let decoder = Decoder::new(BufReader::new(file)).map_err(tiff_error)?;
            let decoder = decoder.with_limits(self.limits.clone());
            self.strip_decoders.push(Mutex::new(decoder));
        }
        let per_worker = strips.div_ceil(workers);
        self.strip_bytes.resize(self.shape.0 * row_bytes, 0);
        self.strip_bytes
            .par_chunks_mut(per_worker * strip_rows * row_bytes)
            .zip(self.strip_decoders.par_iter())
            .enumerate()
            .try_for_each(|(share, (bytes, decoder))| {
                let mut decoder = decoder.lock().unwrap_or_else(|e| e.into_inner());
                decoder.seek_to_image(index).map_err(tiff_error)?;
                // The last strip may be shorter: so is the last piece.
                for (k, strip) in bytes.chunks_mut(strip_rows * row_bytes).enumerate() {
                    let chunk = (share * per_worker + k) as u32;
                    decoder
                        .read_chunk_bytes(chunk, strip)
                        .map_err(tiff_error)
                        .with_context(|| format!("strip {chunk}"))?;
                }
                anyhow::Ok(())
            })?;
        // The crate gives the samples in the machine's byte order.
        let little = cfg!(target_endian = "little");
        decode(&self.strip_bytes, sample, little, out);
        Ok(())
    }
}

impl FrameReader for TiffReader {
    fn frame_shape(&self) -> (usize, usize) {
        self.shape
    }
    fn len(&self) -> usize {
        self.frames
    }
    fn read_frame(&mut self, index: usize, mut out: ArrayViewMut2<'_, f32>) -> Result<()> {
        // A TIFF's first row is the top of the image, an MRC file's the bottom (y up): the
        // rows go in upside down, as IMOD, MotionCor2 and RELION read a TIFF, so that a TIFF
        // movie and an MRC gain (SerialEM's) agree and the sum shows in IMOD as the movie.
        out.invert_axis(Axis(0));
        if let Some(stack) = &mut self.contiguous {
            return stack.read_frame(index, out);
        }
        self.decoder
            .seek_to_image(index)
            .map_err(tiff_error)
            .context("cannot find the page")?;
        if let Some(strips) = self.strips_to_share() {
            return self
                .read_strips(index, strips, &mut out)
                .context("cannot decode the page");
        }
        // tiff 0.11 (weezl 0.1) fails on many tiled LZW pages that libtiff and tifffile read
        // (image-rs/image-tiff#395): its end of data error is then no truncation or damage.
        let tiled_lzw = self.decoder.get_chunk_type() == ChunkType::Tile
            && matches!(
                self.decoder.find_tag_unsigned::<u16>(Tag::Compression),
                Ok(Some(5))
            );
        let image = self.decoder.read_image().map_err(|e| match e {
            TiffError::IoError(e) if tiled_lzw && e.kind() == std::io::ErrorKind::UnexpectedEof => {
                anyhow!(
                    "a tiled LZW page that the `tiff` crate (0.11) cannot decode: damaged, or one \
                     of the many good ones it fails on that libtiff and tifffile read \
                     (image-rs/image-tiff#395); if tifffile reads it, save the movie in strips \
                     (no tiles) or with Deflate"
                )
            }
            e => tiff_error(e),
        });
        let image = image.context("cannot decode the page")?;
        // Converts a decoded page of any sample type; `iter_mut` walks `out` row-major.
        fn fill<T: Copy>(
            out: &mut ArrayViewMut2<'_, f32>,
            data: &[T],
            f: impl Fn(T) -> f32,
        ) -> Result<()> {
            if data.len() < out.len() {
                bail!(
                    "the page decodes to {} samples, expected {}",
                    data.len(),
                    out.len()
                );
            }
            out.iter_mut().zip(data).for_each(|(o, &v)| *o = f(v));
            Ok(())
        }
        // WhiteIsZero pages (unsigned only, checked at opening) back to their stored values.
        let white = self.white_is_zero;
        match image {
            DecodingResult::U8(d) if white => fill(&mut out, &d, |v| f32::from(u8::MAX - v)),
            DecodingResult::U16(d) if white => fill(&mut out, &d, |v| f32::from(u16::MAX - v)),
            DecodingResult::U32(d) if white => fill(&mut out, &d, |v| (u32::MAX - v) as f32),
            DecodingResult::U8(d) => fill(&mut out, &d, f32::from),
            DecodingResult::I8(d) => fill(&mut out, &d, f32::from),
            DecodingResult::U16(d) => fill(&mut out, &d, f32::from),
            DecodingResult::I16(d) => fill(&mut out, &d, f32::from),
            DecodingResult::U32(d) => fill(&mut out, &d, |v| v as f32),
            DecodingResult::I32(d) => fill(&mut out, &d, |v| v as f32),
            DecodingResult::F16(d) => fill(&mut out, &d, |v| v.to_f32()),
            DecodingResult::F32(d) => fill(&mut out, &d, |v| v),
            DecodingResult::F64(d) => fill(&mut out, &d, |v| v as f32),
            _ => bail!("unsupported TIFF sample type (64-bit integers)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::io::Movie;

    /// A little-endian TIFF of one 8x4 page of `bits`-bit gray samples (BlackIsZero, one
    /// uncompressed strip), written by hand: the `tiff` crate's encoder writes no packed
    /// samples.
    fn gray_tiff(bits: u16) -> Vec<u8> {
        let (width, height) = (8u32, 4u32);
        let data = vec![0b1010_0101u8; (width * u32::from(bits)).div_ceil(8) as usize * 4];
        // (tag, type: 3 SHORT or 4 LONG, value)
        let entries: [(u16, u16, u32); 9] = [
            (256, 4, width),
            (257, 4, height),
            (258, 3, u32::from(bits)),
            (259, 3, 1),
            (262, 3, 1),
            (273, 4, 8 + 2 + 9 * 12 + 4),
            (277, 3, 1),
            (278, 4, height),
            (279, 4, data.len() as u32),
        ];
        let mut bytes = b"II*\0".to_vec();
        bytes.extend(8u32.to_le_bytes());
        bytes.extend((entries.len() as u16).to_le_bytes());
        for (tag, kind, value) in entries {
            bytes.extend(tag.to_le_bytes());
            bytes.extend(kind.to_le_bytes());
            bytes.extend(1u32.to_le_bytes());
            match kind {
                3 => bytes.extend((value as u16).to_le_bytes().into_iter().chain([0, 0])),
                _ => bytes.extend(value.to_le_bytes()),
            }
        }
        bytes.extend(0u32.to_le_bytes());
        bytes.extend(data);
        bytes
    }

    /// A 1-bit (bilevel) TIFF, or one of other packed samples, is refused at once saying so
    /// (it opened, and reading it failed with "the page decodes to 4 samples, expected 32").
    #[test]
    fn packed_sample_tiffs_are_refused_naming_the_bits() {
        let dir = std::env::temp_dir().join(format!("ufunc-tiff-bits-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bilevel.tif");
        // The same file with 8-bit samples is read, so the layout above is a good TIFF.
        std::fs::write(&path, gray_tiff(8)).unwrap();
        let frames = Movie::open(&path).and_then(|mut m| m.read_all()).unwrap();
        assert_eq!(frames.dim(), (1, 4, 8));
        assert!(frames.iter().all(|&v| v == 165.0));
        for (bits, says) in [
            (
                1,
                "page 0 has 1 bit per sample: 1-bit (bilevel) TIFFs are not supported",
            ),
            (
                4,
                "page 0 has 4 bits per sample: 4-bit TIFFs are not supported",
            ),
        ] {
            std::fs::write(&path, gray_tiff(bits)).unwrap();
            let err = match Movie::open(&path).and_then(|mut m| m.read_all()) {
                Ok(_) => panic!("{bits} bits read"),
                Err(e) => format!("{e:#}"),
            };
            assert!(
                err.starts_with(&format!("{}: {says}", path.display())),
                "{err}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A little-endian TIFF of one page directory of 8x4 `u16` samples (photometric
    /// interpretation `photometric`, an optional ImageDescription) over `data`, one strip of
    /// `strip_bytes` of it, written by hand.
    fn u16_tiff(
        photometric: u16,
        description: Option<&str>,
        data: &[u16],
        strip_bytes: u32,
    ) -> Vec<u8> {
        let (width, height) = (8u32, 4u32);
        let text = description.map(|d| format!("{d}\0").into_bytes());
        let n = 9 + u16::from(text.is_some());
        let after = 8 + 2 + 12 * u32::from(n) + 4;
        let text_len = text.as_ref().map_or(0, |t| t.len() as u32);
        // (tag, type: 2 ASCII, 3 SHORT or 4 LONG, count, value)
        let mut entries: Vec<(u16, u16, u32, u32)> = vec![
            (256, 4, 1, width),
            (257, 4, 1, height),
            (258, 3, 1, 16),
            (259, 3, 1, 1),
            (262, 3, 1, u32::from(photometric)),
        ];
        if text.is_some() {
            entries.push((270, 2, text_len, after));
        }
        entries.extend([
            (273, 4, 1, after + text_len),
            (277, 3, 1, 1),
            (278, 4, 1, height),
            (279, 4, 1, strip_bytes),
        ]);
        let mut bytes = b"II*\0".to_vec();
        bytes.extend(8u32.to_le_bytes());
        bytes.extend(n.to_le_bytes());
        for (tag, kind, count, value) in entries {
            bytes.extend(tag.to_le_bytes());
            bytes.extend(kind.to_le_bytes());
            bytes.extend(count.to_le_bytes());
            match kind {
                3 => bytes.extend((value as u16).to_le_bytes().into_iter().chain([0, 0])),
                _ => bytes.extend(value.to_le_bytes()),
            }
        }
        bytes.extend(0u32.to_le_bytes());
        bytes.extend(text.unwrap_or_default());
        bytes.extend(data.iter().flat_map(|v| v.to_le_bytes()));
        bytes
    }

    /// The frames a TIFF of 8x4 pages over `data` is read as: each page upside down.
    fn upside_down(data: &[u16]) -> Vec<f32> {
        data.chunks(32)
            .flat_map(|page| page.chunks(8).rev().flatten())
            .map(|&v| f32::from(v))
            .collect()
    }

    fn read(name: &str, bytes: &[u8]) -> anyhow::Result<ndarray::Array3<f32>> {
        let dir = std::env::temp_dir().join(format!("ufunc-tiff-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.tif"));
        std::fs::write(&path, bytes).unwrap();
        let read = Movie::open(&path).and_then(|mut m| m.read_all());
        std::fs::remove_dir_all(&dir).unwrap();
        read
    }

    /// A WhiteIsZero page gives its stored values, as tifffile and libtiff (and so MotionCor2)
    /// read them; the `tiff` crate inverted them (`65535 - v`), so that the movie's aligned
    /// sum came out as its negative plus a constant.
    #[test]
    fn white_is_zero_pages_give_their_stored_values() {
        let data: Vec<u16> = (0..32).map(|i| i * 1000 + 7).collect();
        for photometric in [0, 1] {
            let frames = read("white", &u16_tiff(photometric, None, &data, 64)).unwrap();
            assert_eq!(frames.dim(), (1, 4, 8));
            assert_eq!(
                frames.into_raw_vec_and_offset().0,
                upside_down(&data),
                "photometric {photometric}"
            );
        }
    }

    /// RowsPerStrip 2^32 - 1, TIFF's "the whole image in one strip" (Pillow writes it), reads
    /// as any one strip: the strip count it overflows in the `tiff` crate is not asked for.
    #[test]
    fn rows_per_strip_of_two_to_the_32_minus_1_is_one_strip() {
        let data: Vec<u16> = (0..32).map(|i| i * 1000 + 7).collect();
        let mut bytes = u16_tiff(1, None, &data, 64);
        let rows_per_strip = 10 + 12 * 7;
        assert_eq!(
            u16::from_le_bytes([bytes[rows_per_strip], bytes[rows_per_strip + 1]]),
            278
        );
        bytes[rows_per_strip + 8..rows_per_strip + 12].copy_from_slice(&u32::MAX.to_le_bytes());
        let frames = read("one_strip", &bytes).unwrap();
        assert_eq!(frames.into_raw_vec_and_offset().0, upside_down(&data));
    }

    /// A compressed page of several strips is decoded a share of strips on each worker (the
    /// frames are those of the other formats: `every_format_reads_the_same_frames_bit_for_bit`);
    /// a page of one strip whole.
    #[test]
    fn compressed_pages_of_several_strips_are_decoded_side_by_side() {
        use crate::io::tests::fixture;
        use crate::io::FrameReader;
        use ndarray::Array2;
        let mut whole = super::TiffReader::open(&fixture("movie_u8_lzw.tif")).unwrap();
        let mut want = Array2::zeros(whole.frame_shape());
        whole.read_frame(2, want.view_mut()).unwrap();
        for (name, shared) in [
            ("movie_u8_lzw_strips.tif", true),
            ("movie_u8_lzw.tif", false),
        ] {
            let mut reader = super::TiffReader::open(&fixture(name)).unwrap();
            for workers in [1, 2, 3, 4] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(workers)
                    .build()
                    .unwrap();
                let mut frame = Array2::zeros(reader.frame_shape());
                pool.install(|| reader.read_frame(2, frame.view_mut()))
                    .unwrap();
                assert_eq!(frame, want, "{name} on {workers} workers");
                let decoders = reader.strip_decoders.len();
                assert_eq!(decoders, if shared { workers } else { 0 }, "{name}");
            }
        }
        assert_eq!(whole.strip_decoders.len(), 0);
    }

    /// An ImageJ stack with one page directory and `images=3` in its description (ImageJ's
    /// layout for stacks over 4 GiB, tifffile's `truncate=True`) is three frames, stored one
    /// after the other, as tifffile reads it; it was read as a movie of one frame. Its data cut
    /// short is an error saying so.
    #[test]
    fn an_imagej_stack_with_one_directory_has_all_its_images() {
        let data: Vec<u16> = (0..96).map(|i| i * 3 + 1).collect();
        let description = "ImageJ=1.11a\nimages=3\nframes=3\nloop=false\n";
        let frames = read("imagej", &u16_tiff(1, Some(description), &data, 64)).unwrap();
        assert_eq!(frames.dim(), (3, 4, 8));
        assert_eq!(frames.into_raw_vec_and_offset().0, upside_down(&data));
        let err = read(
            "imagej-cut",
            &u16_tiff(1, Some(description), &data[..80], 64),
        )
        .unwrap_err();
        let err = format!("{err:#}");
        assert!(
            err.contains("truncated: an ImageJ stack of 3 images of 4x8 uint16"),
            "{err}"
        );
        // Spaces around `=` are read as tifffile reads them; one image, or no ImageJ
        // description, is the one page.
        for (description, frames) in [
            ("ImageJ=1.11a\nimages = 3\n", 3),
            ("ImageJ=1.11a\nimages=1\n", 1),
            ("images=3", 1),
        ] {
            let bytes = u16_tiff(1, Some(description), &data, 64);
            let read = read("imagej-count", &bytes).unwrap();
            assert_eq!(read.dim(), (frames, 4, 8), "{description:?}");
        }
        // A description that is no UTF-8 (Latin-1's µ) is no ImageJ one: the page opens.
        let mut latin1 = u16_tiff(1, Some("1.0 um"), &data, 64);
        let at = latin1.windows(6).position(|w| w == b"1.0 um").unwrap();
        latin1[at + 4] = 0xB5;
        assert_eq!(read("latin1", &latin1).unwrap().dim(), (1, 4, 8));
    }
}
