//! The convolutions of [`super`] on device arrays, with the host's SciPy semantics (the same
//! shape rules: modes, axes, broadcasting, swapping in `valid`, empty inputs, and `Auto`'s
//! choice of method), all on the device: [`fftconvolve`] (the forward transforms of
//! [`crate::fft::device`], the spectrum product as a `#[vectorize(target = "cuda")]` complex
//! kernel, the inverse transform and a crop to the mode's window), [`oaconvolve`] (the host's
//! blocks, each pair by FFT, added into the result by a kernel), and [`convolve`] with
//! `Method::Direct` (a kernel summing each output point over the kernel's points in the host's
//! order). The inputs have one element type (`f32`, `f64`, `Complex<f32>` or `Complex<f64>`),
//! which the result keeps, or are a real and a complex array of one precision: then the real one
//! is widened to complex on the device and the result is complex, as on the host
//! ([`DeviceConvPair`]).
//!
//! ```
//! use ndarray::array;
//! use ufunc_runtime::signal::{self, device, Mode};
//! # fn main() -> Result<(), ufunc_runtime::Error> {
//! let (x, k) = (array![1.0f64, 2.0, 3.0], array![0.0f64, 1.0, 0.5]);
//! let (dx, dk) = match (ufunc_runtime::to_device(&x), ufunc_runtime::to_device(&k)) {
//!     (Ok(dx), Ok(dk)) => (dx, dk),
//!     (Err(e), _) | (_, Err(e)) => return Ok(println!("no device: {e}")),
//! };
//! let full = device::fftconvolve(&dx, &dk, Mode::Full)?.copy_to_host()?;
//! let want = signal::fftconvolve(&x, &k, Mode::Full)?;
//! assert!(full.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-12));
//! # Ok(())
//! # }
//! ```

use super::overlap_add::{full_shape_of, OaPlan};
use super::shapes::ConvShapes;
use super::{fast_shape, Computation, ConvOptions, Method, Mode};
use crate::cuda::{contiguous, launch_support, queue_of, wrap, Arg};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::fft::device::{transform, DeviceInput};
use crate::fft::{DefaultAxes, FftElement, FftOptions, Transform};
use crate::shape::{byte_size, c_strides, element_count};
use crate::{DeviceArray, DeviceBuffer, DeviceView, Stream};
use ndarray::{Dimension, IxDyn, Slice, SliceInfoElem};
use num_complex::Complex;
use ufunc_macros::vectorize;

#[vectorize(target = "cuda")]
fn multiply_c32(a: Complex<f32>, b: Complex<f32>) -> Complex<f32> {
    a * b
}

#[vectorize(target = "cuda")]
fn multiply_c64(a: Complex<f64>, b: Complex<f64>) -> Complex<f64> {
    a * b
}

#[vectorize(target = "cuda")]
fn multiply_f32(a: f32, b: f32) -> f32 {
    a * b
}

#[vectorize(target = "cuda")]
fn multiply_f64(a: f64, b: f64) -> f64 {
    a * b
}

#[vectorize(target = "cuda")]
fn widen_c32(x: f32) -> Complex<f32> {
    Complex::new(x, 0.0)
}

#[vectorize(target = "cuda")]
fn widen_c64(x: f64) -> Complex<f64> {
    Complex::new(x, 0.0)
}

mod sealed {
    pub trait Sealed {}
}

/// The element types of device convolutions: `f32`, `f64`, `Complex<f32>`, `Complex<f64>`.
pub trait DeviceConvElement: FftElement + Element + sealed::Sealed
where
    Complex<Self::Real>: Element,
{
    /// The product of `a` and `b` (broadcast), on the device.
    #[doc(hidden)]
    fn multiply(
        stream: Option<&Stream>,
        a: DeviceView<'_, Self, IxDyn>,
        b: DeviceView<'_, Self, IxDyn>,
    ) -> Result<DeviceArray<Self, IxDyn>>;

    /// The product of two spectra (broadcast), on the device.
    #[doc(hidden)]
    fn multiply_spectra(
        stream: Option<&Stream>,
        a: &DeviceArray<Complex<Self::Real>, IxDyn>,
        b: &DeviceArray<Complex<Self::Real>, IxDyn>,
    ) -> Result<DeviceArray<Complex<Self::Real>, IxDyn>>;
}

