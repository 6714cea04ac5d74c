//! Gatan DigitalMicrograph files (`.dm4`, and the older `.dm3`), as GMS writes K2 and K3 gain
//! references (and SerialEM its `SuperRef_*.dm4`) and movies: a tree of named tags, one group of
//! which (`ImageList`) holds the images, each with its `Data` (the samples, x fastest, one frame
//! after another), `DataType`, `Dimensions` (x, y and, for a stack, the frames) and
//! `Calibrations`. The file holds one image or stack, beside DM's RGB thumbnail.
//!
//! The rows are read upside down, as IMOD reads a DM file (and converts it with `dm2mrc`): DM
//! shows row 0 at the top, IMOD and MRC files at the bottom. A `.dm4` gain reference is then
//! read as the MRC file `dm2mrc` makes of it, so that `--gain-rotate` and `--gain-flip` mean
//! what they mean to MotionCor2 and RELION given that file (RELION reads no DM file, and asks for
//! `dm2mrc`). No maintained crate reads DM files, hence this reader.
//!
//! The layout (of DM4; DM3's sizes and counts are 4 bytes where DM4's are 8, and its tags have
//! no size): a header of the version (4), the root group's size, and the byte order of the
//! tags' values (1: little-endian, all GMS writes; 0, big-endian, is refused: the peers disagree
//! on it: RosettaSciIO reads the tags big-endian but the data little-endian, IMOD all of it
//! little-endian, and ncempy refuses it); then the root group. A group is a sorted flag, an open
//! flag and its number of tags. A tag is its kind (20 a group, 21 values), its name's length (2
//! bytes) and name, its size (DM4), then a group, or "%%%%", the length of its type description
//! and the description: one type (a number), 15 (a struct of simple fields: 0, their number,
//! then for each its name's length and type), 18 (a string) or 20 (an array: the element's
//! description, then the length), then the values. The header, sizes, counts and types are
//! big-endian whatever the values are.

use super::{file_len, show_bytes, RawFrames, Sample, Values};
use anyhow::{bail, Context, Result};
use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::Path;

/// Opens a DM file's frames: reads the tags, picks the image and checks that the file holds its
/// data.
pub fn open(path: &Path) -> Result<RawFrames> {
    let file = File::open(path).context("cannot open")?;
    let len = file_len(&file)?;
    let mut tags = Tags::start(
        BufReader::new(file.try_clone().context("cannot open")?),
        len,
    )?;
    let root = tags.group(0).context("cannot read the DM tags")?;
    let image = the_image(&root)?;
    let (nx, ny, nz) = match image.dimensions[..] {
        [nx, ny] => (nx, ny, 1),
        [nx, ny, nz] => (nx, ny, nz),
        ref other => bail!(
            "a {}-dimensional image ({}): expected an image (x, y) or a stack of frames \
                 (x, y, frames)",
            other.len(),
            show_dimensions(other)
        ),
    };
    let sample = sample_of(image.data_type)?;
    let data = image
        .data
        .as_ref()
        .filter(|data| data.array_of.is_some())
        .context("no Data array of numbers in the image's ImageData")?;
    let described = nx
        .checked_mul(ny)
        .and_then(|n| n.checked_mul(nz))
        .and_then(|n| n.checked_mul(sample.size() as u64));
    if described != Some(data.bytes) {
        bail!(
            "the image's data is {} bytes, its dimensions ({}) of {} describe {}",
            data.bytes,
            show_dimensions(&image.dimensions),
            sample.name(),
            show_bytes(described)
        );
    }
    // `Tags` skipped the data, which therefore lies within the file.
    let size = |n: u64| usize::try_from(n).context("an image larger than memory can address");
    let shape = (size(ny)?, size(nx)?);
    // Upside down, as IMOD reads it (see the module's note).
    let frames = RawFrames::new(
        file,
        data.offset,
        size(nz)?,
        shape,
        Values::Samples(sample),
        true,
    );
    Ok(frames.top_down().with_pixel_size(image.pixel_size))
}

