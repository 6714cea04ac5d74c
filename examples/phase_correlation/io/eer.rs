//! Thermo Fisher's EER movies (Falcon 4 and 4i): a BigTIFF of one page per detector frame,
//! each page a stream of electron events (the run of empty pixels before each event, then the
//! event's sub-pixel position) in one of the EER codings: compression 65000 (8-bit runs,
//! 2+2 sub-pixel bits), 65001 (7-bit runs) and 65002 (the run and sub-pixel widths in tags
//! 65007-65009). The hundreds or thousands of detector frames are summed in groups into the
//! frames that are aligned (`--eer-grouping`, RELION's `--eer_grouping`; the pages left over
//! are left out, as RELION leaves them), rendered at the detector's pixels or, from the
//! events' sub-pixel positions, at 2 or 4 times as many per axis (`--eer-upsampling` 1, 2 or
//! 3, RELION's `--eer_upsampling` and MotionCor2's `-EerSampling`).
//!
//! The decoding follows RELION's (`renderEER.cpp`) and Thermo Fisher's EerReaderLib: bits
//! are read least significant first; a run of all ones adds its length and codes no event;
//! a sub-pixel field's top bit is inverted; the 8-bit coding follows such a run with unused
//! sub-pixel bits (imagecodecs' decoder does not, and disagrees on those files). Rows are
//! the detector's as the stream orders them (row 0 first), as RELION renders them: unlike a
//! TIFF movie's, they are not turned upside down. A page whose runs do not end exactly at
//! its last pixel is an error naming it (RELION warns and leaves the page out).

use super::tiff::{walk_directories, Entry};
use super::{file_len, read_at, FrameReader};
use anyhow::{bail, Context, Result};
use ndarray::{Array2, ArrayViewMut2};
use rayon::prelude::*;
use std::fs::File;
use std::path::Path;

/// How an EER movie becomes frames: `grouping` detector frames summed into each frame,
/// rendered at `upsampling` (1: the detector's pixels; 2 and 3: 2 and 4 times as many per
/// axis).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct EerRendering {
    pub grouping: usize,
    pub upsampling: u32,
}

#[cfg(test)]
impl EerRendering {
    /// These, with `grouping`.
    fn with(self, grouping: usize) -> EerRendering {
        EerRendering { grouping, ..self }
    }
}

impl Default for EerRendering {
    /// RELION's defaults.
    fn default() -> Self {
        EerRendering {
            grouping: 40,
            upsampling: 1,
        }
    }
}

/// The EER tags: compression, and the widths of the runs and sub-pixel fields of 65002.
const COMPRESSION: u16 = 259;
const RUN_BITS: u16 = 65007;
const HORIZONTAL_BITS: u16 = 65008;
const VERTICAL_BITS: u16 = 65009;
const WANTED: &[u16] = &[
    256,
    257,
    COMPRESSION,
    273,
    279,
    322,
    RUN_BITS,
    HORIZONTAL_BITS,
    VERTICAL_BITS,
];

/// The largest frame rendered: 32768x32768 pixels (a Falcon 4's 4096x4096 at upsampling 3 is
/// 16384x16384), 4 GiB of `f32`.
const MOST_PIXELS: u64 = 1 << 30;

/// How a page codes its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coding {
    run_bits: u32,
    horizontal_bits: u32,
    vertical_bits: u32,
    /// A run of all ones is followed by unused sub-pixel bits (65000).
    padded_runs: bool,
}

impl Coding {
    /// The coding of a page compressed by `compression`, with the 65002 tags' widths.
    fn of(compression: u64, widths: [Option<u64>; 3], page: usize) -> Result<Coding> {
        let [run, horizontal, vertical] = widths;
        let coding = match compression {
            65000 => Coding {
                run_bits: 8,
                horizontal_bits: 2,
                vertical_bits: 2,
                padded_runs: true,
            },
            65001 => Coding {
                run_bits: 7,
                horizontal_bits: 2,
                vertical_bits: 2,
                padded_runs: false,
            },
            65002 => {
                // Prototypes wrote no vertical width: the horizontal one (RELION).
                let horizontal = horizontal.unwrap_or(2);
                let width = |w: u64| u32::try_from(w).unwrap_or(u32::MAX);
                let coding = Coding {
                    run_bits: width(run.unwrap_or(7)),
                    horizontal_bits: width(horizontal),
                    vertical_bits: width(vertical.unwrap_or(horizontal)),
                    padded_runs: false,
                };
                // What follows a full 8-bit run in this coding is not known (RELION, too,
                // reads only 7-bit runs in it).
                if coding.run_bits != 7 {
                    bail!(
                        "page {page} codes events in {}-bit runs under compression 65002, \
                         which has 7-bit runs",
                        coding.run_bits
                    );
                }
                coding
            }
            other => {
                bail!("page {page} has compression {other}, not one of EER's (65000, 65001, 65002)")
            }
        };
        let Coding {
            run_bits: r,
            horizontal_bits: h,
            vertical_bits: v,
            ..
        } = coding;
        if !(7..=8).contains(&r) || !(1..=2).contains(&h) || !(1..=2).contains(&v) {
            bail!(
                "page {page} codes events in {r}-bit runs with {h}+{v} sub-pixel bits, which \
                 no EER coding has (runs of 7 or 8 bits, 1 or 2 sub-pixel bits per axis)"
            );
        }
        Ok(coding)
    }

