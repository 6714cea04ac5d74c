//! Discrete Fourier transforms with NumPy's conventions, on `ndarray` arrays and views of any
//! dimension and strides (negative too), in `f32` or `f64`, real or complex: `f32` stays
//! `f32`. Results are new standard-layout arrays of the input's dimension type (`Array1` in,
//! `Array1` out; `ArrayD` in, `ArrayD` out).
//!
//! | function | NumPy | input → output |
//! | --- | --- | --- |
//! | [`fft`], [`ifft`] | `fft`, `ifft` (last axis) | real or complex → complex |
//! | [`rfft`], [`irfft`] | `rfft`, `irfft` | real → half spectrum (`n/2+1`) → real (`n`, default `2(m-1)`) |
//! | [`fft2`], [`ifft2`], [`rfft2`], [`irfft2`] | the same over the last two axes | |
//! | [`fftn`], [`ifftn`], [`rfftn`], [`irfftn`] | the same over all axes (or the last `s.len()`) | |
//! | [`fftfreq`], [`rfftfreq`], [`fftshift`], [`ifftshift`] | the same | |
//! | [`next_fast_len`], [`next_fast_len_real`] | SciPy's `next_fast_len(n, real)` | |
//! | [`prev_fast_len`], [`prev_fast_len_real`] | SciPy's `prev_fast_len(n, real)` | |
//!
//! **Options.** The plain call takes the defaults (`fft::fft(&a)?`). Every function has a
//! `_with` form taking [`FftOptions`], a builder with NumPy's parameter names:
//! `axis`/`axes`, `n`/`s` (crop or zero-pad; for the real inverse, the output length),
//! `norm` ([`Norm::Backward`] by default: the inverse is divided by `n`) and `target`
//! (`Target::Parallel`, the default, or `Target::Cpu`). One builder serves every function:
//! `axis(i)` is `axes(&[i])` and `n(k)` is `s(&[k])`. Over no axes (`axes(&[])`, or a 0-d
//! array) the complex transforms give the input as complex numbers, where NumPy returns its
//! input; the real ones, which NumPy refuses there, are errors.
//!
//! ```
//! use ndarray::{array, Array3};
//! use num_complex::Complex;
//! use ufunc_runtime::fft::{self, FftOptions, Norm};
//! # fn main() -> Result<(), ufunc_runtime::Error> {
//! let x = array![1.0f32, 2.0, 0.0, -1.0];
//! let spectrum = fft::fft(&x)?;                                   // Array1<Complex<f32>>
//! assert_eq!(spectrum[0], Complex::new(2.0, 0.0));
//! let back = fft::ifft(&spectrum)?;
//! assert!((back[1].re - 2.0).abs() < 1e-6);
//! assert_eq!(fft::rfft(&x)?.len(), 3);
//! assert_eq!(fft::irfft(&fft::rfft(&x)?)?.len(), 4);                // 2 (m - 1)
//!
//! let volume = Array3::<f64>::ones((4, 6, 8));
//! let opts = FftOptions::new().axes(&[0, 2]).s(&[8, 8]).norm(Norm::Ortho);
//! let v = fft::fftn_with(&volume, &opts)?;                        // cropped/padded, unitary
//! assert_eq!(v.shape(), &[8, 6, 8]);
//! let e = fft::fft_with(&x, &FftOptions::new().axis(1)).unwrap_err();
//! assert_eq!(e.to_string(), "axis 1 is out of bounds for an array of dimension 1");
//! # Ok(())
//! # }
//! ```
//!
//! **Device arrays.** [`device`] has the same functions on [`DeviceArray`](crate::DeviceArray)s
//! and [`DeviceView`](crate::DeviceView)s, through cuFFT (or, under `UFUNC_CUDA_SIM=1`, this
//! module's transforms on the simulated device memory), with results left on the device.
//!
//! **Plans.** Each call resolves its transform into an [`FftPlan`] whose 1-D transforms come
//! from a process-wide cache (rustfft's planner, realfft's for odd real lengths, one per float
//! type, behind a mutex), so a length is planned once per process. Hold an `FftPlan` to transform many arrays
//! of one shape with no allocation beyond the output, or none at all with `execute_into`.
//!
//! **Speed.** Lanes along the last axis are transformed in place in the output; lanes along
//! other axes are gathered a block at a time into contiguous scratch, transformed together and
//! scattered, so memory is read a row at a time. Lanes are split across rayon's pool.
//! rustfft picks AVX/SSE/NEON code at run time. Real transforms of even length are a complex
//! transform of half the length and realfft's twist, here in AVX vectors (odd lengths go
//! through realfft itself). An output over 16 MiB that no later pass reads is written with
//! non-temporal stores.

mod cache;
pub mod device;
mod element;
mod freq;
mod fused;
mod options;
mod pass;
mod plan;
mod real;
mod transpose;

pub use element::{FftElement, FftReal};
pub(crate) use freq::cropped_row_source;
pub use freq::{
    crop_half_spectrum, fftfreq, fftshift, fftshift_axes, ifftshift, ifftshift_axes, next_fast_len,
    next_fast_len_real, prev_fast_len, prev_fast_len_real, rfftfreq,
};
pub use options::{FftOptions, Norm};
pub use plan::FftPlan;

use crate::error::Result;
pub(crate) use fused::{real_convolution, ColumnRoundTrip};
use ndarray::{Array, ArrayBase, Data, Dimension};
use num_complex::Complex;
pub(crate) use options::{plan_recipe, DefaultAxes, Pass, PassKind, Recipe, Transform};
pub(crate) use pass::Shared;