/// The sample type of DM's image `DataType`, where it is a real one.
fn sample_of(data_type: u64) -> Result<Sample> {
    Ok(match data_type {
        1 => Sample::I16,
        2 => Sample::F32,
        6 => Sample::U8,
        7 => Sample::I32,
        9 => Sample::I8,
        10 => Sample::U16,
        11 => Sample::U32,
        12 => Sample::F64,
        3 | 5 | 13 | 27 | 28 => bail!(
            "a complex image (DM data type {data_type}): not supported, movies and gain \
             references are real images"
        ),
        8 | 15..=23 => bail!("an RGB image (DM data type {data_type}): not supported"),
        14 => bail!("a binary image (DM data type 14): not supported"),
        _ => bail!("unknown DM image data type {data_type}"),
    })
}

fn show_dimensions(dimensions: &[u64]) -> String {
    let shown: Vec<String> = dimensions.iter().map(u64::to_string).collect();
    format!("{} by x, y, ...", shown.join(" x "))
}

/// An image of the file's `ImageList`.
struct Image {
    data_type: u64,
    /// x, y, then any more (the frames).
    dimensions: Vec<u64>,
    /// The `Data` tag's values, an array of numbers for the sample types read.
    data: Option<TagValues>,
    pixel_size: Option<f32>,
}

/// The file's one image or stack: DM's thumbnail (an RGB image listed first) left out.
fn the_image(root: &Group) -> Result<Image> {
    let list = root
        .group("ImageList")
        .context("no ImageList tag: not an image file (a DM file of tags only?)")?;
    let mut images = Vec::new();
    for (i, (_, entry)) in list.0.iter().enumerate() {
        let Tag::Group(entry) = entry else { continue };
        let image = image_of(entry).with_context(|| format!("image {i} of the ImageList"))?;
        images.extend(image);
    }
    // DM's thumbnail: an RGB image listed first, before the image itself.
    if images.len() > 1 && matches!(images[0].data_type, 8 | 15..=23) {
        images.remove(0);
    }
    match images.len() {
        0 => bail!("no image in the file's ImageList"),
        1 => Ok(images.remove(0)),
        n => bail!(
            "{n} images ({}): expected one image or stack of frames (beside DM's thumbnail)",
            images
                .iter()
                .map(|image| show_dimensions(&image.dimensions))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    }
}

/// An `ImageList` entry's image (`None` for one without `ImageData`).
fn image_of(entry: &Group) -> Result<Option<Image>> {
    let Some(image) = entry.group("ImageData") else {
        return Ok(None);
    };
    let number = |name: &str| -> Result<u64> {
        let value = image
            .values(name)
            .and_then(TagValues::number)
            .with_context(|| format!("no {name} number in its ImageData"))?;
        whole(value).with_context(|| format!("its {name} is {value}"))
    };
    let data_type = number("DataType")?;
    let dimensions = image
        .group("Dimensions")
        .context("no Dimensions group in its ImageData")?
        .0
        .iter()
        .map(|(_, tag)| match tag {
            Tag::Values(v) => v
                .number()
                .and_then(|n| whole(n).ok())
                .context("a dimension that is not a whole number"),
            Tag::Group(_) => bail!("a group among its Dimensions"),
        })
        .collect::<Result<Vec<u64>>>()?;
    let data = image.values("Data").cloned();
    Ok(Some(Image {
        data_type,
        dimensions,
        data,
        pixel_size: pixel_size(image),
    }))
}

/// The x axis's calibration in Å (`Calibrations` / `Dimension` / first / `Scale` in `Units`
/// of nm, µm or Å), where it is one.
fn pixel_size(image: &Group) -> Option<f32> {
    let x = image
        .group("Calibrations")?
        .group("Dimension")?
        .0
        .first()
        .and_then(|(_, tag)| match tag {
            Tag::Group(x) => Some(x),
            Tag::Values(_) => None,
        })?;
    let scale = x.values("Scale")?.number()?;
    let units = x.values("Units")?.text()?;
    let angstrom = match units.trim() {
        "nm" => scale * 10.0,
        "µm" | "um" => scale * 1e4,
        "Å" | "A" => scale,
        _ => return None,
    };
    Some(angstrom as f32).filter(|p| p.is_finite() && *p > 0.0)
}

/// `value` as a whole number of at most 2^53.
fn whole(value: f64) -> Result<u64> {
    if value >= 0.0 && value.fract() == 0.0 && value <= (1u64 << 53) as f64 {
        Ok(value as u64)
    } else {
        bail!("not a whole number")
    }
}

/// A group's tags, by name (`""` for DM's unnamed ones, listed in order).
#[derive(Debug)]
struct Group(Vec<(String, Tag)>);

#[derive(Debug)]
enum Tag {
    Group(Group),
    Values(TagValues),
}

impl Group {
    fn tag(&self, name: &str) -> Option<&Tag> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, tag)| tag)
    }
    fn group(&self, name: &str) -> Option<&Group> {
        match self.tag(name)? {
            Tag::Group(group) => Some(group),
            Tag::Values(_) => None,
        }
    }
    fn values(&self, name: &str) -> Option<&TagValues> {
        match self.tag(name)? {
            Tag::Values(values) => Some(values),
            Tag::Group(_) => None,
        }
    }
}

