//! The transforms of [`crate::fft`] on device arrays: the same functions, options and shape
//! rules, taking a [`DeviceArray`] or [`DeviceView`] (any strides) and returning a new
//! [`DeviceArray`], computed by cuFFT on the GPU. Nothing is copied to or from the host.
//!
//! Each function has three forms: `fft(&a)` (defaults), `fft_with(&a, &options)`, and
//! `fft_on(&stream, &a, &options)`, queued on a [`Stream`] without waiting (read the result
//! after `stream.synchronize()`). The first two wait for the transform.
//!
//! A transform runs as batched cuFFT plans (`cufftPlanMany`): adjacent axes share one plan of
//! rank up to 3, other axes are reached through the plan's strides; complex passes run in
//! place in the output. Plans are made once per layout and stream and kept with the stream.
//! Inputs are gathered (cropped, zero-padded, widened to complex) by a small kernel unless
//! they are complex, contiguous and of the transform's shape. The norm's factor is applied by
//! a scaling kernel. Under the host simulator (`UFUNC_CUDA_SIM=1`) the plans run the host
//! transforms of [`crate::fft`] on the simulated device memory.
//!
//! Without a device, or without the cuFFT library, the functions return `Err`.
//!
//! ```
//! use ndarray::array;
//! use ufunc_runtime::fft::{self, device, FftOptions, Norm};
//! # fn main() -> Result<(), ufunc_runtime::Error> {
//! let x = array![[1.0f32, 2.0, 0.0, -1.0], [0.5, 0.0, 0.0, 0.0]];
//! let d = match ufunc_runtime::to_device(&x) {
//!     Ok(d) => d,
//!     Err(e) => return Ok(println!("no device: {e}")),
//! };
//! let spectrum = device::rfft(&d)?;                     // DeviceArray<Complex<f32>, Ix2>
//! assert_eq!(spectrum.shape(), &[2, 3]);
//! let back = device::irfft_with(&spectrum, &FftOptions::new().n(4))?;
//! let host = back.copy_to_host()?;
//! assert!((host[[0, 1]] - 2.0).abs() < 1e-5);
//! let cols = device::fft_with(&d.view(), &FftOptions::new().axis(0).norm(Norm::Ortho))?;
//! let want = fft::fft_with(&x, &FftOptions::new().axis(0).norm(Norm::Ortho))?;
//! assert!((cols.copy_to_host()?[[1, 0]] - want[[1, 0]]).norm() < 1e-5);
//! # Ok(())
//! # }
//! ```

use super::{plan_recipe, DefaultAxes, Transform};
use super::{FftElement, FftOptions, FftReal};
use crate::cuda::{queue_of, run_recipe, wrap};
use crate::element::Element;
use crate::error::Result;
use crate::{DeviceArray, DeviceBuffer, DeviceView, Stream};
use ndarray::Dimension;
use num_complex::Complex;

/// What the device transforms take: a `&DeviceArray` or a `DeviceView` (by value or
/// reference) of `T`s.
pub trait DeviceInput<T: Element> {
    /// The dimension type, kept by the result.
    type Dim: Dimension;
    /// The data as a view.
    fn device_view(&self) -> DeviceView<'_, T, Self::Dim>;
}

impl<T: Element, D: Dimension> DeviceInput<T> for &DeviceArray<T, D> {
    type Dim = D;
    fn device_view(&self) -> DeviceView<'_, T, D> {
        self.view()
    }
}

impl<T: Element, D: Dimension> DeviceInput<T> for DeviceView<'_, T, D> {
    type Dim = D;
    fn device_view(&self) -> DeviceView<'_, T, D> {
        self.clone()
    }
}

impl<T: Element, D: Dimension> DeviceInput<T> for &DeviceView<'_, T, D> {
    type Dim = D;
    fn device_view(&self) -> DeviceView<'_, T, D> {
        (*self).clone()
    }
}

/// Runs `transform` of `a` on `stream`'s queue (or the default one, which waits).
pub(crate) fn transform<I, O, D>(
    stream: Option<&Stream>,
    a: &DeviceView<'_, I, D>,
    transform: Transform,
    options: &FftOptions,
    defaults: DefaultAxes,
) -> Result<DeviceArray<O, D>>
where
    I: FftElement + Element,
    O: Element,
    D: Dimension,
{
    options.check_device()?;
    let recipe = plan_recipe(a.shape(), transform, options, defaults)?;
    let buf = run_recipe::<I>(queue_of(stream)?, &a.fft_input(), &recipe)?;
    let mut dim = D::zeros(recipe.output.len());
    dim.slice_mut().copy_from_slice(&recipe.output);
    Ok(wrap(DeviceBuffer(buf), &dim))
}

