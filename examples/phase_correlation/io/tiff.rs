//! Multi-page TIFF movies: one grayscale page per frame (8/16/32-bit integers, float16/32/64;
//! uncompressed, LZW or Deflate), decoded by the `tiff` crate. Opening walks the page
//! directories only, to count the frames and check that they all have the same size and type.

use super::FrameReader;
use anyhow::{bail, Context, Result};
use ndarray::ArrayViewMut2;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use tiff::decoder::{Decoder, DecodingResult};
use tiff::ColorType;

/// Reads the pages of a TIFF file.
pub struct TiffReader {
    decoder: Decoder<BufReader<File>>,
    frames: usize,
    shape: (usize, usize),
}

impl TiffReader {
    /// Counts the pages, checking that they are grayscale and all of one size and type.
    pub fn open(path: &Path) -> Result<TiffReader> {
        let file = File::open(path).context("cannot open")?;
        let mut decoder = Decoder::new(BufReader::new(file)).context("not a readable TIFF file")?;
        let first = page_info(&mut decoder, 0)?;
        let mut frames = 1;
        while decoder.more_images() {
            decoder
                .next_image()
                .with_context(|| format!("cannot read page {frames}"))?;
            let page = page_info(&mut decoder, frames)?;
            if page.0 != first.0 {
                bail!(
                    "inconsistent frame sizes: page {frames} is {}x{} but page 0 is {}x{} (rows x cols)",
                    page.0 .1,
                    page.0 .0,
                    first.0 .1,
                    first.0 .0
                );
            }
            if page.1 != first.1 {
                bail!(
                    "inconsistent sample types: page {frames} is {:?} but page 0 is {:?}",
                    page.1,
                    first.1
                );
            }
            frames += 1;
        }
        let (width, height) = first.0;
        Ok(TiffReader {
            decoder,
            frames,
            shape: (height as usize, width as usize),
        })
    }
}

/// A page's (width, height) and color type, which must be one gray channel.
fn page_info(
    decoder: &mut Decoder<BufReader<File>>,
    page: usize,
) -> Result<((u32, u32), ColorType)> {
    let size = decoder
        .dimensions()
        .with_context(|| format!("cannot read the size of page {page}"))?;
    let color = decoder
        .colortype()
        .with_context(|| format!("cannot read the sample type of page {page}"))?;
    if !matches!(color, ColorType::Gray(_)) {
        bail!("page {page} is {color:?}: only grayscale (one sample per pixel) is supported");
    }
    Ok((size, color))
}

impl FrameReader for TiffReader {
    fn frame_shape(&self) -> (usize, usize) {
        self.shape
    }
    fn len(&self) -> usize {
        self.frames
    }
    fn read_frame(&mut self, index: usize, mut out: ArrayViewMut2<'_, f32>) -> Result<()> {
        self.decoder
            .seek_to_image(index)
            .context("cannot find the page")?;
        let image = self
            .decoder
            .read_image()
            .context("cannot decode the page")?;
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
        match image {
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