    fn sub_bits(self) -> u32 {
        self.horizontal_bits + self.vertical_bits
    }

    /// The most pixels `bytes` of this coding can cover: all of them full runs.
    fn most_pixels(self, bytes: u64) -> u64 {
        let bits_per_run = self.run_bits + if self.padded_runs { self.sub_bits() } else { 0 };
        bytes * 8 / u64::from(bits_per_run) * ((1 << self.run_bits) - 1)
    }
}

/// A bound on the detector pixels a byte of EER data covers (7-bit runs cover 145, 65000's
/// padded 8-bit runs 170): what bounds a frame's size by its file's ([`Coding::most_pixels`],
/// checked at opening).
#[cfg(test)]
pub const MAX_EXPANSION: usize = 255;

/// Reads an EER movie's frames, each the sum of a group of its pages.
pub struct EerReader {
    file: File,
    coding: Coding,
    /// `(rows, cols)` of the detector.
    detector: (usize, usize),
    /// The strips of each page (EER frame): `(offset, bytes)`.
    pages: Vec<Vec<(u64, u64)>>,
    rendering: EerRendering,
    /// A leading page of the integrated image (compression 1), left out.
    integrated: bool,
}

impl EerReader {
    /// Walks the pages, checking that they are all EER-coded alike, of one size, and within
    /// the file, and that there are enough for one group.
    pub fn open(path: &Path, rendering: EerRendering) -> Result<EerReader> {
        let mut file = File::open(path).context("cannot open")?;
        let len = file_len(&file)?;
        let mut directories = Vec::new();
        let layout = walk_directories(&mut file, len, WANTED, |_, entries| {
            directories.push(entries.to_vec());
            Ok(())
        })?;
        let Some(layout) = layout else {
            bail!("not an EER file: it does not start as a TIFF does");
        };
        let find = |entries: &[Entry], tag| entries.iter().find(|e| e.tag == tag).copied();
        // An entry's values, errors naming the page.
        let values = |entry: Entry, what: &str, page: usize| {
            entry
                .unsigned(&file, layout, what)
                .with_context(|| format!("page {page}"))
        };
        let single = |entries: &[Entry], tag, what: &str, page: usize| -> Result<Option<u64>> {
            match find(entries, tag) {
                None => Ok(None),
                Some(entry) => match values(entry, what, page)?[..] {
                    [value] => Ok(Some(value)),
                    ref values => bail!("page {page}: {} values for its {what}", values.len()),
                },
            }
        };
        // TIA can write the integrated image first (compression 1), as tifffile reads it.
        let integrated = match directories.first() {
            Some(first) => single(first, COMPRESSION, "compression", 0)? == Some(1),
            None => false,
        };
        let mut pages = Vec::new();
        let mut first: Option<(Coding, (usize, usize))> = None;
        for (page, entries) in directories.iter().enumerate().skip(usize::from(integrated)) {
            let what = |tag, what: &str| -> Result<u64> {
                single(entries, tag, what, page)?
                    .with_context(|| format!("page {page} has no {what} (tag {tag})"))
            };
            let compression = what(COMPRESSION, "compression")?;
            let widths = [RUN_BITS, HORIZONTAL_BITS, VERTICAL_BITS]
                .map(|tag| single(entries, tag, "coding widths", page));
            let [r, h, v] = widths;
            let coding = Coding::of(compression, [r?, h?, v?], page)?;
            let (cols, rows) = (what(256, "width")?, what(257, "length")?);
            let shape = (rows as usize, cols as usize);
            if rows == 0 || cols == 0 || rows.checked_mul(cols).is_none_or(|n| n > 1 << 34) {
                bail!("page {page} is {rows}x{cols} pixels (rows x cols), which no detector is");
            }
            match first {
                None => first = Some((coding, shape)),
                Some((c, s)) if (c, s) != (coding, shape) => bail!(
                    "page {page} is {}x{} pixels coded as {coding:?}, the first page {}x{} \
                     coded as {c:?}: an EER movie's pages are all alike",
                    shape.0,
                    shape.1,
                    s.0,
                    s.1
                ),
                Some(_) => {}
            }
            if find(entries, 322).is_some() {
                bail!("page {page} is tiled: EER pages are stored in strips");
            }
            let offsets = find(entries, 273).with_context(|| format!("page {page} has no data"))?;
            let counts = find(entries, 279)
                .with_context(|| format!("page {page} has no byte counts for its data"))?;
            let offsets = values(offsets, "strip offsets", page)?;
            let counts = values(counts, "strip byte counts", page)?;
            if offsets.len() != counts.len() {
                bail!(
                    "page {page} has {} strip offsets but {} byte counts",
                    offsets.len(),
                    counts.len()
                );
            }
            let strips: Vec<(u64, u64)> = offsets.into_iter().zip(counts).collect();
            if let Some(end) = strips
                .iter()
                .map(|&(offset, bytes)| offset.saturating_add(bytes))
                .find(|&end| end > len)
            {
                bail!(
                    "truncated: page {page}'s data ends at byte {end} but the file has {len} bytes"
                );
            }
            // Strips listed twice would count their bytes twice: all of them together cannot
            // be more than the file.
            let bytes = strips
                .iter()
                .try_fold(0u64, |sum, &(_, bytes)| sum.checked_add(bytes))
                .filter(|&sum| sum <= len);
            let Some(bytes) = bytes else {
                bail!("page {page}'s strips add up to more bytes than the file's {len}");
            };
            let most = coding.most_pixels(bytes);
            if rows * cols > most {
                bail!(
                    "page {page} is damaged: its {bytes} bytes of events cannot cover its \
                     {rows}x{cols} pixels (at most {most})"
                );
            }
            pages.push(strips);
        }
        let Some((coding, detector)) = first else {
            bail!("no EER frames: the file has no pages of electron events");
        };
        if !(1..=3).contains(&rendering.upsampling) {
            bail!(
                "EER upsampling {} (1, 2 or 3: the detector's pixels, or 2 or 4 times as many \
                 per axis)",
                rendering.upsampling
            );
        }
        let doubling = rendering.upsampling - 1;
        let rendered = (detector.0 as u64 * detector.1 as u64) << (2 * doubling);
        if rendered > MOST_PIXELS {
            bail!(
                "frames of {}x{} pixels at EER upsampling {}: {rendered} pixels, more than the \
                 {MOST_PIXELS} (a 32768x32768 frame) read here",
                detector.0,
                detector.1,
                rendering.upsampling
            );
        }
        if doubling > coding.horizontal_bits.min(coding.vertical_bits) {
            bail!(
                "EER upsampling {} needs {doubling} sub-pixel bits per axis, and the events of \
                 this movie have {} across and {} down",
                rendering.upsampling,
                coding.horizontal_bits,
                coding.vertical_bits
            );
        }
        if rendering.grouping == 0 || pages.len() < rendering.grouping {
            bail!(
                "{} EER frames, fewer than one group of {} (--eer-grouping)",
                pages.len(),
                rendering.grouping
            );
        }
        Ok(EerReader {
            file,
            coding,
            detector,
            pages,
            rendering,
            integrated,
        })
    }