macro_rules! conv_elements {
    ($($t:ty, $mul:ident, $spectra:ident;)*) => {$(
        impl sealed::Sealed for $t {}
        impl DeviceConvElement for $t {
            fn multiply(
                stream: Option<&Stream>,
                a: DeviceView<'_, Self, IxDyn>,
                b: DeviceView<'_, Self, IxDyn>,
            ) -> Result<DeviceArray<Self, IxDyn>> {
                match stream {
                    Some(s) => $mul::on_stream(s, a, b),
                    None => $mul::on_device(a, b),
                }
            }

            fn multiply_spectra(
                stream: Option<&Stream>,
                a: &DeviceArray<Complex<Self::Real>, IxDyn>,
                b: &DeviceArray<Complex<Self::Real>, IxDyn>,
            ) -> Result<DeviceArray<Complex<Self::Real>, IxDyn>> {
                match stream {
                    Some(s) => $spectra::on_stream(s, a, b),
                    None => $spectra::on_device(a, b),
                }
            }
        }
    )*};
}

conv_elements! {
    f32, multiply_f32, multiply_c32;
    f64, multiply_f64, multiply_c64;
    Complex<f32>, multiply_c32, multiply_c32;
    Complex<f64>, multiply_c64, multiply_c64;
}

/// The pairs of element types a device convolution takes, as the host's [`super::ConvElement`]:
/// one type (the result keeps it), or a real and a complex type of one precision (the real
/// input is widened to complex on the device; the result is complex).
pub trait DeviceConvPair<B: Element>: Element {
    /// The result's element type (a [`DeviceConvElement`]).
    type Output: Element;

    /// The convolution of `a` and `b`, both of the output type once widened.
    #[doc(hidden)]
    fn run_pair<D: Dimension>(
        stream: Option<&Stream>,
        a: DeviceView<'_, Self, D>,
        b: DeviceView<'_, B, D>,
        options: &ConvOptions,
    ) -> Result<DeviceArray<Self::Output, D>>;
}

macro_rules! same_type_pairs {
    ($($t:ty),*) => {$(
        impl DeviceConvPair<$t> for $t {
            type Output = $t;
            fn run_pair<D: Dimension>(
                stream: Option<&Stream>,
                a: DeviceView<'_, $t, D>,
                b: DeviceView<'_, $t, D>,
                options: &ConvOptions,
            ) -> Result<DeviceArray<$t, D>> {
                run(stream, a, b, options)
            }
        }
    )*};
}

same_type_pairs!(f32, f64, Complex<f32>, Complex<f64>);

macro_rules! mixed_pairs {
    ($($real:ty, $widen:ident;)*) => {$(
        impl DeviceConvPair<Complex<$real>> for $real {
            type Output = Complex<$real>;
            fn run_pair<D: Dimension>(
                stream: Option<&Stream>,
                a: DeviceView<'_, $real, D>,
                b: DeviceView<'_, Complex<$real>, D>,
                options: &ConvOptions,
            ) -> Result<DeviceArray<Complex<$real>, D>> {
                let a = match stream {
                    Some(s) => $widen::on_stream(s, a)?,
                    None => $widen::on_device(a)?,
                };
                run(stream, a.view(), b, options)
            }
        }

        impl DeviceConvPair<$real> for Complex<$real> {
            type Output = Complex<$real>;
            fn run_pair<D: Dimension>(
                stream: Option<&Stream>,
                a: DeviceView<'_, Complex<$real>, D>,
                b: DeviceView<'_, $real, D>,
                options: &ConvOptions,
            ) -> Result<DeviceArray<Complex<$real>, D>> {
                let b = match stream {
                    Some(s) => $widen::on_stream(s, b)?,
                    None => $widen::on_device(b)?,
                };
                run(stream, a, b.view(), options)
            }
        }
    )*};
}

mixed_pairs! {
    f32, widen_c32;
    f64, widen_c64;
}

/// [`super::fftconvolve`] on device arrays: the result stays on the device.
pub fn fftconvolve<A, B, V1, V2>(
    in1: V1,
    in2: V2,
    mode: Mode,
) -> Result<DeviceArray<A::Output, V1::Dim>>
where
    A: DeviceConvPair<B>,
    B: Element,
    V1: DeviceInput<A>,
    V2: DeviceInput<B, Dim = V1::Dim>,
{
    convolve_with(in1, in2, &ConvOptions::new(mode).method(Method::Fft))
}

/// [`super::fftconvolve_axes`] on device arrays: along `axes` only, the other axes equal or 1.
pub fn fftconvolve_axes<A, B, V1, V2>(
    in1: V1,
    in2: V2,
    mode: Mode,
    axes: &[usize],
) -> Result<DeviceArray<A::Output, V1::Dim>>
where
    A: DeviceConvPair<B>,
    B: Element,
    V1: DeviceInput<A>,
    V2: DeviceInput<B, Dim = V1::Dim>,
{
    let options = ConvOptions::new(mode).method(Method::Fft).axes(axes);
    convolve_with(in1, in2, &options)
}

