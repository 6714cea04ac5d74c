//! [`FftPlan`]: a transform resolved for one input shape, with its 1-D transforms planned and
//! its scratch kept, executed as often as wanted. The plain functions build one per call from
//! the process-wide cache; callers who transform many arrays of one shape hold their own.

use super::options::{plan_recipe, DefaultAxes, FftOptions, PassKind, Recipe, Transform};
use super::pass::{self, Lanes, Op, Workspace};
use super::{FftElement, FftReal};
use crate::error::{Error, Result};
use crate::parallel::Threads;
use crate::shape::{byte_strides, c_strides, walk_rows, Shape, Strides};
use ndarray::{Array, ArrayBase, Data, DataMut, Dimension};
use num_complex::Complex;
use std::marker::PhantomData;
use std::sync::Mutex;

/// A transform of arrays of one shape, from elements `I` to elements `O`: the axes, lengths
/// and normalisation resolved, the 1-D transforms planned, scratch kept between calls. A
/// second `execute` of the same plan allocates only its output; `execute_into` and
/// `execute_inplace` allocate nothing.
///
/// | constructor | `I` | `O` |
/// | --- | --- | --- |
/// | [`FftPlan::fftn`], [`FftPlan::ifftn`] | `f32`, `f64`, `Complex<f32>`, `Complex<f64>` | `Complex` of the same float |
/// | [`FftPlan::rfftn`] | `f32`, `f64` | `Complex` of it |
/// | [`FftPlan::irfftn`] | `Complex<f32>`, `Complex<f64>` | its float |
///
/// The options are those of [`fftn_with`](super::fftn_with) and friends: axes default to all.
///
/// ```
/// use ndarray::Array2;
/// use num_complex::Complex;
/// use ufunc_runtime::fft::{self, FftOptions, FftPlan};
/// # fn main() -> Result<(), ufunc_runtime::Error> {
/// let image = Array2::from_shape_fn((64, 48), |(y, x)| (y * x % 7) as f32);
/// let forward = FftPlan::rfftn(&[64, 48], &FftOptions::new())?;
/// let inverse = FftPlan::irfftn(&[64, 25], &FftOptions::new().s(&[64, 48]))?;
/// let mut spectrum = Array2::<Complex<f32>>::zeros((64, 25));
/// let mut back = Array2::<f32>::zeros((64, 48));
/// for _ in 0..3 {
///     forward.execute_into(&image, &mut spectrum)?;     // no allocation
///     inverse.execute_into(&spectrum, &mut back)?;
/// }
/// assert!(back.iter().zip(&image).all(|(a, b)| (a - b).abs() < 1e-4));
/// assert_eq!(fft::rfft2(&image)?, forward.execute(&image)?);
/// # Ok(())
/// # }
/// ```
pub struct FftPlan<I: FftElement, O: FftElement<Real = I::Real>> {
    recipe: Recipe,
    /// The shape and C-order strides after each pass.
    shapes: Vec<(Shape, Strides)>,
    ops: Vec<Op<I::Real>>,
    threads: Threads,
    workspace: Workspace<I::Real>,
    /// The intermediate arrays where a pass changes the shape and cannot write the output.
    temps: Mutex<[Vec<Complex<I::Real>>; 2]>,
    _types: PhantomData<fn(I) -> O>,
}

impl<I: FftElement, O: FftElement<Real = I::Real>> std::fmt::Debug for FftPlan<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FftPlan")
            .field("input", &self.recipe.input.as_slice())
            .field("output", &self.recipe.output.as_slice())
            .field("passes", &self.recipe.passes)
            .finish()
    }
}

impl<I: FftElement> FftPlan<I, Complex<I::Real>> {
    /// The complex forward transform of arrays of `shape` (NumPy's `fftn`).
    pub fn fftn(shape: &[usize], options: &FftOptions) -> Result<Self> {
        Self::build(shape, Transform::Forward, options, DefaultAxes::All)
    }

    /// The complex inverse transform of arrays of `shape` (NumPy's `ifftn`).
    pub fn ifftn(shape: &[usize], options: &FftOptions) -> Result<Self> {
        Self::build(shape, Transform::Inverse, options, DefaultAxes::All)
    }
}

