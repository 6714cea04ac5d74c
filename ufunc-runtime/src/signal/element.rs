//! The element pairs a convolution takes, and the element it gives: real with real stays
//! real, anything with a complex input is complex, and both inputs share one float type.

use crate::error::Result;
use crate::fft::{self, FftElement, FftOptions};
use crate::parallel::Threads;
use ndarray::{ArrayD, ArrayViewD};
use num_complex::Complex;
use rayon::prelude::*;

/// `Self` convolved with `B`: both inputs in one float type (`f32` stays `f32`), the result
/// real when both are real and complex when either is complex.
///
/// ```
/// use ndarray::array;
/// use num_complex::Complex;
/// use ufunc_runtime::signal::{fftconvolve, Mode};
/// let real: ndarray::Array1<f32> = fftconvolve(&array![1.0f32, 2.0], &array![1.0f32, 1.0], Mode::Full)?;
/// let complex: ndarray::Array1<Complex<f32>> =
///     fftconvolve(&array![1.0f32, 2.0], &array![Complex::new(0.0f32, 1.0)], Mode::Full)?;
/// assert!((real[1] - 3.0).abs() < 1e-6 && (complex[1].im - 2.0).abs() < 1e-6);
/// # Ok::<(), ufunc_runtime::Error>(())
/// ```
pub trait ConvElement<B: FftElement<Real = Self::Real>>: FftElement {
    /// The element of the result.
    type Output: FftElement<Real = Self::Real> + std::ops::Add<Output = Self::Output>;
    /// The product of two elements.
    #[doc(hidden)]
    fn multiply(a: Self, b: B) -> Self::Output;
    /// The product of the two inputs' spectra transformed back (`fshape` points along `axes`,
    /// real transforms for a real result, every other axis broadcast), cut to `window`
    /// (start and length per axis).
    #[doc(hidden)]
    fn spectrum_product(
        a: ArrayViewD<'_, Self>,
        b: ArrayViewD<'_, B>,
        axes: &[usize],
        fshape: &[usize],
        window: &[(usize, usize)],
        options: &FftOptions,
    ) -> Result<ArrayD<Self::Output>>;
}

/// The product of two spectra, in place in `a` where the shapes agree (the usual case; split
/// across rayon's pool for the `parallel` target), else broadcast into a new array.
fn multiply_spectra<T: crate::fft::FftReal>(
    mut a: ArrayD<Complex<T>>,
    b: &ArrayD<Complex<T>>,
    options: &FftOptions,
) -> Result<ArrayD<Complex<T>>> {
    if a.shape() != b.shape() {
        return Ok(&a * b);
    }
    let threads = options.threads()?;
    match (a.as_slice_mut(), b.as_slice()) {
        (Some(x), Some(y)) => {
            let multiply = |(x, y): (&mut [Complex<T>], &[Complex<T>])| {
                x.iter_mut().zip(y).for_each(|(x, y)| *x = *x * *y)
            };
            match threads {
                Threads::One => multiply((x, y)),
                Threads::All => x
                    .par_chunks_mut(PRODUCT_CHUNK)
                    .zip(y.par_chunks(PRODUCT_CHUNK))
                    .for_each(multiply),
            }
        }
        _ => a.zip_mut_with(b, |x, y| *x = *x * *y),
    }
    Ok(a)
}

/// Checks what [`ConvElement::spectrum_product`] is given (the crate's callers derive it by
/// SciPy's rules; the trait is public, so its method checks): distinct axes in range, one
/// transform length of at least the longer input per axis, the other axes equal or 1, and a
/// window inside the result.
fn check_arguments(
    s1: &[usize],
    s2: &[usize],
    axes: &[usize],
    fshape: &[usize],
    window: &[(usize, usize)],
) -> Result<()> {
    let ndim = s1.len();
    let fits = s2.len() == ndim
        && window.len() == ndim
        && fshape.len() == axes.len()
        && !axes.is_empty()
        && axes
            .iter()
            .enumerate()
            .all(|(i, &ax)| ax < ndim && !axes[..i].contains(&ax))
        && (0..ndim).all(|ax| {
            let (start, len) = window[ax];
            match axes.iter().position(|&a| a == ax) {
                Some(i) => fshape[i] >= s1[ax].max(s2[ax]) && start + len <= fshape[i],
                None => {
                    (s1[ax] == s2[ax] || s1[ax] == 1 || s2[ax] == 1)
                        && start + len <= s1[ax].max(s2[ax])
                }
            }
        });
    if fits {
        return Ok(());
    }
    Err(crate::Error::InvalidArgument {
        name: "window",
        message: format!(
            "a spectrum product of shapes {s1:?} and {s2:?} along axes {axes:?} with \
             transform lengths {fshape:?} cannot give the window {window:?}"
        ),
    })
}

/// The `window` (start and length per axis) of `full`, as a new array (`full` itself when
/// the window is all of it).
pub(crate) fn cut<T: Copy>(full: ArrayD<T>, window: &[(usize, usize)]) -> Result<ArrayD<T>> {
    if window
        .iter()
        .zip(full.shape())
        .all(|(&(s, l), &n)| s == 0 && l == n)
    {
        return Ok(full);
    }
    let view = full.slice_each_axis(|d| {
        let (start, len) = window[d.axis.index()];
        ndarray::Slice::from(start..start + len)
    });
    crate::alloc::try_to_owned(view)
}

/// Elements per piece of a parallel spectrum product.
const PRODUCT_CHUNK: usize = 1 << 15;

macro_rules! real_pair {
    ($t:ty) => {
        impl ConvElement<$t> for $t {
            type Output = $t;
            fn multiply(a: $t, b: $t) -> $t {
                a * b
            }
            fn spectrum_product(
                a: ArrayViewD<'_, $t>,
                b: ArrayViewD<'_, $t>,
                axes: &[usize],
                fshape: &[usize],
                window: &[(usize, usize)],
                options: &FftOptions,
            ) -> Result<ArrayD<$t>> {
                check_arguments(a.shape(), b.shape(), axes, fshape, window)?;
                fft::real_convolution(a, b, axes, fshape, window, options)
            }
        }
    };
}

macro_rules! complex_pair {
    ($a:ty, $b:ty, $t:ty) => {
        impl ConvElement<$b> for $a {
            type Output = Complex<$t>;
            fn multiply(a: $a, b: $b) -> Complex<$t> {
                a.to_complex() * b.to_complex()
            }
            fn spectrum_product(
                a: ArrayViewD<'_, $a>,
                b: ArrayViewD<'_, $b>,
                axes: &[usize],
                fshape: &[usize],
                window: &[(usize, usize)],
                options: &FftOptions,
            ) -> Result<ArrayD<Complex<$t>>> {
                check_arguments(a.shape(), b.shape(), axes, fshape, window)?;
                let o = options.clone().axes(axes).s(fshape);
                let product =
                    multiply_spectra(fft::fftn_with(&a, &o)?, &fft::fftn_with(&b, &o)?, &o)?;
                cut(fft::ifftn_with(&product, &o)?, window)
            }
        }
    };
}

real_pair!(f32);
real_pair!(f64);
complex_pair!(f32, Complex<f32>, f32);
complex_pair!(Complex<f32>, f32, f32);
complex_pair!(Complex<f32>, Complex<f32>, f32);
complex_pair!(f64, Complex<f64>, f64);
complex_pair!(Complex<f64>, f64, f64);
complex_pair!(Complex<f64>, Complex<f64>, f64);
