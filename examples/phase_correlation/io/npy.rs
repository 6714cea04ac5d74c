//! `.npy` movies: a 3-d array (frames, rows, cols) or a single 2-d frame, C order, of any
//! integer or float type up to 32 bits (and float64), either byte order. ndarray-npy parses the
//! header; frames are then read one at a time by seeking into the data.

use super::{data_bytes, file_len, show_bytes, RawFrames, Sample, Values};
use anyhow::{anyhow, bail, Context, Result};
use ndarray_npy::npy::header::Header;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Opens an `.npy` file's frames: parses the header and checks that the file holds all the data
/// it describes.
pub fn open(path: &Path) -> Result<RawFrames> {
    let mut file = File::open(path).context("cannot open")?;
    let len = file_len(&file)?;
    let header = read_header(&mut file, len)?;
    let data_offset = header.len() as u64;
    // The crate's errors print their source's text within their own, and give it as their
    // source too: one message, not the chain, says it once.
    let header = Header::from_reader(&mut header.as_slice())
        .map_err(|e| anyhow!("not a readable npy file: {e}"))?;
    let descriptor = header.type_descriptor.to_string();
    let (sample, little) = sample_of(descriptor.trim_matches(|c| c == '\'' || c == '"'))?;
    if header.layout.is_fortran() && header.shape.iter().filter(|&&n| n > 1).count() > 1 {
        bail!(
            "Fortran-ordered arrays are not supported (frames are not contiguous on disk); save \
             with np.ascontiguousarray"
        );
    }
    let (frames, shape) = match header.shape[..] {
        [ny, nx] => (1, (ny, nx)),
        [n, ny, nx] => (n, (ny, nx)),
        ref other => bail!(
            "expected 2 or 3 dimensions (rows, cols) or (frames, rows, cols), found shape \
             {other:?}"
        ),
    };
    // Checked: a corrupted shape can describe more than 2^64 bytes.
    let expected = data_bytes(frames as u64, (shape.0 as u64, shape.1 as u64), sample);
    let actual = len.saturating_sub(data_offset);
    if expected.is_none_or(|expected| actual < expected) {
        bail!(
            "truncated: {actual} bytes of data where the header describes {} \
                 ({frames} frames of {}x{} {})",
            show_bytes(expected),
            shape.0,
            shape.1,
            sample.name()
        );
    }
    Ok(RawFrames::new(
        file,
        data_offset,
        frames,
        shape,
        Values::Samples(sample),
        little,
    ))
}

/// The longest header read: numpy writes a few hundred bytes (and refuses to read more than
/// 10000 by default); a longer one is a corrupted length, not a header to allocate.
const MAX_HEADER: u64 = 1 << 20;

/// How deeply brackets may nest in a header (a movie's is two deep: `{... (n, ny, nx)}`), so
/// that a corrupted one cannot make the parser recurse without end.
const MAX_NESTING: usize = 16;

/// The npy magic string, which every npy file begins with.
const MAGIC: &[u8] = b"\x93NUMPY";

/// Reads the preamble (magic string, version, header length) and the header it announces, whole,
/// after checking that length against the file's, so that a corrupted length is an error rather
/// than an allocation of up to 4 GiB. Returns the bytes up to the data; a preamble of a version
/// this does not know is returned as is, for the parser to say what is wrong with it.
fn read_header(file: &mut File, len: u64) -> Result<Vec<u8>> {
    let mut preamble = Vec::with_capacity(12);
    file.take(12)
        .read_to_end(&mut preamble)
        .context("cannot read the header")?;
    if !preamble.starts_with(&MAGIC[..preamble.len().min(MAGIC.len())]) {
        bail!("not an npy file: it does not begin with the npy magic string \"\\x93NUMPY\"");
    }
    // The preamble is 10 bytes in version 1, 12 in versions 2 and 3 (a 4-byte header length).
    let needed = match preamble.get(6) {
        Some(2 | 3) => 12,
        _ => 10,
    };
    let known = preamble.len() < 8 || matches!(preamble[6], 1..=3);
    if known && preamble.len() < needed {
        bail!("truncated: the file has {len} bytes, fewer than the {needed} of an npy preamble");
    }
    let data_offset = match preamble[..] {
        [0x93, b'N', b'U', b'M', b'P', b'Y', 1, _, a, b, ..] => {
            10 + u16::from_le_bytes([a, b]) as u64
        }
        [0x93, b'N', b'U', b'M', b'P', b'Y', 2 | 3, _, a, b, c, d] => {
            12 + u32::from_le_bytes([a, b, c, d]) as u64
        }
        _ => return Ok(preamble),
    };
    if data_offset > len {
        bail!("truncated: the header ends at byte {data_offset} but the file has {len} bytes");
    }
    if data_offset > MAX_HEADER {
        bail!("not a readable npy file: a header of {data_offset} bytes (a corrupted length?)");
    }
    let mut header = vec![0; data_offset as usize];
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_exact(&mut header))
        .context("cannot read the header")?;
    let mut depth = 0usize;
    for &b in &header {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_NESTING {
            bail!("not a readable npy file: brackets nested more than {MAX_NESTING} deep in the header");
        }
    }
    Ok(header)
}

/// The sample type and byte order (little-endian: true) of a numpy type descriptor.
fn sample_of(descriptor: &str) -> Result<(Sample, bool)> {
    // The order is one ASCII character; a version 3.0 header may put any UTF-8 there.
    let (order, code) = descriptor
        .split_at_checked(descriptor.len().min(1))
        .unwrap_or((descriptor, ""));
    let little = match order {
        "<" | "|" | "=" => true,
        ">" => false,
        _ => bail!("unsupported npy data type {descriptor}"),
    };
    let sample = match code {
        "i1" => Sample::I8,
        "u1" => Sample::U8,
        "i2" => Sample::I16,
        "u2" => Sample::U16,
        "i4" => Sample::I32,
        "u4" => Sample::U32,
        "f2" => Sample::F16,
        "f4" => Sample::F32,
        "f8" => Sample::F64,
        _ => bail!(
            "unsupported npy data type {descriptor} (supported: int8/16/32, uint8/16/32, float16/32/64)"
        ),
    };
    Ok((sample, little))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors() {
        assert_eq!(sample_of("<f4").unwrap(), (Sample::F32, true));
        assert_eq!(sample_of(">u2").unwrap(), (Sample::U16, false));
        assert_eq!(sample_of("|u1").unwrap(), (Sample::U8, true));
        let err = sample_of("<c8").unwrap_err().to_string();
        assert!(err.starts_with("unsupported npy data type <c8"), "{err}");
        assert!(sample_of("").is_err());
        assert!(sample_of("éf4").is_err());
    }
}