/// [`fftconvolve_axes`] (all axes when `axes` is `None`) queued on `stream` without waiting.
pub fn fftconvolve_on<A, B, V1, V2>(
    stream: &Stream,
    in1: V1,
    in2: V2,
    mode: Mode,
    axes: Option<&[usize]>,
) -> Result<DeviceArray<A::Output, V1::Dim>>
where
    A: DeviceConvPair<B>,
    B: Element,
    V1: DeviceInput<A>,
    V2: DeviceInput<B, Dim = V1::Dim>,
{
    let mut options = ConvOptions::new(mode).method(Method::Fft);
    if let Some(axes) = axes {
        options = options.axes(axes);
    }
    convolve_on(stream, in1, in2, &options)
}

/// [`super::oaconvolve`] on device arrays: overlap-add, each pair of blocks convolved by FFT
/// on the device and added into the result there.
pub fn oaconvolve<A, B, V1, V2>(
    in1: V1,
    in2: V2,
    mode: Mode,
) -> Result<DeviceArray<A::Output, V1::Dim>>
where
    A: DeviceConvPair<B>,
    B: Element,
    V1: DeviceInput<A>,
    V2: DeviceInput<B, Dim = V1::Dim>,
{
    convolve_with(in1, in2, &ConvOptions::new(mode).method(Method::OverlapAdd))
}

/// [`super::convolve`] on device arrays: `method` direct (a kernel summing each output point
/// in the host's order), FFT, overlap-add, or `Auto` (SciPy's choice, as on the host).
pub fn convolve<A, B, V1, V2>(
    in1: V1,
    in2: V2,
    mode: Mode,
    method: Method,
) -> Result<DeviceArray<A::Output, V1::Dim>>
where
    A: DeviceConvPair<B>,
    B: Element,
    V1: DeviceInput<A>,
    V2: DeviceInput<B, Dim = V1::Dim>,
{
    convolve_with(
        in1,
        in2,
        &ConvOptions::new(mode).method(method).scipy_convolve_rule(),
    )
}

/// [`super::convolve_with`] on device arrays (the options' target is not used: this runs on
/// the device).
pub fn convolve_with<A, B, V1, V2>(
    in1: V1,
    in2: V2,
    options: &ConvOptions,
) -> Result<DeviceArray<A::Output, V1::Dim>>
where
    A: DeviceConvPair<B>,
    B: Element,
    V1: DeviceInput<A>,
    V2: DeviceInput<B, Dim = V1::Dim>,
{
    A::run_pair(None, in1.device_view(), in2.device_view(), options)
}

/// [`convolve_with`] queued on `stream` without waiting.
pub fn convolve_on<A, B, V1, V2>(
    stream: &Stream,
    in1: V1,
    in2: V2,
    options: &ConvOptions,
) -> Result<DeviceArray<A::Output, V1::Dim>>
where
    A: DeviceConvPair<B>,
    B: Element,
    V1: DeviceInput<A>,
    V2: DeviceInput<B, Dim = V1::Dim>,
{
    A::run_pair(Some(stream), in1.device_view(), in2.device_view(), options)
}

fn run<A, D>(
    stream: Option<&Stream>,
    in1: DeviceView<'_, A, D>,
    in2: DeviceView<'_, A, D>,
    options: &ConvOptions,
) -> Result<DeviceArray<A, D>>
where
    A: DeviceConvElement,
    Complex<A::Real>: Element + FftElement<Real = A::Real>,
    D: Dimension,
{
    let (s1, s2) = (in1.shape().to_vec(), in2.shape().to_vec());
    let empty = in1.is_empty() || in2.is_empty();
    let (a, b) = (in1.into_dyn(), in2.into_dyn());
    let result = match options.shapes(&s1, &s2, empty)? {
        ConvShapes::Scalar => A::multiply(stream, a, b)?,
        ConvShapes::Empty(ndim) => crate::device_array::<A, _>(IxDyn(&vec![0; ndim]))?,
        ConvShapes::Conv {
            axes,
            swap,
            full,
            window,
        } => {
            let computed = match options.computation(&s1, &s2, &axes, swap) {
                Computation::Product => A::multiply(stream, a, b)?,
                Computation::Direct => direct(stream, &a, &b, &axes, &full)?,
                Computation::OverlapAdd => overlap_add(stream, &a, &b, &axes, &full)?,
                Computation::Fft => {
                    let fshape = fast_shape::<A>(&full, &axes)?;
                    spectrum_product(stream, &a, &b, &axes, &fshape)?
                }
            };
            crop(stream, computed, &window)?
        }
    };
    let mut dim = D::zeros(result.shape().len());
    dim.slice_mut().copy_from_slice(result.shape());
    let DeviceArray { buf, .. } = result;
    Ok(wrap(buf, &dim))
}