macro_rules! complex_functions {
    ($($name:ident, $with:ident, $on:ident, $transform:ident, $defaults:expr;)*) => {$(
        #[doc = concat!("[`crate::fft::", stringify!($name), "`] on a device array.")]
        pub fn $name<A, V>(a: V) -> Result<DeviceArray<Complex<A::Real>, V::Dim>>
        where
            A: FftElement + Element,
            Complex<A::Real>: Element,
            V: DeviceInput<A>,
        {
            $with(a, &FftOptions::new())
        }

        #[doc = concat!("[`", stringify!($name), "`] with [`FftOptions`].")]
        pub fn $with<A, V>(a: V, options: &FftOptions) -> Result<DeviceArray<Complex<A::Real>, V::Dim>>
        where
            A: FftElement + Element,
            Complex<A::Real>: Element,
            V: DeviceInput<A>,
        {
            transform(None, &a.device_view(), Transform::$transform, options, $defaults)
        }

        #[doc = concat!("[`", stringify!($with), "`] queued on `stream` without waiting.")]
        pub fn $on<A, V>(stream: &Stream, a: V, options: &FftOptions) -> Result<DeviceArray<Complex<A::Real>, V::Dim>>
        where
            A: FftElement + Element,
            Complex<A::Real>: Element,
            V: DeviceInput<A>,
        {
            transform(Some(stream), &a.device_view(), Transform::$transform, options, $defaults)
        }
    )*};
}

complex_functions! {
    fft, fft_with, fft_on, Forward, DefaultAxes::Last(1);
    ifft, ifft_with, ifft_on, Inverse, DefaultAxes::Last(1);
    fft2, fft2_with, fft2_on, Forward, DefaultAxes::Last(2);
    ifft2, ifft2_with, ifft2_on, Inverse, DefaultAxes::Last(2);
    fftn, fftn_with, fftn_on, Forward, DefaultAxes::All;
    ifftn, ifftn_with, ifftn_on, Inverse, DefaultAxes::All;
}

macro_rules! real_functions {
    ($($name:ident, $with:ident, $on:ident, $inv:ident, $inv_with:ident, $inv_on:ident, $defaults:expr;)*) => {$(
        #[doc = concat!("[`crate::fft::", stringify!($name), "`] on a device array: the half spectrum.")]
        pub fn $name<T, V>(a: V) -> Result<DeviceArray<Complex<T>, V::Dim>>
        where
            T: FftReal + Element,
            Complex<T>: Element,
            V: DeviceInput<T>,
        {
            $with(a, &FftOptions::new())
        }

        #[doc = concat!("[`", stringify!($name), "`] with [`FftOptions`].")]
        pub fn $with<T, V>(a: V, options: &FftOptions) -> Result<DeviceArray<Complex<T>, V::Dim>>
        where
            T: FftReal + Element,
            Complex<T>: Element,
            V: DeviceInput<T>,
        {
            transform(None, &a.device_view(), Transform::RealForward, options, $defaults)
        }

        #[doc = concat!("[`", stringify!($with), "`] queued on `stream` without waiting.")]
        pub fn $on<T, V>(stream: &Stream, a: V, options: &FftOptions) -> Result<DeviceArray<Complex<T>, V::Dim>>
        where
            T: FftReal + Element,
            Complex<T>: Element,
            V: DeviceInput<T>,
        {
            transform(Some(stream), &a.device_view(), Transform::RealForward, options, $defaults)
        }

        #[doc = concat!("[`crate::fft::", stringify!($inv), "`] on a device array: real output.")]
        pub fn $inv<T, V>(a: V) -> Result<DeviceArray<T, V::Dim>>
        where
            T: FftReal + Element,
            Complex<T>: Element + FftElement<Real = T>,
            V: DeviceInput<Complex<T>>,
        {
            $inv_with(a, &FftOptions::new())
        }

        #[doc = concat!("[`", stringify!($inv), "`] with [`FftOptions`].")]
        pub fn $inv_with<T, V>(a: V, options: &FftOptions) -> Result<DeviceArray<T, V::Dim>>
        where
            T: FftReal + Element,
            Complex<T>: Element + FftElement<Real = T>,
            V: DeviceInput<Complex<T>>,
        {
            transform(None, &a.device_view(), Transform::RealInverse, options, $defaults)
        }

        #[doc = concat!("[`", stringify!($inv_with), "`] queued on `stream` without waiting.")]
        pub fn $inv_on<T, V>(stream: &Stream, a: V, options: &FftOptions) -> Result<DeviceArray<T, V::Dim>>
        where
            T: FftReal + Element,
            Complex<T>: Element + FftElement<Real = T>,
            V: DeviceInput<Complex<T>>,
        {
            transform(Some(stream), &a.device_view(), Transform::RealInverse, options, $defaults)
        }
    )*};
}

real_functions! {
    rfft, rfft_with, rfft_on, irfft, irfft_with, irfft_on, DefaultAxes::Last(1);
    rfft2, rfft2_with, rfft2_on, irfft2, irfft2_with, irfft2_on, DefaultAxes::Last(2);
    rfftn, rfftn_with, rfftn_on, irfftn, irfftn_with, irfftn_on, DefaultAxes::All;
}