    /// The pages left over after the last whole group, which no frame holds.
    fn left_over(&self) -> usize {
        self.pages.len() % self.rendering.grouping
    }
}

impl FrameReader for EerReader {
    fn frame_shape(&self) -> (usize, usize) {
        let doubling = self.rendering.upsampling - 1;
        (self.detector.0 << doubling, self.detector.1 << doubling)
    }

    fn len(&self) -> usize {
        self.pages.len() / self.rendering.grouping
    }

    fn read_frame(&mut self, index: usize, mut out: ArrayViewMut2<'_, f32>) -> Result<()> {
        if !out.is_standard_layout() {
            let mut frame = Array2::zeros(out.dim());
            self.read_frame(index, frame.view_mut())?;
            out.assign(&frame);
            return Ok(());
        }
        let doubling = self.rendering.upsampling - 1;
        let cols = self.detector.1 << doubling;
        let group = index * self.rendering.grouping..(index + 1) * self.rendering.grouping;
        let page_offset = usize::from(self.integrated);
        let name = |page: usize| format!("EER frame {page} (page {})", page + page_offset);
        // Each page's data, read one after another (they lie so in the file), then decoded
        // side by side into its events' places in the frame (row-major, as the stream orders
        // them; below 2^30, MOST_PIXELS).
        let mut streams = Vec::with_capacity(group.len());
        for page in group.clone() {
            let mut bytes = Vec::new();
            for &(offset, size) in &self.pages[page] {
                let start = bytes.len();
                bytes.resize(start + size as usize, 0);
                read_at(&self.file, offset, &mut bytes[start..]).with_context(|| name(page))?;
            }
            streams.push(bytes);
        }
        let (h, v) = (self.coding.horizontal_bits, self.coding.vertical_bits);
        let (coding, detector) = (self.coding, self.detector);
        let places: Vec<Vec<u32>> = streams
            .par_iter()
            .zip(group)
            .map(|(bytes, page)| {
                let mut places = Vec::with_capacity(bytes.len() * 8 / 11);
                decode_page(bytes, coding, detector, |e| {
                    let r = (e.row << doubling) | (e.y >> (v - doubling)) as usize;
                    let c = (e.col << doubling) | (e.x >> (h - doubling)) as usize;
                    places.push((r * cols + c) as u32);
                })
                .with_context(|| format!("{} is damaged", name(page)))?;
                Ok(places)
            })
            .collect::<Result<_>>()?;
        // The events counted a band of rows at a time, the band staying in cache while every
        // page adds its events in it (a page at a time would sweep the whole frame per page).
        // A band holds whole detector rows, and a page's events come in detector-row order: its
        // events in a band are the run of its places within the band's.
        const BAND_ROWS: usize = 32;
        let image = out.as_slice_mut().unwrap_or_default();
        let band = (BAND_ROWS << doubling) * cols;
        image
            .par_chunks_mut(band)
            .enumerate()
            .for_each(|(b, counts)| {
                let start = b * band; // the last band may be shorter
                let end = start + counts.len();
                counts.fill(0.0);
                for places in &places {
                    let from = places.partition_point(|&p| (p as usize) < start);
                    for &p in places[from..].iter().take_while(|&&p| (p as usize) < end) {
                        counts[p as usize - start] += 1.0;
                    }
                }
            });
        Ok(())
    }