/// A tag's values: where they are in the file, and the bytes of a small one.
#[derive(Debug, Clone)]
struct TagValues {
    /// The type of a single value; `None` for arrays, structs and strings.
    single: Option<u64>,
    /// The element type of an array of single values.
    array_of: Option<u64>,
    offset: u64,
    bytes: u64,
    /// The values' bytes (little-endian), where they are few (kept while reading the tags).
    small: Option<Vec<u8>>,
}

/// The most bytes of a tag's values kept in memory (names, units, numbers).
const SMALL: u64 = 256;

impl TagValues {
    /// A single number, of any numeric type.
    fn number(&self) -> Option<f64> {
        let (kind, b) = (self.single?, self.small.as_deref()?);
        fn le<const N: usize>(b: &[u8]) -> Option<[u8; N]> {
            b.get(..N)?.try_into().ok()
        }
        Some(match kind {
            2 => i16::from_le_bytes(le(b)?) as f64,
            3 => i32::from_le_bytes(le(b)?) as f64,
            4 => u16::from_le_bytes(le(b)?) as f64,
            5 => u32::from_le_bytes(le(b)?) as f64,
            6 => f32::from_le_bytes(le(b)?) as f64,
            7 => f64::from_le_bytes(le(b)?),
            8 | 10 => u8::from_le_bytes(le(b)?) as f64,
            9 => i8::from_le_bytes(le(b)?) as f64,
            11 => i64::from_le_bytes(le(b)?) as f64,
            12 => u64::from_le_bytes(le(b)?) as f64,
            _ => return None,
        })
    }

    /// An array of 16-bit characters (UTF-16, as DM stores names and units) as text.
    fn text(&self) -> Option<String> {
        let b = self.small.as_deref().filter(|_| self.array_of == Some(4))?;
        let units: Vec<u16> = b
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        String::from_utf16(&units).ok()
    }
}

/// Groups nested deeper than this are taken for damage (GMS's nest about 10 deep).
const MAX_DEPTH: usize = 64;

/// The tags of a DM file, read in order.
struct Tags {
    file: BufReader<File>,
    len: u64,
    /// DM4 (8-byte sizes and counts, and a size for each tag), or DM3.
    dm4: bool,
}