/// The complex output of a transform of `A`s, of dimension `D`.
pub type Spectrum<A, D> = Array<Complex<<A as FftElement>::Real>, D>;

fn complex_transform<A, S, D>(
    a: &ArrayBase<S, D>,
    transform: Transform,
    options: &FftOptions,
    defaults: DefaultAxes,
) -> Result<Spectrum<A, D>>
where
    A: FftElement,
    S: Data<Elem = A>,
    D: Dimension,
{
    FftPlan::<A, Complex<A::Real>>::build(a.shape(), transform, options, defaults)?.execute(a)
}

fn real_forward<T, S, D>(
    a: &ArrayBase<S, D>,
    options: &FftOptions,
    defaults: DefaultAxes,
) -> Result<Array<Complex<T>, D>>
where
    T: FftReal,
    S: Data<Elem = T>,
    D: Dimension,
{
    let plan =
        FftPlan::<T, Complex<T>>::build(a.shape(), Transform::RealForward, options, defaults)?;
    plan.execute(a)
}

fn real_inverse<T, S, D>(
    a: &ArrayBase<S, D>,
    options: &FftOptions,
    defaults: DefaultAxes,
) -> Result<Array<T, D>>
where
    T: FftReal,
    S: Data<Elem = Complex<T>>,
    D: Dimension,
{
    let plan =
        FftPlan::<Complex<T>, T>::build(a.shape(), Transform::RealInverse, options, defaults)?;
    plan.execute(a)
}

macro_rules! complex_functions {
    ($($name:ident, $with:ident, $transform:ident, $defaults:expr, $what:literal;)*) => {$(
        #[doc = concat!("The ", $what, " (NumPy's `", stringify!($name), "`), with the default options.")]
        pub fn $name<A, S, D>(a: &ArrayBase<S, D>) -> Result<Spectrum<A, D>>
        where
            A: FftElement,
            S: Data<Elem = A>,
            D: Dimension,
        {
            $with(a, &FftOptions::new())
        }

        #[doc = concat!("The ", $what, " with [`FftOptions`].")]
        pub fn $with<A, S, D>(a: &ArrayBase<S, D>, options: &FftOptions) -> Result<Spectrum<A, D>>
        where
            A: FftElement,
            S: Data<Elem = A>,
            D: Dimension,
        {
            complex_transform(a, Transform::$transform, options, $defaults)
        }
    )*};
}

complex_functions! {
    fft, fft_with, Forward, DefaultAxes::Last(1), "complex transform along one axis (the last by default)";
    ifft, ifft_with, Inverse, DefaultAxes::Last(1), "inverse complex transform along one axis (the last by default)";
    fft2, fft2_with, Forward, DefaultAxes::Last(2), "complex transform over two axes (the last two by default)";
    ifft2, ifft2_with, Inverse, DefaultAxes::Last(2), "inverse complex transform over two axes (the last two by default)";
    fftn, fftn_with, Forward, DefaultAxes::All, "complex transform over all axes (or the last `s.len()`, or `axes`)";
    ifftn, ifftn_with, Inverse, DefaultAxes::All, "inverse complex transform over all axes (or the last `s.len()`, or `axes`)";
}

macro_rules! real_functions {
    ($($name:ident, $with:ident, $inv:ident, $inv_with:ident, $defaults:expr, $what:literal;)*) => {$(
        #[doc = concat!("The real transform ", $what, " (NumPy's `", stringify!($name),
            "`): the half spectrum, `n / 2 + 1` points along the last transformed axis.")]
        pub fn $name<T, S, D>(a: &ArrayBase<S, D>) -> Result<Array<Complex<T>, D>>
        where
            T: FftReal,
            S: Data<Elem = T>,
            D: Dimension,
        {
            $with(a, &FftOptions::new())
        }

        #[doc = concat!("[`", stringify!($name), "`] with [`FftOptions`].")]
        pub fn $with<T, S, D>(a: &ArrayBase<S, D>, options: &FftOptions) -> Result<Array<Complex<T>, D>>
        where
            T: FftReal,
            S: Data<Elem = T>,
            D: Dimension,
        {
            real_forward(a, options, $defaults)
        }

        #[doc = concat!("The inverse of [`", stringify!($name), "`] (NumPy's `", stringify!($inv),
            "`): real output of `n` points along the last transformed axis, by default ",
            "`2 (m - 1)` for `m` input points. The imaginary parts of the zero (and, for even ",
            "`n`, the Nyquist) frequency are ignored.")]
        pub fn $inv<T, S, D>(a: &ArrayBase<S, D>) -> Result<Array<T, D>>
        where
            T: FftReal,
            S: Data<Elem = Complex<T>>,
            D: Dimension,
        {
            $inv_with(a, &FftOptions::new())
        }

        #[doc = concat!("[`", stringify!($inv), "`] with [`FftOptions`].")]
        pub fn $inv_with<T, S, D>(a: &ArrayBase<S, D>, options: &FftOptions) -> Result<Array<T, D>>
        where
            T: FftReal,
            S: Data<Elem = Complex<T>>,
            D: Dimension,
        {
            real_inverse(a, options, $defaults)
        }
    )*};
}

real_functions! {
    rfft, rfft_with, irfft, irfft_with, DefaultAxes::Last(1), "along one axis (the last by default)";
    rfft2, rfft2_with, irfft2, irfft2_with, DefaultAxes::Last(2), "over two axes (the last two by default)";
    rfftn, rfftn_with, irfftn, irfftn_with, DefaultAxes::All, "over all axes (or the last `s.len()`, or `axes`)";
}