    fn note(&self) -> Option<String> {
        let left = self.left_over();
        let left_out = match left {
            0 => String::new(),
            1 => "; the last one is left out".to_owned(),
            n => format!("; the last {n} are left out"),
        };
        Some(format!(
            "{} EER frames of {}x{} summed in groups of {} at upsampling {}{left_out}",
            self.pages.len(),
            self.detector.0,
            self.detector.1,
            self.rendering.grouping,
            self.rendering.upsampling
        ))
    }

    fn upsampling(&self) -> usize {
        1 << (self.rendering.upsampling - 1)
    }
}

/// An electron event: its detector pixel and its sub-pixel position in it (`x` across, `y`
/// down, from the pixel's left and top edges, in units of 1/2^bits of the pixel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub row: usize,
    pub col: usize,
    pub x: u32,
    pub y: u32,
}

/// The 64 bits of `bytes` from bit `bit` on, least significant first (zeros past the end).
#[inline]
fn bits_at(bytes: &[u8], bit: u64) -> u64 {
    let byte = (bit / 8) as usize;
    let word = match bytes.get(byte..byte + 8) {
        Some(word) => u64::from_le_bytes(word.try_into().expect("8 bytes")),
        None => {
            let mut word = [0u8; 8];
            let tail = bytes.get(byte..).unwrap_or_default();
            word[..tail.len()].copy_from_slice(tail);
            u64::from_le_bytes(word)
        }
    };
    word >> (bit % 8)
}

/// Decodes one page of `detector` pixels (rows, cols) coded as `coding`, giving each event to
/// `event` in order. An error says where the stream goes wrong:
/// it ends before its runs reach the last pixel, or they run past it.
pub fn decode_page(
    bytes: &[u8],
    coding: Coding,
    detector: (usize, usize),
    mut event: impl FnMut(Event),
) -> Result<()> {
    let pixels = (detector.0 * detector.1) as u64;
    let cols = detector.1;
    let run_bits = u64::from(coding.run_bits);
    let sub_bits = u64::from(coding.sub_bits());
    let full_run = (1u64 << run_bits) - 1;
    let (h, v) = (coding.horizontal_bits, coding.vertical_bits);
    let (x_mask, y_mask) = ((1u32 << h) - 1, (1u32 << v) - 1);
    let (x_flip, y_flip) = (1u32 << (h - 1), 1u32 << (v - 1));
    let stream_bits = bytes.len() as u64 * 8;
    let (mut bit, mut pixel) = (0u64, 0u64);
    let (mut row, mut col) = (0usize, 0usize);
    loop {
        if bit + run_bits > stream_bits {
            if pixel == pixels {
                break; // the last pixel held an event, and no closing run follows it
            }
            bail!("its data end after {pixel} of its {pixels} pixels");
        }
        let word = bits_at(bytes, bit);
        let run = word & full_run;
        bit += run_bits;
        pixel += run;
        if pixel >= pixels {
            if pixel > pixels {
                bail!("its runs pass its last pixel: {pixel} of {pixels}");
            }
            break;
        }
        col += run as usize;
        while col >= cols {
            col -= cols;
            row += 1;
        }
        if run == full_run {
            if coding.padded_runs {
                bit += sub_bits;
            }
            continue;
        }
        if bit + sub_bits > stream_bits {
            bail!("its data end inside the event at pixel {pixel} of {pixels}");
        }
        let sub = (word >> run_bits) as u32;
        event(Event {
            row,
            col,
            x: (sub & x_mask) ^ x_flip,
            y: ((sub >> h) & y_mask) ^ y_flip,
        });
        bit += sub_bits;
        pixel += 1;
        col += 1;
        if col == cols {
            col = 0;
            row += 1;
        }
    }
    Ok(())
}

