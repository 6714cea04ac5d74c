//! The simulator's batched FFTs: a plan is its layout, and running it transforms the strided
//! views the layout describes in simulated memory with the host FFT (`crate::fft`), so every
//! device pipeline built on plans runs end to end without a GPU.

use super::super::args::{Buffer, FftKind, FftLayout, FftPlanHandle};
use super::foreign;
use super::sim::{buffer, buffer_mut};
use crate::error::{Error, Result};
use crate::fft::{self, FftElement, FftOptions, FftReal, Norm};
use crate::shape::c_strides;
use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, IxDyn, ShapeBuilder};
use num_complex::Complex;

/// Runs `plan` from `input` (or in place) into `output`, unscaled both ways as cuFFT.
pub(super) fn exec(
    plan: &FftPlanHandle,
    input: Option<(&Buffer, usize)>,
    output: (&mut Buffer, usize),
    inverse: bool,
) -> Result<()> {
    let layout: &FftLayout = plan
        .0
        .downcast_ref()
        .ok_or_else(|| foreign("running a simulated FFT plan"))?;
    // cuFFT reads and writes only at addresses aligned to the plan's complex type (real data
    // included): anything else is its CUFFT_INVALID_VALUE, so it is an error here too.
    let complex = if layout.double { 16 } else { 8 };
    let offsets = [input.map_or(output.1, |i| i.1), output.1];
    if offsets.iter().any(|&o| o % complex != 0) {
        return Err(Error::Cuda {
            what: format!(
                "running a cuFFT plan on data at byte offsets {offsets:?}, not aligned to its \
                 {complex}-byte complex type (CUFFT_INVALID_VALUE)"
            ),
        });
    }
    match (layout.kind, layout.double) {
        (FftKind::C2C, false) => run(layout, input, output, c2c::<f32>(inverse)),
        (FftKind::R2C, false) => run(layout, input, output, r2c::<f32>),
        (FftKind::C2R, false) => run(layout, input, output, c2r::<f32>(&layout.n)),
        (FftKind::C2C, true) => run(layout, input, output, c2c::<f64>(inverse)),
        (FftKind::R2C, true) => run(layout, input, output, r2c::<f64>),
        (FftKind::C2R, true) => run(layout, input, output, c2r::<f64>(&layout.n)),
    }
}

/// The shape (batch first) and element strides of one side of a layout.
fn side(
    batch: i64,
    dims: &[i64],
    embed: &[i64],
    stride: i64,
    dist: i64,
) -> (Vec<usize>, Vec<usize>) {
    let embed: Vec<usize> = embed.iter().map(|&e| e as usize).collect();
    let mut shape = vec![batch as usize];
    shape.extend(dims.iter().map(|&d| d as usize));
    let mut strides = vec![dist as usize];
    strides.extend(
        c_strides(&embed)
            .iter()
            .map(|&s| s as usize * stride as usize),
    );
    (shape, strides)
}

/// The furthest element (plus one) a view reaches.
fn extent(shape: &[usize], strides: &[usize]) -> usize {
    if shape.contains(&0) {
        return 0;
    }
    1 + shape
        .iter()
        .zip(strides)
        .map(|(&n, &s)| (n - 1) * s)
        .sum::<usize>()
}

fn out_of_bounds(what: &str, layout: &FftLayout) -> Error {
    Error::Cuda {
        what: format!("a simulated FFT would {what} outside its buffer: {layout:?}"),
    }
}

fn run<I: FftElement, O: FftElement>(
    layout: &FftLayout,
    input: Option<(&Buffer, usize)>,
    output: (&mut Buffer, usize),
    transform: impl FnOnce(ArrayViewD<'_, I>, &FftOptions) -> Result<ArrayD<O>>,
) -> Result<()> {
    let rank = layout.n.len();
    let half = |n: &[i64]| {
        let mut h = n.to_vec();
        h[rank - 1] = h[rank - 1] / 2 + 1;
        h
    };
    let (in_dims, out_dims) = match layout.kind {
        FftKind::C2C => (layout.n.clone(), layout.n.clone()),
        FftKind::R2C => (layout.n.clone(), half(&layout.n)),
        FftKind::C2R => (half(&layout.n), layout.n.clone()),
    };
    let (in_shape, in_strides) = side(
        layout.batch,
        &in_dims,
        &layout.inembed,
        layout.istride,
        layout.idist,
    );
    let (out_shape, out_strides) = side(
        layout.batch,
        &out_dims,
        &layout.onembed,
        layout.ostride,
        layout.odist,
    );
    let (out_buf, out_offset) = output;
    let out_bytes = buffer_mut(out_buf)?.bytes_mut();
    if out_offset + extent(&out_shape, &out_strides) * size_of::<O>() > out_bytes.len() {
        return Err(out_of_bounds("write", layout));
    }
    let out_ptr = out_bytes.as_mut_ptr().wrapping_add(out_offset);
    let (in_ptr, in_len) = match input {
        Some((b, offset)) => {
            let bytes = buffer(b)?.bytes();
            (
                bytes.as_ptr().wrapping_add(offset),
                bytes.len() - offset.min(bytes.len()),
            )
        }
        None => (out_ptr as *const u8, out_bytes.len() - out_offset),
    };
    if extent(&in_shape, &in_strides) * size_of::<I>() > in_len {
        return Err(out_of_bounds("read", layout));
    }
    let axes: Vec<usize> = (1..=rank).collect();
    let options = FftOptions::new().axes(&axes);
    let result: ArrayD<O> = {
        // SAFETY: checked above: every element the view addresses lies in the buffer, which
        // holds initialised bytes (simulated memory starts zeroed or all ones, valid for any
        // float), 8-byte aligned at element offsets.
        let view = unsafe {
            ArrayViewD::from_shape_ptr(
                IxDyn(&in_shape).strides(IxDyn(&in_strides)),
                in_ptr as *const I,
            )
        };
        transform(view, &options)?
    };
    // SAFETY: as above for the output; the layouts of one plan never overlap themselves, and
    // the input view is gone.
    let mut out = unsafe {
        ArrayViewMutD::from_shape_ptr(
            IxDyn(&out_shape).strides(IxDyn(&out_strides)),
            out_ptr as *mut O,
        )
    };
    out.assign(&result);
    Ok(())
}

/// The unscaled transforms over every axis but the first, by the host FFT.
fn c2c<T: FftReal>(
    inverse: bool,
) -> impl FnOnce(ArrayViewD<'_, Complex<T>>, &FftOptions) -> Result<ArrayD<Complex<T>>> {
    move |v, o| {
        if inverse {
            fft::ifftn_with(&v, &o.clone().norm(Norm::Forward))
        } else {
            fft::fftn_with(&v, o)
        }
    }
}

fn r2c<T: FftReal>(v: ArrayViewD<'_, T>, o: &FftOptions) -> Result<ArrayD<Complex<T>>> {
    fft::rfftn_with(&v, o)
}

fn c2r<T: FftReal>(
    n: &[i64],
) -> impl FnOnce(ArrayViewD<'_, Complex<T>>, &FftOptions) -> Result<ArrayD<T>> {
    let s: Vec<usize> = n.iter().map(|&n| n as usize).collect();
    move |v, o| fft::irfftn_with(&v, &o.clone().s(&s).norm(Norm::Forward))
}