impl Tags {
    /// Reads the header; the root group follows.
    fn start(mut file: BufReader<File>, len: u64) -> Result<Tags> {
        let mut version = [0u8; 4];
        file.read_exact(&mut version)
            .context("shorter than a DM file's header")?;
        let dm4 = match u32::from_be_bytes(version) {
            4 => true,
            3 => false,
            v => bail!("not a DigitalMicrograph file: version {v} (DM3 files say 3, DM4 4)"),
        };
        let mut tags = Tags { file, len, dm4 };
        tags.count().context("shorter than a DM file's header")?; // the root group's size
        let mut order = [0u8; 4];
        tags.file
            .read_exact(&mut order)
            .context("shorter than a DM file's header")?;
        match u32::from_be_bytes(order) {
            1 => {}
            0 => bail!(
                "a big-endian DM file (byte order 0): not supported, as GMS writes none and \
                 the readers disagree on its data's byte order"
            ),
            o => bail!("unknown DM byte order {o} (1 little-endian, 0 big-endian)"),
        }
        Ok(tags)
    }

    fn position(&mut self) -> Result<u64> {
        Ok(self.file.stream_position()?)
    }

    fn bytes<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut b = [0u8; N];
        let at = self.position()?;
        self.file.read_exact(&mut b).with_context(|| {
            format!(
                "truncated: the tags go on past byte {at} (the file has {} bytes)",
                self.len
            )
        })?;
        Ok(b)
    }

    /// A size or count: 8 bytes in DM4, 4 in DM3, big-endian.
    fn count(&mut self) -> Result<u64> {
        Ok(if self.dm4 {
            u64::from_be_bytes(self.bytes()?)
        } else {
            u32::from_be_bytes(self.bytes()?) as u64
        })
    }

    fn skip(&mut self, bytes: u64) -> Result<()> {
        let at = self.position()?;
        match at.checked_add(bytes).filter(|&end| end <= self.len) {
            Some(_) => Ok(self.file.seek_relative(bytes as i64)?),
            None => bail!(
                "truncated: a tag's {bytes} bytes from byte {at} go past the file's end ({} bytes)",
                self.len
            ),
        }
    }

    /// A group (after its tag's name), `depth` groups deep.
    fn group(&mut self, depth: usize) -> Result<Group> {
        if depth > MAX_DEPTH {
            bail!("tag groups nested more than {MAX_DEPTH} deep: a damaged file");
        }
        let [_sorted, _open] = self.bytes()?;
        let count = self.count()?;
        let mut tags = Vec::new();
        for _ in 0..count {
            let at = self.position()?;
            let [kind] = self.bytes()?;
            let name_len = u16::from_be_bytes(self.bytes()?);
            let mut name = vec![0u8; name_len as usize];
            let len = self.len;
            self.file.read_exact(&mut name).with_context(|| {
                format!("truncated: the tag at byte {at}'s name (the file has {len} bytes)")
            })?;
            // Names are Latin-1 (GMS's "Exposure (s)", "Calibrations", ...).
            let name: String = name.iter().map(|&b| b as char).collect();
            if self.dm4 {
                self.count()?; // the tag's size, which the types also give
            }
            let tag = match kind {
                20 => Tag::Group(self.group(depth + 1)?),
                21 => Tag::Values(self.values().with_context(|| format!("tag {name:?}"))?),
                k => bail!("a tag of kind {k} at byte {at} (DM's are 20 and 21): a damaged file"),
            };
            tags.push((name, tag));
        }
        Ok(Group(tags))
    }

    /// A tag's values (after its name, and size in DM4).
    fn values(&mut self) -> Result<TagValues> {
        let at = self.position()?;
        if &self.bytes::<4>()? != b"%%%%" {
            bail!("no \"%%%%\" at byte {at}: a damaged file");
        }
        let described = self.count()?;
        // GMS's longest descriptions are structs of a few tens of fields.
        if described == 0 || described > 1024 {
            bail!("a type description of {described} numbers at byte {at}: a damaged file");
        }
        let info = (0..described)
            .map(|_| self.count())
            .collect::<Result<Vec<u64>>>()?;
        let (bytes, used) = layout(&info).with_context(|| format!("the type {info:?}"))?;
        if used != info.len() {
            bail!("the type {info:?} at byte {at}: a damaged file");
        }
        let offset = self.position()?;
        let small = if bytes <= SMALL {
            let mut b = vec![0u8; bytes as usize];
            let len = self.len;
            self.file.read_exact(&mut b).with_context(|| {
                format!("truncated: a tag's values at byte {offset} (the file has {len} bytes)")
            })?;
            Some(b)
        } else {
            self.skip(bytes)?;
            None
        };
        Ok(TagValues {
            single: match info[..] {
                [kind] => Some(kind),
                _ => None,
            },
            array_of: match info[..] {
                [20, kind, _] if simple_size(kind).is_some() => Some(kind),
                _ => None,
            },
            offset,
            bytes,
            small,
        })
    }
}