/// Writing EER movies, for the tests: the coding that [`decode_page`] reads, checked against
/// the fixtures' pages (which tifffile and imagecodecs decode as the fixtures say).
#[cfg(test)]
pub(crate) mod writer {
    use super::{Coding, Event};
    use std::path::Path;

    /// EPU's coding: 7-bit runs, 2+2 sub-pixel bits (compression 65001).
    pub const V1: Coding = Coding {
        run_bits: 7,
        horizontal_bits: 2,
        vertical_bits: 2,
        padded_runs: false,
    };

    /// The stream of one page of `detector` pixels holding `events` (in row-major order, at
    /// most one per pixel).
    pub fn encode_page(events: &[Event], coding: Coding, detector: (usize, usize)) -> Vec<u8> {
        let (mut bits, mut used) = (Vec::<u8>::new(), 0usize);
        let mut push = |value: u64, width: u32| {
            for i in 0..width {
                if used % 8 == 0 {
                    bits.push(0);
                }
                bits[used / 8] |= (((value >> i) & 1) as u8) << (used % 8);
                used += 1;
            }
        };
        let full = (1u64 << coding.run_bits) - 1;
        let run = |push: &mut dyn FnMut(u64, u32), mut gap: u64, last: bool| {
            while gap >= full {
                push(full, coding.run_bits);
                if coding.padded_runs {
                    push(0, coding.sub_bits());
                }
                gap -= full;
                if last && gap == 0 {
                    return;
                }
            }
            push(gap, coding.run_bits);
        };
        let mut next = 0u64;
        for e in events {
            let pixel = (e.row * detector.1 + e.col) as u64;
            run(&mut push, pixel - next, false);
            let x = e.x ^ (1 << (coding.horizontal_bits - 1));
            let y = e.y ^ (1 << (coding.vertical_bits - 1));
            push(
                u64::from(x | (y << coding.horizontal_bits)),
                coding.sub_bits(),
            );
            next = pixel + 1;
        }
        run(&mut push, (detector.0 * detector.1) as u64 - next, true);
        if bits.len() % 2 == 1 {
            bits.push(0);
        }
        bits
    }

    /// A little-endian BigTIFF EER movie (compression 65001) of one page per element of
    /// `pages`, each in one strip.
    pub fn write_eer(path: &Path, pages: &[Vec<Event>], detector: (usize, usize)) {
        write_eer_in_strips(path, pages, detector, 1);
    }