impl<T: FftReal> FftPlan<T, Complex<T>> {
    /// The real forward transform of arrays of `shape` (NumPy's `rfftn`): the half spectrum
    /// along the last of the axes.
    pub fn rfftn(shape: &[usize], options: &FftOptions) -> Result<Self> {
        Self::build(shape, Transform::RealForward, options, DefaultAxes::All)
    }
}

impl<T: FftReal> FftPlan<Complex<T>, T> {
    /// The inverse of [`FftPlan::rfftn`] for half spectra of `shape` (NumPy's `irfftn`);
    /// without `s`, the last axis gives `2 (m - 1)` points.
    pub fn irfftn(shape: &[usize], options: &FftOptions) -> Result<Self> {
        Self::build(shape, Transform::RealInverse, options, DefaultAxes::All)
    }
}

impl<T: FftReal> FftPlan<Complex<T>, Complex<T>> {
    /// Transforms `a` in place. The plan must keep the shape (no `s` that crops or pads).
    pub fn execute_inplace<S, D>(&self, a: &mut ArrayBase<S, D>) -> Result<()>
    where
        S: DataMut<Elem = Complex<T>>,
        D: Dimension,
    {
        self.check("input", a.shape(), &self.recipe.input)?;
        if self.recipe.input != self.recipe.output {
            return Err(Error::ShapeMismatch {
                context: "FftPlan::execute_inplace",
                names: ["the plan's input", "its output"],
                shapes: [self.recipe.input.to_vec(), self.recipe.output.to_vec()],
            });
        }
        let strides = Strides::from_slice(a.strides());
        let ptr = a.as_mut_ptr();
        let shape = self.recipe.input.clone();
        let src = Lanes {
            ptr: ptr as *const Complex<T>,
            shape: &shape,
            strides: &strides,
        };
        let dst = Lanes {
            ptr,
            shape: &shape,
            strides: &strides,
        };
        // SAFETY: `a` is a valid, writable array of the plan's shape with distinct elements.
        unsafe { self.run(src, dst, true) };
        Ok(())
    }
}

impl<I: FftElement, O: FftElement<Real = I::Real>> FftPlan<I, O> {
    pub(crate) fn build(
        shape: &[usize],
        transform: Transform,
        options: &FftOptions,
        defaults: DefaultAxes,
    ) -> Result<Self> {
        let threads = options.threads()?;
        let recipe = plan_recipe(shape, transform, options, defaults)?;
        crate::shape::byte_size(&recipe.output, size_of::<O>())?;
        let shapes = (1..=recipe.passes.len())
            .map(|k| {
                let s = recipe.shape_after(k);
                let strides = c_strides(&s);
                (s, strides)
            })
            .collect();
        let ops = recipe.passes.iter().map(Op::plan).collect::<Result<_>>()?;
        Ok(FftPlan {
            recipe,
            shapes,
            ops,
            threads,
            workspace: Workspace::new(),
            temps: Mutex::new([Vec::new(), Vec::new()]),
            _types: PhantomData,
        })
    }

    /// The shape of the arrays the plan takes.
    pub fn input_shape(&self) -> &[usize] {
        &self.recipe.input
    }

    /// The shape of the arrays it gives.
    pub fn output_shape(&self) -> &[usize] {
        &self.recipe.output
    }

    /// The transform of `input` (any strides) in a new standard-layout array of the same
    /// dimension type.
    pub fn execute<S, D>(&self, input: &ArrayBase<S, D>) -> Result<Array<O, D>>
    where
        S: Data<Elem = I>,
        D: Dimension,
    {
        self.check("input", input.shape(), &self.recipe.input)?;
        let mut dim = input.raw_dim();
        for (i, &n) in self.recipe.output.iter().enumerate() {
            dim[i] = n;
        }
        let mut out = crate::alloc::try_uninit::<O, D>(&dim)?;
        let strides = Strides::from_slice(out.strides());
        let dst = Lanes {
            ptr: out.as_mut_ptr() as *mut O,
            shape: &self.recipe.output,
            strides: &strides,
        };
        let in_strides = Strides::from_slice(input.strides());
        let src = Lanes {
            ptr: input.as_ptr(),
            shape: &self.recipe.input,
            strides: &in_strides,
        };
        // SAFETY: `input` is valid for reads at its shape and strides; `out` is a fresh array
        // of the output shape, every element of which the last pass writes.
        unsafe {
            self.run(src, dst, false);
            Ok(out.assume_init())
        }
    }

