//! Convolution with SciPy's semantics (`scipy.signal.fftconvolve`, `oaconvolve`, `convolve`),
//! on `ndarray` arrays and views of any dimension and strides, through [`crate::fft`].
//!
//! - True convolution (the kernel flipped), of inputs of the same dimensionality.
//! - [`Mode::Full`] gives `n1 + n2 - 1` points per convolved axis; [`Mode::Same`] the part
//!   centred on `in1`, of its shape; [`Mode::Valid`] the points that need no zero padding,
//!   `|n1 - n2| + 1` (the inputs are swapped when `in2` is at least as large on every axis,
//!   and neither dominating is an error).
//! - With `axes`, the other axes are not convolved: there the lengths must be equal or 1, and
//!   broadcast. Axes where either length is 1 are a plain product.
//! - Empty inputs give an empty result (every length 0); 0-d inputs their product.
//! - Real inputs go through real transforms; `f32` stays `f32`; a complex input makes the
//!   result complex ([`ConvElement`] gives the types: `f32` with `Complex<f32>` gives
//!   `Complex<f32>`). Transform lengths are padded to [`next_fast_len`]
//!   (its real variant for real results).
//! - For real inputs the transforms along the first convolved axis, the product and the
//!   inverse along that axis run together on blocks of lanes in cache, and only the kept
//!   window is transformed back into the result: one pass over the spectra rather than five,
//!   and no padded result to crop.
//!
//! [`device`] has every function here on device arrays, with the same rules, through cuFFT, a
//! `#[vectorize(target = "cuda")]` spectrum product and kernels for the direct sum and the
//! overlap-add.
//!
//! The short forms take the defaults (all axes, [`Method::Fft`] for the `fft` functions,
//! `Target::Parallel`); [`convolve_with`] takes [`ConvOptions`], a builder like
//! [`FftOptions`].
//!
//! ```
//! use ndarray::{array, Array2};
//! use ufunc_runtime::signal::{fftconvolve, fftconvolve_axes, convolve, Method, Mode};
//! # fn main() -> Result<(), ufunc_runtime::Error> {
//! let x = array![1.0f64, 2.0, 3.0];
//! let full = fftconvolve(&x, &array![0.0, 1.0, 0.5], Mode::Full)?;
//! let want = [0.0, 1.0, 2.5, 4.0, 1.5];
//! assert!(full.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-12));
//! assert_eq!(fftconvolve(&x, &array![0.0, 1.0, 0.5], Mode::Same)?.len(), 3);
//! // Each row of a batch with one kernel, along axis 1 (axis 0 broadcasts).
//! let batch = Array2::<f32>::ones((4, 100));
//! let kernel = Array2::<f32>::ones((1, 5));
//! assert_eq!(fftconvolve_axes(&batch, &kernel, Mode::Valid, &[1])?.shape(), &[4, 96]);
//! let direct = convolve(&x, &array![0.0, 1.0, 0.5], Mode::Full, Method::Direct)?;
//! assert!(direct.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-12));
//! # Ok(())
//! # }
//! ```

pub mod device;
mod direct;
mod element;
mod overlap_add;
mod shapes;

pub use direct::choose_conv_method;
pub use element::ConvElement;

use crate::error::{Error, Result};
use crate::fft::{next_fast_len, next_fast_len_real, FftElement, FftOptions};
use crate::shape::Shape;
use crate::Target;
use ndarray::{Array, ArrayBase, ArrayD, Data, Dimension, IxDyn};
use shapes::{conv_shapes, inputs_swap_needed, ConvShapes};

/// Which part of the full convolution to return (SciPy's `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// All of it: `n1 + n2 - 1` points per convolved axis.
    Full,
    /// The part centred on `in1`, of `in1`'s shape.
    Same,
    /// The points computed without zero padding: `|n1 - n2| + 1` per convolved axis.
    Valid,
}

/// How to compute a convolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Method {
    /// Whichever SciPy's `choose_conv_method` predicts is faster: direct or FFT, with SciPy
    /// `convolve`'s shape rules (in `valid` mode one input at least as large on every axis).
    #[default]
    Auto,
    /// The sum of products, one kernel point at a time, with SciPy `convolve`'s shape rules.
    Direct,
    /// One FFT of the whole inputs ([`fftconvolve`]).
    Fft,
    /// Overlap-add: FFTs of blocks of the larger input ([`oaconvolve`]).
    OverlapAdd,
}