/// The circular convolution of `a` and `b` along `axes` over transforms of lengths `fshape`
/// (the full convolution where `fshape` covers it): forward transforms, the spectrum product
/// kernel, the inverse.
fn spectrum_product<A>(
    stream: Option<&Stream>,
    a: &DeviceView<'_, A, IxDyn>,
    b: &DeviceView<'_, A, IxDyn>,
    axes: &[usize],
    fshape: &[usize],
) -> Result<DeviceArray<A, IxDyn>>
where
    A: DeviceConvElement,
    Complex<A::Real>: Element + FftElement<Real = A::Real>,
{
    let options = FftOptions::new().axes(axes).s(fshape);
    let (forward, inverse) = if A::COMPLEX {
        (Transform::Forward, Transform::Inverse)
    } else {
        (Transform::RealForward, Transform::RealInverse)
    };
    let all = DefaultAxes::All;
    let sa: DeviceArray<Complex<A::Real>, IxDyn> = transform(stream, a, forward, &options, all)?;
    let sb = transform(stream, b, forward, &options, all)?;
    let product = A::multiply_spectra(stream, &sa, &sb)?;
    transform(stream, &product.view(), inverse, &options, all)
}

crate::cuda::support_kernels!(KERNELS, "ufunc_conv", include_str!("device.cuh"));

/// The kernels' entries for elements `A`: the direct sum and the overlap-add accumulation.
fn entries<A: FftElement>() -> (&'static str, &'static str) {
    match (A::COMPLEX, size_of::<A::Real>()) {
        (false, 4) => ("ufunc_conv_direct_f32", "ufunc_conv_add_f32"),
        (false, _) => ("ufunc_conv_direct_f64", "ufunc_conv_add_f64"),
        (true, 4) => ("ufunc_conv_direct_c32", "ufunc_conv_add_c32"),
        (true, _) => ("ufunc_conv_direct_c64", "ufunc_conv_add_c64"),
    }
}

/// The kernels index with at most this many axes.
const MAX_AXES: usize = 32;

fn check_axes(ndim: usize) -> Result<()> {
    if ndim > MAX_AXES {
        return Err(Error::InvalidArgument {
            name: "in1",
            message: format!("device convolutions take at most {MAX_AXES} dimensions, got {ndim}"),
        });
    }
    Ok(())
}

fn i64s(v: impl IntoIterator<Item = usize>) -> Vec<i64> {
    v.into_iter().map(|x| x as i64).collect()
}

/// The full convolution of `a` and `b` along `axes` (shape `full`) summed directly on the
/// device: one thread per output point, kernel points in the host's order.
fn direct<A>(
    stream: Option<&Stream>,
    a: &DeviceView<'_, A, IxDyn>,
    b: &DeviceView<'_, A, IxDyn>,
    axes: &[usize],
    full: &[usize],
) -> Result<DeviceArray<A, IxDyn>>
where
    A: DeviceConvElement,
    Complex<A::Real>: Element,
{
    check_axes(full.len())?;
    let queue = queue_of(stream)?;
    let n = element_count(full)?;
    let mut out = queue.alloc(byte_size(full, size_of::<A>())?)?;
    let (x, k) = (a.fft_input(), b.fft_input());
    let conv = i64s((0..full.len()).map(|d| usize::from(axes.contains(&d))));
    let points: usize = axes.iter().map(|&ax| k.shape[ax]).product();
    let strides = |s: &[isize]| s.iter().map(|&v| v as i64).collect::<Vec<_>>();
    let mems = [
        queue.upload_i64(&i64s(full.iter().copied()))?,
        queue.upload_i64(&conv)?,
        queue.upload_i64(&i64s(x.shape.iter().copied()))?,
        queue.upload_i64(&strides(x.strides))?,
        queue.upload_i64(&i64s(k.shape.iter().copied()))?,
        queue.upload_i64(&strides(k.strides))?,
    ];
    let mut args = vec![Arg::I64(n as i64), Arg::I32(full.len() as i32)];
    args.extend(mems.iter().map(|m| Arg::In(m, 0)));
    args.extend([
        Arg::I64(points as i64),
        Arg::In(x.mem, x.offset),
        Arg::In(k.mem, k.offset),
        Arg::Out(&mut out),
    ]);
    launch_support(queue, &KERNELS, entries::<A>().0, n, args)?;
    Ok(wrap(DeviceBuffer(out), &IxDyn(full)))
}