/// The bytes of one number of DM's simple type `kind`.
fn simple_size(kind: u64) -> Option<u64> {
    Some(match kind {
        8..=10 => 1,
        2 | 4 => 2,
        3 | 5 | 6 => 4,
        7 | 11 | 12 => 8,
        _ => return None,
    })
}

/// The bytes of the values a type description (from its start) describes, and how many of its
/// numbers the description takes.
fn layout(info: &[u64]) -> Result<(u64, usize)> {
    let at = |i: usize| info.get(i).copied().context("a type description cut short");
    let kind = at(0)?;
    if let Some(size) = simple_size(kind) {
        return Ok((size, 1));
    }
    match kind {
        // A string: its length in bytes, as ncempy and RosettaSciIO read it (GMS writes text as
        // arrays of 16-bit characters instead).
        18 => Ok((at(1)?, 2)),
        // A struct: 0, the number of fields, then each field's name length and (simple) type.
        15 => {
            let fields = usize::try_from(at(2)?).context("too many fields")?;
            let mut bytes = 0u64;
            for f in 0..fields {
                let kind = at(4 + 2 * f)?;
                let size =
                    simple_size(kind).with_context(|| format!("a struct field of type {kind}"))?;
                bytes = bytes.checked_add(size).context("too large")?;
            }
            Ok((bytes, 3 + 2 * fields))
        }
        // An array: the element's description, then the length.
        20 => {
            let (element, used) = layout(&info[1..])?;
            let length = at(1 + used)?;
            let bytes = element.checked_mul(length).context("too large")?;
            Ok((bytes, used + 2))
        }
        _ => bail!("unknown DM type {kind}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::tests::fixture;
    use crate::io::Movie;

    /// The pixel size is the x axis's calibration, in Å; an uncalibrated image has none.
    #[test]
    fn the_pixel_size_is_the_x_calibration_in_angstrom() {
        let movie = Movie::open(&fixture("movie_u16.dm4")).unwrap();
        let pixel = movie.pixel_size().unwrap();
        assert!((pixel - 1.06).abs() < 1e-6, "{pixel}");
        assert!(Movie::open(&fixture("movie_f32.dm4"))
            .unwrap()
            .pixel_size()
            .is_none());
    }

    /// Strings, structs and arrays of structs (colour tables, complex samples) are laid out as
    /// DM describes them, so that the tags after them are found.
    #[test]
    fn type_descriptions_give_the_values_bytes() {
        assert_eq!(layout(&[6]).unwrap(), (4, 1));
        assert_eq!(layout(&[18, 5]).unwrap(), (5, 2));
        assert_eq!(layout(&[15, 0, 2, 0, 2, 0, 7]).unwrap(), (10, 7));
        assert_eq!(layout(&[20, 4, 9]).unwrap(), (18, 3));
        assert_eq!(layout(&[20, 15, 0, 2, 0, 6, 0, 6, 7]).unwrap(), (56, 9));
        for bad in [&[20, 4][..], &[15, 0, 2, 0, 2], &[99], &[20, 7, u64::MAX]] {
            assert!(layout(bad).is_err(), "{bad:?}");
        }
    }
}
