//! `.npy` movies: a 3-d array (frames, rows, cols) or a single 2-d frame, C order, of any
//! integer or float type up to 32 bits (and float64), either byte order. ndarray-npy parses the
//! header; frames are then read one at a time by seeking into the data.

use super::{decode, file_len, read_at, FrameReader, Sample};
use anyhow::{bail, Context, Result};
use ndarray::ArrayViewMut2;
use ndarray_npy::npy::header::Header;
use std::fs::File;
use std::io::{BufReader, Seek};
use std::path::Path;

/// Reads the frames of an `.npy` file.
pub struct NpyReader {
    file: File,
    data_offset: u64,
    frames: usize,
    shape: (usize, usize),
    sample: Sample,
    little: bool,
    buffer: Vec<u8>,
}

impl NpyReader {
    /// Parses the header and checks that the file holds all the data it describes.
    pub fn open(path: &Path) -> Result<NpyReader> {
        let file = File::open(path).context("cannot open")?;
        let mut reader = BufReader::new(file);
        let header = Header::from_reader(&mut reader).context("not a readable npy file")?;
        let data_offset = reader.stream_position()?;
        let file = reader.into_inner();
        let descriptor = header.type_descriptor.to_string();
        let (sample, little) = sample_of(descriptor.trim_matches(|c| c == '\'' || c == '"'))?;
        if header.layout.is_fortran() && header.shape.iter().filter(|&&n| n > 1).count() > 1 {
            bail!("Fortran-ordered arrays are not supported (frames are not contiguous on disk); save with np.ascontiguousarray");
        }
        let (frames, shape) = match header.shape[..] {
            [ny, nx] => (1, (ny, nx)),
            [n, ny, nx] => (n, (ny, nx)),
            ref other => bail!(
                "expected 2 or 3 dimensions (rows, cols) or (frames, rows, cols), found shape {other:?}"
            ),
        };
        let expected = frames as u64 * (shape.0 * shape.1 * sample.size()) as u64;
        let actual = file_len(&file)?.saturating_sub(data_offset);
        if actual < expected {
            bail!(
                "truncated: {actual} bytes of data where the header describes {expected} \
                 ({frames} frames of {}x{} {})",
                shape.0,
                shape.1,
                sample.name()
            );
        }
        Ok(NpyReader {
            file,
            data_offset,
            frames,
            shape,
            sample,
            little,
            buffer: Vec::new(),
        })
    }
}

/// The sample type and byte order (little-endian: true) of a numpy type descriptor.
fn sample_of(descriptor: &str) -> Result<(Sample, bool)> {
    let (order, code) = descriptor.split_at(descriptor.len().min(1));
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

impl FrameReader for NpyReader {
    fn frame_shape(&self) -> (usize, usize) {
        self.shape
    }
    fn len(&self) -> usize {
        self.frames
    }
    fn read_frame(&mut self, index: usize, mut out: ArrayViewMut2<'_, f32>) -> Result<()> {
        let frame_bytes = self.shape.0 * self.shape.1 * self.sample.size();
        self.buffer.resize(frame_bytes, 0);
        let offset = self.data_offset + (index * frame_bytes) as u64;
        read_at(&self.file, offset, &mut self.buffer)?;
        decode(&self.buffer, self.sample, self.little, &mut out);
        Ok(())
    }
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
    }
}