    /// [`write_eer`], each page's stream cut into `strips` strips (stored in reverse order,
    /// so that only the strip offsets give their order).
    pub fn write_eer_in_strips(
        path: &Path,
        pages: &[Vec<Event>],
        detector: (usize, usize),
        strips: usize,
    ) {
        let streams: Vec<Vec<u8>> = pages
            .iter()
            .map(|events| encode_page(events, V1, detector))
            .collect();
        let mut file = b"II".to_vec();
        file.extend(43u16.to_le_bytes());
        file.extend(8u16.to_le_bytes());
        file.extend(0u16.to_le_bytes());
        file.extend(0u64.to_le_bytes()); // the first directory, patched below
        let mut previous_pointer = 8;
        for stream in &streams {
            let piece = stream.len().div_ceil(strips);
            let pieces: Vec<&[u8]> = stream.chunks(piece.max(1)).collect();
            let mut offsets = vec![0u64; pieces.len()];
            for (i, piece) in pieces.iter().enumerate().rev() {
                offsets[i] = file.len() as u64;
                file.extend(*piece);
            }
            // One strip's offset and size are held in the entry, several's in arrays.
            let (data, sizes) = if pieces.len() == 1 {
                (offsets[0], stream.len() as u64)
            } else {
                let at = file.len() as u64;
                file.extend(offsets.iter().flat_map(|o| o.to_le_bytes()));
                let sizes_at = file.len() as u64;
                file.extend(pieces.iter().flat_map(|p| (p.len() as u64).to_le_bytes()));
                (at, sizes_at)
            };
            let count = pieces.len() as u64;
            let directory = file.len();
            file[previous_pointer..previous_pointer + 8]
                .copy_from_slice(&(directory as u64).to_le_bytes());
            let tags: [(u16, u16, u64, u64); 6] = [
                (256, 4, 1, detector.1 as u64),
                (257, 4, 1, detector.0 as u64),
                (259, 3, 1, 65001),
                (262, 3, 1, 1),
                (273, 16, count, data),
                (279, 16, count, sizes),
            ];
            file.extend((tags.len() as u64).to_le_bytes());
            for (tag, kind, count, value) in tags {
                file.extend(tag.to_le_bytes());
                file.extend(kind.to_le_bytes());
                file.extend(count.to_le_bytes());
                file.extend(value.to_le_bytes());
            }
            previous_pointer = file.len();
            file.extend(0u64.to_le_bytes());
        }
        std::fs::write(path, file).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::writer::{self, encode_page, V1};
    use super::*;
    use crate::io::Movie;
    use ndarray::{s, Array2, Array3, Axis, ShapeBuilder};
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(format!(
            "{}/tests/fixtures/eer/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
    }

    /// The fixture's pages as the peers decoded them, at `upsampling`.
    fn expected(name: &str, upsampling: u32) -> Array3<f32> {
        let suffix = match upsampling {
            1 => String::new(),
            u => format!(".up{u}"),
        };
        let path = fixture(&format!("{name}{suffix}.npy"));
        let pages: Array3<u8> = ndarray_npy::read_npy(&path).unwrap();
        pages.mapv(f32::from)
    }

    fn read(name: &str, grouping: usize, upsampling: u32) -> Result<Array3<f32>> {
        let rendering = EerRendering {
            grouping,
            upsampling,
        };
        let mut movie = Movie::open_with(&fixture(&format!("{name}.eer")), rendering)?;
        let (ny, nx) = movie.frame_shape();
        let mut frames = Array3::zeros((movie.len(), ny, nx));
        for (i, frame) in frames.outer_iter_mut().enumerate() {
            movie.read_frame(i, frame)?;
        }
        Ok(frames)
    }

    /// `pages` summed in groups of `grouping`, the pages left over left out.
    fn grouped(pages: &Array3<f32>, grouping: usize) -> Array3<f32> {
        let groups = pages.len_of(Axis(0)) / grouping;
        let (_, ny, nx) = pages.dim();
        Array3::from_shape_fn((groups, ny, nx), |(g, y, x)| {
            (0..grouping).map(|i| pages[(g * grouping + i, y, x)]).sum()
        })
    }

    #[test]
    fn every_coding_reads_as_the_peers_or_relion_decode_it() {
        for (name, upsamplings) in [
            ("v1", &[1, 2, 3][..]),
            ("v0", &[1, 2]),
            ("v2", &[1, 2]),
            ("integrated_first", &[1, 2]),
            // Full runs in the 8-bit coding, as RELION decodes them (see the fixture script).
            ("v0_long_runs", &[1, 2]),
        ] {
            for &upsampling in upsamplings {
                let pages = expected(name, upsampling);
                assert_eq!(
                    read(name, 1, upsampling).unwrap(),
                    pages,
                    "{name} {upsampling}"
                );
                for grouping in [2, 3] {
                    let frames = read(name, grouping, upsampling).unwrap();
                    assert_eq!(frames, grouped(&pages, grouping), "{name} {grouping}");
                }
            }
        }
    }

    #[test]
    fn the_log_tells_the_groups_and_the_frames_left_out() {
        let movie = |grouping| {
            let rendering = EerRendering {
                grouping,
                upsampling: 2,
            };
            Movie::open_with(&fixture("v1.eer"), rendering).unwrap()
        };
        let four = movie(4);
        assert_eq!((four.len(), four.frame_shape()), (1, (96, 128)));
        assert_eq!(
            four.note().unwrap(),
            "6 EER frames of 48x64 summed in groups of 4 at upsampling 2; the last 2 are left out"
        );
        assert!(!movie(3).note().unwrap().contains("left out"));
        assert!(movie(5)
            .note()
            .unwrap()
            .ends_with("the last one is left out"));
    }

    #[test]
    fn frames_of_any_layout_are_rendered_alike() {
        let rendering = EerRendering {
            grouping: 2,
            upsampling: 1,
        };
        let mut movie = Movie::open_with(&fixture("v1.eer"), rendering).unwrap();
        let mut standard = Array2::zeros((48, 64));
        let mut fortran = Array2::zeros((48, 64).f());
        movie.read_frame(1, standard.view_mut()).unwrap();
        movie.read_frame(1, fortran.view_mut()).unwrap();
        assert_eq!(standard, fortran);
        assert_eq!(
            standard,
            grouped(&expected("v1", 1), 2).slice(s![1, .., ..])
        );
    }

    #[test]
    fn bad_files_and_settings_are_errors_that_say_what_is_wrong() {
        let error = |name: &str, grouping, upsampling| {
            format!("{:#}", read(name, grouping, upsampling).unwrap_err())
        };
        let cases = [
            ("bad_runs_past", 1, 1, "EER frame 1 (page 1) is damaged: its runs pass its last pixel: 3077 of 3072"),
            ("bad_ends_early", 1, 1, "EER frame 2 (page 2) is damaged: its data end after"),
            ("bad_mixed", 1, 1, "page 1 is 48x64 pixels coded as"),
            ("bad_compression", 1, 1, "page 1 has compression 5, not one of EER's (65000, 65001, 65002)"),
            ("bad_truncated", 1, 1, "truncated: page 2's data ends at byte"),
            ("v1", 7, 1, "6 EER frames, fewer than one group of 7 (--eer-grouping)"),
            ("v2", 1, 3, "EER upsampling 3 needs 2 sub-pixel bits per axis, and the events of this movie have 1 across and 1 down"),
            ("v1", 1, 4, "EER upsampling 4 (1, 2 or 3"),
        ];
        for (name, grouping, upsampling, wanted) in cases {
            let error = error(name, grouping, upsampling);
            assert!(error.contains(wanted), "{name}: {error}");
            assert!(error.contains(&format!("{name}.eer")), "{name}: {error}");
        }
        // Damage is found when the frame holding it is read, and only then.
        let rendering = EerRendering {
            grouping: 1,
            upsampling: 1,
        };
        let mut movie = Movie::open_with(&fixture("bad_ends_early.eer"), rendering).unwrap();
        let mut frame = Array2::zeros(movie.frame_shape());
        movie.read_frame(1, frame.view_mut()).unwrap();
        let error = format!("{:#}", movie.read_frame(2, frame.view_mut()).unwrap_err());
        assert!(error.contains("bad_ends_early.eer: frame 2"), "{error}");
    }

    /// A page's strips listed so that they add up to more than the file (each within it), and
    /// frames beyond the largest rendered, are refused when the movie is opened.
    #[test]
    fn strips_beyond_the_file_and_frames_beyond_the_largest_are_refused() {
        let dir = std::env::temp_dir().join(format!("ufunc-eer-big-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("repeated.eer");
        let event = Event {
            row: 1,
            col: 2,
            x: 0,
            y: 0,
        };
        writer::write_eer_in_strips(&path, &[vec![event]], (48, 64), 3);
        let mut bytes = std::fs::read(&path).unwrap();
        let len = bytes.len() as u64;
        // One page: its directory, the strips' sizes before it, their offsets before those.
        let directory = u64::from_le_bytes(bytes[8..16].try_into().unwrap()) as usize;
        for i in 0..3 {
            let offsets = directory - 48 + 8 * i;
            bytes[offsets..offsets + 8].copy_from_slice(&16u64.to_le_bytes());
            let sizes = directory - 24 + 8 * i;
            bytes[sizes..sizes + 8].copy_from_slice(&(len - 16).to_le_bytes());
        }
        std::fs::write(&path, &bytes).unwrap();
        let rendering = EerRendering::default().with(1);
        let error = format!("{:#}", Movie::open_with(&path, rendering).err().unwrap());
        assert!(
            error.contains(&format!(
                "page 0's strips add up to more bytes than the file's {len}"
            )),
            "{error}"
        );
        // 16384x16384 at upsampling 3 would be 65536x65536.
        let path = dir.join("huge.eer");
        writer::write_eer(&path, &[vec![]], (16384, 16384));
        let rendering = EerRendering {
            grouping: 1,
            upsampling: 3,
        };
        let error = format!("{:#}", Movie::open_with(&path, rendering).err().unwrap());
        assert!(
            error.contains("frames of 16384x16384 pixels at EER upsampling 3: 4294967296 pixels"),
            "{error}"
        );
        let rendering = EerRendering {
            grouping: 1,
            upsampling: 1,
        };
        assert_eq!(Movie::open_with(&path, rendering).unwrap().len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_test_writer_codes_pages_as_the_fixtures_are_coded() {
        // The events of the fixture's pages, from their rendering at 4x4 sub-pixels.
        let pages = expected("v1", 3);
        let reader = EerReader::open(&fixture("v1.eer"), EerRendering::default().with(1)).unwrap();
        for (page, counts) in pages.outer_iter().enumerate() {
            let mut events: Vec<Event> = counts
                .indexed_iter()
                .filter(|(_, &c)| c > 0.0)
                .map(|((r, c), _)| Event {
                    row: r / 4,
                    col: c / 4,
                    x: (c % 4) as u32,
                    y: (r % 4) as u32,
                })
                .collect();
            events.sort_by_key(|e| (e.row, e.col));
            let (offset, bytes) = reader.pages[page][0];
            let mut stored = vec![0u8; bytes as usize];
            read_at(&reader.file, offset, &mut stored).unwrap();
            assert_eq!(encode_page(&events, V1, (48, 64)), stored, "page {page}");
        }
        // And a movie it writes reads back.
        let dir = std::env::temp_dir().join(format!("ufunc-eer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("written.eer");
        let events = vec![
            Event {
                row: 0,
                col: 0,
                x: 3,
                y: 0,
            },
            Event {
                row: 2,
                col: 5,
                x: 1,
                y: 2,
            },
            Event {
                row: 40,
                col: 63,
                x: 0,
                y: 3,
            },
        ];
        let rendering = EerRendering {
            grouping: 3,
            upsampling: 1,
        };
        // In one strip a page, and in three (stored last first).
        for strips in [1, 3] {
            let pages = [events.clone(), vec![], events.clone()];
            writer::write_eer_in_strips(&path, &pages, (48, 64), strips);
            let mut movie = Movie::open_with(&path, rendering).unwrap();
            let mut frame = Array2::zeros((48, 64));
            movie.read_frame(0, frame.view_mut()).unwrap();
            assert_eq!(frame.sum(), 6.0);
            assert_eq!(
                (frame[(0, 0)], frame[(2, 5)], frame[(40, 63)]),
                (2.0, 2.0, 2.0)
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_detector_sized_gain_covers_the_upsampled_pixels_and_dot_gain_files_read_top_down() {
        let rendering = EerRendering {
            grouping: 6,
            upsampling: 2,
        };
        let gain = Array2::from_shape_fn((48, 64), |(y, x)| 1.0 + (y * 64 + x) as f32);
        let path = fixture("v1.eer");
        let mut plain = Movie::open_with(&path, rendering).unwrap();
        let gained = Movie::open_with(&path, rendering).unwrap();
        let fitted = gained.fitted_gain(gain.clone());
        let mut gained = gained.with_gain(fitted, Path::new("gain.mrc")).unwrap();
        let (mut a, mut b) = (Array2::zeros((96, 128)), Array2::zeros((96, 128)));
        plain.read_frame(0, a.view_mut()).unwrap();
        gained.read_frame(0, b.view_mut()).unwrap();
        assert_eq!(
            b,
            Array2::from_shape_fn((96, 128), |(y, x)| a[(y, x)] * gain[(y / 2, x / 2)])
        );
        // Any other size is refused, naming both.
        let movie = Movie::open_with(&path, rendering).unwrap();
        let wrong = movie.fitted_gain(Array2::zeros((48, 63)));
        let error = format!(
            "{:#}",
            movie.with_gain(wrong, Path::new("gain.mrc")).err().unwrap()
        );
        assert!(
            error.contains("gain.mrc is 48x63 but the frames of"),
            "{error}"
        );
        // A detector-sized gain a quarter turn off gets the hint a frame-sized one gets.
        let movie = Movie::open_with(&path, rendering).unwrap();
        let turned = movie.fitted_gain(Array2::zeros((64, 48)));
        let error = format!(
            "{:#}",
            movie
                .with_gain(turned, Path::new("gain.mrc"))
                .err()
                .unwrap()
        );
        assert!(error.contains("--gain-rotate"), "{error}");

        // Thermo Fisher's .gain is a TIFF read top-down: the movie fixtures' gain.tif upside down.
        let dir = std::env::temp_dir().join(format!("ufunc-eer-gain-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tif = PathBuf::from(format!(
            "{}/tests/fixtures/movie/gain.tif",
            env!("CARGO_MANIFEST_DIR")
        ));
        let dot_gain = dir.join("falcon.gain");
        std::fs::copy(&tif, &dot_gain).unwrap();
        let mut flipped = crate::io::read_image(&tif).unwrap();
        flipped.invert_axis(Axis(0));
        assert_eq!(crate::io::read_image(&dot_gain).unwrap(), flipped);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