/// The full convolution by overlap-add on the device: the host's blocks and transform
/// lengths, each pair's piece added into the result in the host's order.
fn overlap_add<A>(
    stream: Option<&Stream>,
    a: &DeviceView<'_, A, IxDyn>,
    b: &DeviceView<'_, A, IxDyn>,
    axes: &[usize],
    full: &[usize],
) -> Result<DeviceArray<A, IxDyn>>
where
    A: DeviceConvElement,
    Complex<A::Real>: Element + FftElement<Real = A::Real>,
{
    check_axes(full.len())?;
    let queue = queue_of(stream)?;
    let (s1, s2) = (a.shape().to_vec(), b.shape().to_vec());
    let plan = OaPlan::new(&s1, &s2, axes, full, A::COMPLEX)?;
    let mut out = queue.alloc_zeroed(byte_size(full, size_of::<A>())?)?;
    let out_strides = c_strides(full);
    let out_strides_mem = queue.upload_i64(&i64s(out_strides.iter().map(|&s| s as usize)))?;
    let slice = |r: &[std::ops::Range<usize>]| -> Vec<SliceInfoElem> {
        r.iter().map(|r| Slice::from(r.clone()).into()).collect()
    };
    for pair in plan.pairs(&s1, &s2) {
        let x = a.slice(slice(&pair.x).as_slice())?;
        let k = b.slice(slice(&pair.k).as_slice())?;
        let piece = full_shape_of(x.shape(), k.shape(), axes);
        let r = spectrum_product(stream, &x, &k, axes, &plan.fshape)?;
        let n = element_count(&piece)?;
        let offset: isize = pair
            .offset
            .iter()
            .zip(out_strides.iter())
            .map(|(&o, &s)| o as isize * s)
            .sum();
        let shape_mem = queue.upload_i64(&i64s(piece.iter().copied()))?;
        let piece_strides = c_strides(r.shape());
        let piece_strides_mem =
            queue.upload_i64(&i64s(piece_strides.iter().map(|&s| s as usize)))?;
        let args = vec![
            Arg::I64(n as i64),
            Arg::I32(full.len() as i32),
            Arg::In(&shape_mem, 0),
            Arg::In(&piece_strides_mem, 0),
            Arg::In(&out_strides_mem, 0),
            Arg::I64(offset as i64),
            Arg::In(&r.buf.0, 0),
            Arg::Out(&mut out),
        ];
        launch_support(queue, &KERNELS, entries::<A>().1, n, args)?;
    }
    Ok(wrap(DeviceBuffer(out), &IxDyn(full)))
}

/// The `(start, len)` window of `a` along every axis, as a new C-order device array (`a` itself
/// when the window is all of it).
fn crop<A: FftElement + Element>(
    stream: Option<&Stream>,
    a: DeviceArray<A, IxDyn>,
    window: &[(usize, usize)],
) -> Result<DeviceArray<A, IxDyn>> {
    if window
        .iter()
        .zip(a.shape())
        .all(|(&(start, len), &n)| start == 0 && len == n)
    {
        return Ok(a);
    }
    let info: Vec<SliceInfoElem> = window
        .iter()
        .map(|&(start, len)| Slice::from(start..start + len).into())
        .collect();
    let view = a.view().slice(info.as_slice())?;
    let buf = contiguous::<A>(queue_of(stream)?, &view.fft_input())?;
    Ok(wrap(DeviceBuffer(buf), &IxDyn(view.shape())))
}

#[cfg(test)]
mod tests {
    #[test]
    fn convolution_kernels_compile_with_nvrtc() {
        crate::cuda::assert_compiles(
            "convolution_kernels_compile_with_nvrtc",
            (super::KERNELS.source)(),
        );
    }

    #[test]
    fn the_elementwise_kernels_compile_with_nvrtc() {
        use super::*;
        let sources = [
            multiply_c32::cuda_source(),
            multiply_c64::cuda_source(),
            multiply_f32::cuda_source(),
            multiply_f64::cuda_source(),
            widen_c32::cuda_source(),
            widen_c64::cuda_source(),
        ];
        crate::cuda::assert_all_compile("the_elementwise_kernels_compile_with_nvrtc", sources);
    }
}
