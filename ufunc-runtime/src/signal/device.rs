//! [`fftconvolve`] and [`fftconvolve_axes`] on device arrays, with the host's SciPy semantics
//! (the same shape rules: modes, axes, broadcasting, swapping in `valid`, empty inputs): the
//! forward transforms of [`crate::fft::device`], the spectrum product as a
//! `#[vectorize(target = "cuda")]` complex kernel, the inverse transform and a crop to the
//! mode's window, all on the device. Both inputs have one element type (`f32`, `f64`,
//! `Complex<f32>` or `Complex<f64>`), which the result keeps.
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

use super::fast_shape;
use super::shapes::{conv_shapes, ConvShapes};
use super::Mode;
use crate::cuda::{contiguous, queue_of, wrap};
use crate::element::Element;
use crate::error::Result;
use crate::fft::device::{transform, DeviceInput};
use crate::fft::{DefaultAxes, FftElement, FftOptions, Transform};
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

/// [`super::fftconvolve`] on device arrays: the result stays on the device.
pub fn fftconvolve<A, V1, V2>(in1: V1, in2: V2, mode: Mode) -> Result<DeviceArray<A, V1::Dim>>
where
    A: DeviceConvElement,
    Complex<A::Real>: Element + FftElement<Real = A::Real>,
    V1: DeviceInput<A>,
    V2: DeviceInput<A, Dim = V1::Dim>,
{
    convolve(None, in1.device_view(), in2.device_view(), mode, None)
}

/// [`super::fftconvolve_axes`] on device arrays: along `axes` only, the other axes equal or 1.
pub fn fftconvolve_axes<A, V1, V2>(
    in1: V1,
    in2: V2,
    mode: Mode,
    axes: &[usize],
) -> Result<DeviceArray<A, V1::Dim>>
where
    A: DeviceConvElement,
    Complex<A::Real>: Element + FftElement<Real = A::Real>,
    V1: DeviceInput<A>,
    V2: DeviceInput<A, Dim = V1::Dim>,
{
    convolve(None, in1.device_view(), in2.device_view(), mode, Some(axes))
}

/// [`fftconvolve_axes`] (all axes when `axes` is `None`) queued on `stream` without waiting.
pub fn fftconvolve_on<A, V1, V2>(
    stream: &Stream,
    in1: V1,
    in2: V2,
    mode: Mode,
    axes: Option<&[usize]>,
) -> Result<DeviceArray<A, V1::Dim>>
where
    A: DeviceConvElement,
    Complex<A::Real>: Element + FftElement<Real = A::Real>,
    V1: DeviceInput<A>,
    V2: DeviceInput<A, Dim = V1::Dim>,
{
    convolve(
        Some(stream),
        in1.device_view(),
        in2.device_view(),
        mode,
        axes,
    )
}

fn convolve<A, D>(
    stream: Option<&Stream>,
    in1: DeviceView<'_, A, D>,
    in2: DeviceView<'_, A, D>,
    mode: Mode,
    axes: Option<&[usize]>,
) -> Result<DeviceArray<A, D>>
where
    A: DeviceConvElement,
    Complex<A::Real>: Element + FftElement<Real = A::Real>,
    D: Dimension,
{
    let (s1, s2) = (in1.shape().to_vec(), in2.shape().to_vec());
    let empty = in1.is_empty() || in2.is_empty();
    let (a, b) = (in1.into_dyn(), in2.into_dyn());
    let result = match conv_shapes(mode, &s1, &s2, axes, empty)? {
        ConvShapes::Scalar => A::multiply(stream, a, b)?,
        ConvShapes::Empty(ndim) => crate::device_array::<A, _>(IxDyn(&vec![0; ndim]))?,
        ConvShapes::Conv {
            axes, full, window, ..
        } => {
            let computed = if axes.is_empty() {
                A::multiply(stream, a, b)?
            } else {
                let fshape = fast_shape::<A>(&full, &axes)?;
                let options = FftOptions::new().axes(&axes).s(&fshape);
                let (forward, inverse) = if A::COMPLEX {
                    (Transform::Forward, Transform::Inverse)
                } else {
                    (Transform::RealForward, Transform::RealInverse)
                };
                let all = DefaultAxes::All;
                let sa: DeviceArray<Complex<A::Real>, IxDyn> =
                    transform(stream, &a, forward, &options, all)?;
                let sb = transform(stream, &b, forward, &options, all)?;
                let product = A::multiply_spectra(stream, &sa, &sb)?;
                transform(stream, &product.view(), inverse, &options, all)?
            };
            crop(stream, computed, &window)?
        }
    };
    let mut dim = D::zeros(result.shape().len());
    dim.slice_mut().copy_from_slice(result.shape());
    let DeviceArray { buf, .. } = result;
    Ok(wrap(buf, &dim))
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