/// The options of [`convolve_with`]: the mode, and a builder for the rest.
///
/// ```
/// use ufunc_runtime::signal::{ConvOptions, Method, Mode};
/// use ufunc_runtime::Target;
/// let o = ConvOptions::new(Mode::Same).method(Method::Fft).axes(&[1]).target(Target::Cpu);
/// # let _ = o;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConvOptions {
    mode: Mode,
    method: Method,
    axes: Option<Shape>,
    target: Target,
    /// SciPy's `convolve` whatever the method ([`convolve`]): `valid` wants one input at
    /// least as large as the other on every axis.
    whole_shapes: bool,
}

impl ConvOptions {
    /// `mode`, over all axes, [`Method::Auto`], on `Target::Parallel`.
    pub fn new(mode: Mode) -> Self {
        ConvOptions {
            mode,
            method: Method::Auto,
            axes: None,
            target: Target::Parallel,
            whole_shapes: false,
        }
    }

    /// SciPy's `convolve` rule for `valid` with every method ([`convolve`]'s options).
    pub(crate) fn scipy_convolve_rule(mut self) -> Self {
        self.whole_shapes = true;
        self
    }

    /// How to compute it.
    pub fn method(mut self, method: Method) -> Self {
        self.method = method;
        self
    }

    /// Convolve along these axes only; the others broadcast (equal lengths, or 1).
    pub fn axes(mut self, axes: &[usize]) -> Self {
        self.axes = Some(Shape::from_slice(axes));
        self
    }

    /// `Target::Cpu` (the calling thread) or `Target::Parallel` (the default).
    pub fn target(mut self, target: Target) -> Self {
        self.target = target;
        self
    }

    /// The shapes of the convolution ([`conv_shapes`]). Without axes, [`Method::Auto`] and
    /// [`Method::Direct`] (and every method through [`convolve`]) are SciPy's `convolve`, whose
    /// `valid` mode wants one input at least as large as the other on every axis, length-1
    /// axes included (`fftconvolve` and `oaconvolve` leave those out, as [`Method::Fft`] and
    /// [`Method::OverlapAdd`] do through [`convolve_with`]).
    pub(crate) fn shapes(&self, s1: &[usize], s2: &[usize], empty: bool) -> Result<ConvShapes> {
        let shapes = conv_shapes(self.mode, s1, s2, self.axes.as_deref(), empty)?;
        let scipy_convolve =
            self.whole_shapes || matches!(self.method, Method::Auto | Method::Direct);
        if self.axes.is_none() && scipy_convolve && !empty {
            let every: Vec<usize> = (0..s1.len()).collect();
            inputs_swap_needed(self.mode, s1, s2, &every)?;
        }
        Ok(shapes)
    }

    fn fft_options(&self) -> FftOptions {
        FftOptions::new().target(self.target)
    }

    /// How inputs of shapes `s1` and `s2` (swapped in `valid` where `swap`) convolved along
    /// `axes` are computed, on the host or the device alike: the method asked for, or SciPy's
    /// choice for `Auto`.
    pub(crate) fn computation(
        &self,
        s1: &[usize],
        s2: &[usize],
        axes: &[usize],
        swap: bool,
    ) -> Computation {
        if axes.is_empty() {
            return Computation::Product;
        }
        let (m1, m2) = if swap { (s2, s1) } else { (s1, s2) };
        let method = match self.method {
            Method::Auto => choose_conv_method(m1, m2, self.mode),
            m => m,
        };
        match method {
            Method::Direct => Computation::Direct,
            // One block per axis: overlap-add is the plain FFT convolution (as in SciPy).
            Method::OverlapAdd if overlap_add::cuts_blocks(s1, s2, axes) => Computation::OverlapAdd,
            _ => Computation::Fft,
        }
    }
}

/// How a convolution is computed (see [`ConvOptions::computation`]).
pub(crate) enum Computation {
    /// No axis is convolved: a broadcast product.
    Product,
    Direct,
    OverlapAdd,
    Fft,
}

/// The convolution of `in1` and `in2` by FFT (SciPy's `fftconvolve(in1, in2, mode)`).
pub fn fftconvolve<A, B, S1, S2, D>(
    in1: &ArrayBase<S1, D>,
    in2: &ArrayBase<S2, D>,
    mode: Mode,
) -> Result<Array<A::Output, D>>
where
    A: ConvElement<B>,
    B: FftElement<Real = A::Real>,
    S1: Data<Elem = A>,
    S2: Data<Elem = B>,
    D: Dimension,
{
    convolve_with(in1, in2, &ConvOptions::new(mode).method(Method::Fft))
}