    /// The transform of `input` written into `out` (any strides, the plan's output shape).
    pub fn execute_into<S, SO, D, DO>(
        &self,
        input: &ArrayBase<S, D>,
        out: &mut ArrayBase<SO, DO>,
    ) -> Result<()>
    where
        S: Data<Elem = I>,
        SO: DataMut<Elem = O>,
        D: Dimension,
        DO: Dimension,
    {
        self.check("input", input.shape(), &self.recipe.input)?;
        self.check("out", out.shape(), &self.recipe.output)?;
        let (in_strides, out_strides) = (
            Strides::from_slice(input.strides()),
            Strides::from_slice(out.strides()),
        );
        let src = Lanes {
            ptr: input.as_ptr(),
            shape: &self.recipe.input,
            strides: &in_strides,
        };
        let dst = Lanes {
            ptr: out.as_mut_ptr(),
            shape: &self.recipe.output,
            strides: &out_strides,
        };
        // SAFETY: both arrays are valid at their shapes and strides; `out` is borrowed
        // mutably, so it is disjoint from `input`.
        unsafe { self.run(src, dst, false) };
        Ok(())
    }

    fn check(&self, name: &'static str, found: &[usize], expected: &[usize]) -> Result<()> {
        if found == expected {
            return Ok(());
        }
        Err(Error::ShapeMismatch {
            context: "FftPlan",
            names: [name, "the plan's"],
            shapes: [found.to_vec(), expected.to_vec()],
        })
    }

    /// Runs the passes from `input` to `out`, through the temporaries where a pass must not
    /// write the output.
    ///
    /// # Safety
    /// `input` and `out` are valid arrays of the plan's input and output shapes, `out`
    /// writable with distinct elements, disjoint from `input` unless `in_place` (then they are
    /// the same array).
    unsafe fn run(&self, input: Lanes<'_, *const I>, out: Lanes<'_, *mut O>, in_place: bool) {
        if self.ops.is_empty() {
            // SAFETY: the caller's contract; a plan without passes keeps the shape.
            return unsafe { copy_as_complex(input, out) };
        }
        let mut local = [Vec::new(), Vec::new()];
        let mut guard = self.temps.try_lock();
        let temps = match guard.as_deref_mut() {
            Ok(t) => t,
            Err(_) => &mut local,
        };
        let last = self.ops.len() - 1;
        let mut src = Loc::Input;
        for (i, (op, pass)) in self.ops.iter().zip(&self.recipe.passes).enumerate() {
            let (shape, strides) = &self.shapes[i];
            let dst = if i == last || (O::COMPLEX && *shape == self.recipe.output) {
                Loc::Out
            } else {
                match src {
                    Loc::Temp(j) if pass.len_in == pass.len_out => Loc::Temp(j),
                    Loc::Temp(j) => Loc::Temp(1 - j),
                    _ => Loc::Temp(0),
                }
            };
            if let Loc::Temp(j) = dst {
                crate::alloc::grow_zeroed(&mut temps[j], shape.iter().product());
            }
            let temp_ptrs = [temps[0].as_mut_ptr(), temps[1].as_mut_ptr()];
            let same = src == dst || (in_place && src == Loc::Input && dst == Loc::Out);
            let src_shape = if i == 0 {
                &self.recipe.input
            } else {
                &self.shapes[i - 1].0
            };
            let src_strides = if i == 0 {
                input.strides
            } else {
                &self.shapes[i - 1].1
            };
            let complex_at = |loc: Loc, shape, strides| -> Lanes<'_, *mut Complex<I::Real>> {
                let ptr = match loc {
                    Loc::Temp(j) => temp_ptrs[j],
                    Loc::Out => complex_ptr::<O>(out.ptr),
                    Loc::Input => complex_ptr::<I>(input.ptr as *mut I),
                };
                Lanes {
                    ptr,
                    shape,
                    strides,
                }
            };
            // Complex passes write complex elements: the output (for complex plans) or a
            // temporary.
            let dst_lanes = || match dst {
                Loc::Out => complex_at(dst, out.shape, out.strides),
                _ => complex_at(dst, shape, strides),
            };
            let src_strides = match src {
                Loc::Out => out.strides,
                _ => src_strides,
            };
            let (threads, ws) = (self.threads, &self.workspace);
            // SAFETY: each location is a valid array of the shape the recipe gives it after
            // the previous pass; the output and temporaries are written only by this call.
            unsafe {
                match (op, src) {
                    (Op::Complex(f), Loc::Input) => {
                        let s = Lanes {
                            ptr: input.ptr,
                            shape: src_shape,
                            strides: src_strides,
                        };
                        pass::complex(&**f, pass, s, dst_lanes(), same, threads, ws)
                    }
                    (Op::Complex(f), _) => {
                        let s = complex_at(src, src_shape, src_strides);
                        let s = Lanes {
                            ptr: s.ptr as *const _,
                            shape: s.shape,
                            strides: s.strides,
                        };
                        pass::complex(&**f, pass, s, dst_lanes(), same, threads, ws)
                    }
                    (Op::RealForward(f), _) => {
                        let ptr = real_ptr::<I>(input.ptr as *mut I);
                        let s = Lanes {
                            ptr: ptr as *const _,
                            shape: src_shape,
                            strides: src_strides,
                        };
                        // Only the last pass's output goes unread after it.
                        let stream = i == last;
                        pass::real_forward(&**f, pass, s, dst_lanes(), stream, threads, ws)
                    }
                    (Op::RealInverse(f), loc) => {
                        let d = Lanes {
                            ptr: real_ptr::<O>(out.ptr),
                            shape: out.shape,
                            strides: out.strides,
                        };
                        if loc == Loc::Input {
                            let s = Lanes {
                                ptr: input.ptr,
                                shape: src_shape,
                                strides: src_strides,
                            };
                            pass::real_inverse(&**f, pass, s, d, threads, ws)
                        } else {
                            let s = complex_at(src, src_shape, src_strides);
                            let s = Lanes {
                                ptr: s.ptr as *const _,
                                shape: s.shape,
                                strides: s.strides,
                            };
                            pass::real_inverse(&**f, pass, s, d, threads, ws)
                        }
                    }
                }
            }
            debug_assert!(pass.kind != PassKind::RealForward || i == 0);
            src = dst;
        }
    }
}

