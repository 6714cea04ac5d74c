//! MRC2014 files (`.mrc`, `.mrcs`, `.st`): a stack of NZ frames of NY rows by NX columns after a
//! 1024-byte header and NSYMBT bytes of extended header. Modes 0 (int8), 1 (int16), 2 (float32),
//! 6 (uint16) and 12 (float16) are read, in the byte order the machine stamp (MACHST) gives; the
//! writer writes little-endian float32 images. No maintained crate reads MRC, hence this one.
//!
//! Header words used (4 bytes each, from byte 0): NX NY NZ MODE at 0..16, MX MY MZ at 28..40,
//! CELLA at 40..52, MAPC MAPR MAPS at 64..76, DMIN DMAX DMEAN at 76..88, ISPG at 88, NSYMBT at
//! 92, EXTTYP at 104, NVERSION at 108, MAP ("MAP ") at 208, MACHST at 212, RMS at 216, NLABL at
//! 220, then ten 80-character labels from 224.

use super::{data_bytes, decode, file_len, frame_span, read_at, show_bytes, FrameReader, Sample};
use anyhow::{bail, Context, Result};
use ndarray::{ArrayView2, ArrayViewMut2};
use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

const HEADER: usize = 1024;

/// Reads the frames of an MRC stack.
pub struct MrcReader {
    file: File,
    data_offset: u64,
    frames: usize,
    shape: (usize, usize),
    sample: Sample,
    little: bool,
    buffer: Vec<u8>,
    /// CELLA's x over MX, where both are positive (mrcfile's `voxel_size.x`; 0 is unset).
    pixel_size: Option<f32>,
}

impl MrcReader {
    /// Reads and checks the header, and the file's size against it.
    pub fn open(path: &Path) -> Result<MrcReader> {
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
            other => bail!("unknown MRC machine stamp 0x{other:02x} (expected 0x44 little-endian or 0x11 big-endian)"),
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
        let sample = match mode {
            0 => Sample::I8,
            1 => Sample::I16,
            2 => Sample::F32,
            6 => Sample::U16,
            12 => Sample::F16,
            3 | 4 => bail!("MRC mode {mode} (complex) is not supported: movies are real images"),
            _ => bail!("unknown MRC mode {mode} (supported: 0 int8, 1 int16, 2 float32, 6 uint16, 12 float16)"),
        };
        if nx < 0 || ny < 0 || nz < 0 || nsymbt < 0 {
            bail!("negative size in the header: NX={nx} NY={ny} NZ={nz} NSYMBT={nsymbt}");
        }
        let (nx, ny, nz) = (nx as u64, ny as u64, nz as u64);
        let data_offset = HEADER as u64 + nsymbt as u64;
        // Checked: sizes of up to 2^31 each make more than 2^64 bytes.
        let expected = data_bytes(nz, (ny, nx), sample).and_then(|d| d.checked_add(data_offset));
        if expected.is_none_or(|expected| len < expected) {
            bail!(
                "truncated: the file has {len} bytes, the header describes {} \
                 (1024 + {nsymbt} extended header + {nz} frames of {ny}x{nx} {})",
                show_bytes(expected),
                sample.name()
            );
        }
        Ok(MrcReader {
            file,
            data_offset,
            frames: nz as usize,
            shape: (ny as usize, nx as usize),
            sample,
            little,
            buffer: Vec::new(),
            pixel_size,
        })
    }
}

impl FrameReader for MrcReader {
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
        let (offset, frame_bytes) = frame_span(self.data_offset, index, self.shape, self.sample)?;
        self.buffer.resize(frame_bytes, 0);
        read_at(&self.file, offset, &mut self.buffer)?;
        decode(&self.buffer, self.sample, self.little, &mut out);
        Ok(())
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
    let (ny, nx) = image.dim();
    let n = (nx * ny).max(1) as f64;
    let (mut min, mut max, mut sum) = (f32::INFINITY, f32::NEG_INFINITY, 0f64);
    for &v in image {
        min = min.min(v);
        max = max.max(v);
        sum += v as f64;
    }
    let mean = sum / n;
    let rms = (image
        .iter()
        .map(|&v| (v as f64 - mean).powi(2))
        .sum::<f64>()
        / n)
        .sqrt();
    if image.is_empty() {
        (min, max) = (0.0, 0.0);
    }
    let mut h = [0u8; HEADER];
    let mut put = |word: usize, bytes: [u8; 4]| h[4 * word..4 * word + 4].copy_from_slice(&bytes);
    let (nxi, nyi) = (i32::try_from(nx)?, i32::try_from(ny)?);
    for (word, v) in [
        (0, nxi),
        (1, nyi),
        (2, 1),
        (3, 2),
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
    for (word, v) in [(19, min), (20, max), (21, mean as f32), (54, rms as f32)] {
        put(word, v.to_le_bytes());
    }
    put(52, *b"MAP ");
    put(53, [0x44, 0x44, 0, 0]);
    let label = label.as_bytes();
    let len = label.len().min(80);
    h[224..224 + len].copy_from_slice(&label[..len]);
    h[224 + len..304].fill(b' ');
    out.write_all(&h)?;
    let mut data = Vec::with_capacity(nx * ny * 4);
    for &v in image {
        data.extend_from_slice(&v.to_le_bytes());
    }
    out.write_all(&data)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
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
        let mut reader = MrcReader::open(&path).unwrap();
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
}