/// [`fftconvolve`] along `axes` only (SciPy's `axes`): the other axes must be equal or 1.
pub fn fftconvolve_axes<A, B, S1, S2, D>(
    in1: &ArrayBase<S1, D>,
    in2: &ArrayBase<S2, D>,
    mode: Mode,
    axes: &[usize],
) -> Result<Array<A::Output, D>>
where
    A: ConvElement<B>,
    B: FftElement<Real = A::Real>,
    S1: Data<Elem = A>,
    S2: Data<Elem = B>,
    D: Dimension,
{
    convolve_with(
        in1,
        in2,
        &ConvOptions::new(mode).method(Method::Fft).axes(axes),
    )
}

/// The convolution by overlap-add (SciPy's `oaconvolve`): the same result as
/// [`fftconvolve`], faster when one input is much larger than the other.
pub fn oaconvolve<A, B, S1, S2, D>(
    in1: &ArrayBase<S1, D>,
    in2: &ArrayBase<S2, D>,
    mode: Mode,
) -> Result<Array<A::Output, D>>
where
    A: ConvElement<B>,
    B: FftElement<Real = A::Real>,
    S1: Data<Elem = A>,
    S2: Data<Elem = B>,
    D: Dimension,
{
    convolve_with(in1, in2, &ConvOptions::new(mode).method(Method::OverlapAdd))
}

/// The convolution by `method` (SciPy's `convolve(in1, in2, mode, method)`; `Auto` chooses
/// as SciPy's `choose_conv_method` does). As SciPy's `convolve`, `valid` wants one input at
/// least as large as the other on every axis, with every method (where [`fftconvolve`] and
/// [`oaconvolve`] leave out the axes on which either input has length 1).
pub fn convolve<A, B, S1, S2, D>(
    in1: &ArrayBase<S1, D>,
    in2: &ArrayBase<S2, D>,
    mode: Mode,
    method: Method,
) -> Result<Array<A::Output, D>>
where
    A: ConvElement<B>,
    B: FftElement<Real = A::Real>,
    S1: Data<Elem = A>,
    S2: Data<Elem = B>,
    D: Dimension,
{
    convolve_with(
        in1,
        in2,
        &ConvOptions::new(mode).method(method).scipy_convolve_rule(),
    )
}

/// The convolution with every option: [`Method::Auto`] and [`Method::Direct`] are SciPy's
/// `convolve`, [`Method::Fft`] its `fftconvolve` and [`Method::OverlapAdd`] its `oaconvolve`
/// (which differ in `valid` mode: see [`convolve`]).
pub fn convolve_with<A, B, S1, S2, D>(
    in1: &ArrayBase<S1, D>,
    in2: &ArrayBase<S2, D>,
    options: &ConvOptions,
) -> Result<Array<A::Output, D>>
where
    A: ConvElement<B>,
    B: FftElement<Real = A::Real>,
    S1: Data<Elem = A>,
    S2: Data<Elem = B>,
    D: Dimension,
{
    let (s1, s2) = (in1.shape(), in2.shape());
    let (a, b) = (in1.view().into_dyn(), in2.view().into_dyn());
    let empty = in1.is_empty() || in2.is_empty();
    let result = match options.shapes(s1, s2, empty)? {
        ConvShapes::Scalar => ArrayD::from_elem(IxDyn(&[]), A::multiply(a[[]], b[[]])),
        ConvShapes::Empty(ndim) => ArrayD::from_shape_vec(IxDyn(&vec![0; ndim]), Vec::new())
            .map_err(|_| Error::TooLarge { shape: s1.to_vec() })?,
        ConvShapes::Conv {
            axes,
            swap,
            full,
            window,
        } => {
            match options.computation(s1, s2, &axes, swap) {
                // Nothing convolved: the direct sum is the broadcast product.
                Computation::Product | Computation::Direct => direct::direct(a, b, &axes, &window)?,
                Computation::OverlapAdd => element::cut(
                    overlap_add::overlap_add(a, b, &axes, &full, options)?,
                    &window,
                )?,
                Computation::Fft => {
                    let fshape = fast_shape::<A::Output>(&full, &axes)?;
                    A::spectrum_product(a, b, &axes, &fshape, &window, &options.fft_options())?
                }
            }
        }
    };
    result
        .into_dimensionality::<D>()
        .map_err(|_| Error::InvalidArgument {
            name: "in1",
            message: "the result has another dimensionality than the inputs".into(),
        })
}

/// The fast transform lengths of the convolved axes of `full`.
pub(crate) fn fast_shape<O: FftElement>(full: &[usize], axes: &[usize]) -> Result<Vec<usize>> {
    axes.iter()
        .map(|&a| {
            let n = full[a];
            let fast = if O::COMPLEX {
                next_fast_len(n)
            } else {
                next_fast_len_real(n)
            };
            fast.ok_or_else(|| Error::TooLarge {
                shape: full.to_vec(),
            })
        })
        .collect()
}