/// The transform over no axes (NumPy's `fftn(a, axes=())`, or of a 0-d array): `input` as
/// complex numbers, into `out` of the same shape.
///
/// # Safety
/// `input` and `out` are valid arrays of one shape, `out` of complex elements, writable with
/// distinct elements, disjoint from `input` or the same array.
unsafe fn copy_as_complex<I: FftElement, O: FftElement<Real = I::Real>>(
    input: Lanes<'_, *const I>,
    out: Lanes<'_, *mut O>,
) {
    let to = complex_ptr::<O>(out.ptr);
    let strides = [
        byte_strides(input.strides, size_of::<I>()),
        byte_strides(out.strides, size_of::<O>()),
    ];
    let inner = strides.each_ref().map(|s| s.last().copied().unwrap_or(0));
    let bases = [input.ptr as *mut u8, to as *mut u8];
    let count = input.shape.iter().product();
    walk_rows(input.shape, &strides, &bases, 0..count, |ptrs, j, len| {
        for k in j as isize..(j + len) as isize {
            // SAFETY: element `k` of a row of both arrays, per the contract.
            unsafe {
                let from = ptrs[0].wrapping_offset(k * inner[0]) as *const I;
                let to = ptrs[1].wrapping_offset(k * inner[1]) as *mut Complex<I::Real>;
                *to = (*from).to_complex();
            }
        }
    });
}

/// Where a pass reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loc {
    Input,
    Out,
    Temp(usize),
}

/// `p` as complex elements: the plan's constructors only make complex passes read or write
/// arrays whose elements are complex there.
fn complex_ptr<E: FftElement>(p: *mut E) -> *mut Complex<E::Real> {
    match E::complex_ptr(p) {
        Some(p) => p,
        None => unreachable!("a complex pass on a real array"),
    }
}

/// `p` as real elements, likewise.
fn real_ptr<E: FftElement>(p: *mut E) -> *mut E::Real {
    match E::real_ptr(p) {
        Some(p) => p,
        None => unreachable!("a real pass on a complex array"),
    }
}
