//! The ufunc methods of a `#[vectorize]` function `f(T, T) -> T`: `reduce`, `accumulate`,
//! `outer` and `at`, with NumPy's semantics (axis order, negative axes, repeated axes an error,
//! result shapes; any strides and broadcast views as input).
//!
//! `reduce` of a *reorderable* function (declared `associative = true`, or given an identity, as
//! NumPy reads `add` and `multiply`) regroups it: a contiguous run is reduced with several
//! accumulators and a tree, and blocks of 2048 elements are combined pairwise, which gives float
//! addition NumPy's accuracy (error growing as `log2(n)`, not `n`); a run of 64 blocks or more is
//! read as four parts side by side (more of the memory busy at once), each reduced so, their
//! totals combined pairwise, and the rows of an inner reduction four at a time (each the same as
//! alone). Any other function (subtraction, say) is folded strictly in order along its one
//! reduced axis, as NumPy does: reducing more than one axis of it is an error, as in NumPy.
//! `accumulate` applies `f` strictly in order, as NumPy does (so that
//! recurrences work), unless the function is declared `associative = true` (which promises
//! commutativity too): then contiguous runs are scanned in blocks of independent chains (runs
//! streamed from memory to memory, of 4- or 8-byte elements on x86-64, a vector at a time) and long
//! ones split over the threads, their pieces' totals reduced as `reduce` does (exact for integers,
//! `min`, `max`; float results depend on the target, on whether the output is streamed and, for
//! runs split over threads, on the thread count, deterministically). The identity (`identity = ...`
//! on the attribute) is the result of reducing no elements; a non-empty reduction starts from its
//! first element, so `add.reduce([-0.0])` is `-0.0` as in NumPy.

mod at;
mod engine;
mod kernels;

use crate::body::Body;
use crate::call::{route, Route};
use crate::cuda::{self, DeviceKernel};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::operand::{Operand, OutOperand, RawOperand, RawOutOperand};
use crate::panic::catching_panics;
use crate::shape::{byte_size, byte_strides, c_strides, walk_rows};
use crate::target::Target;
pub use at::{at, AtEntry, AtIndices, IndexInt, IndexList};
pub(crate) use at::{at_points, AtPoints};
pub(crate) use engine::{split_axes, Axis};
use engine::{AxisSpec, Job};
use ndarray::{Array, ArrayD, Dimension, IxDyn};

mod sealed {
    pub trait Sealed {}
}

/// The bound of the `reduce`, `accumulate`, `outer` and `at` that a `#[vectorize]` function
/// which is not `f(T, T) -> T` gets in their place: implemented by nothing, so that a call is a
/// compile error that says why.
#[diagnostic::on_unimplemented(
    message = "`{F}` has no `reduce`, `accumulate`, `outer` or `at`",
    label = "called here",
    note = "the ufunc methods need a #[vectorize] function of two inputs and one output of \
            one type, `fn(T, T) -> T`"
)]
pub trait MethodsNeedBinaryOp<F>: sealed::Sealed {
    /// Never called: nothing implements the trait.
    fn unreachable() -> !;
}

/// The axes a reduction runs over: all of them, a list, or one axis given alone (negative
/// counting from the end).
///
/// Built from one axis (`0`, `-1`, `1usize`), a list (`[0, 2]`, `&[-1, 0][..]`, a `Vec`), or
/// [`Axes::All`].
///
/// ```
/// use ufunc_runtime::Axes;
/// assert_eq!(Axes::from(-1), Axes::Axis(-1));
/// assert_eq!(Axes::from([0usize, 2]), Axes::List(vec![0, 2]));
/// assert_eq!(Axes::from(&[1i64][..]), Axes::List(vec![1]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Axes {
    /// Every axis: the result is 0-d (or all ones with keepdims).
    All,
    /// These axes, in any order, each at most once; an empty list reduces nothing.
    List(Vec<isize>),
    /// One axis given alone (NumPy's `axis=k`): `List(vec![k])`, except that a 0-d array takes
    /// `0` and `-1` and reduces nothing, NumPy's legacy rule for scalars (`[0]` stays an error).
    Axis(isize),
}

macro_rules! axes_from {
    ($($t:ty),*) => {$(
        impl From<$t> for Axes {
            fn from(axis: $t) -> Axes {
                Axes::Axis(saturate(axis))
            }
        }
        impl From<&[$t]> for Axes {
            fn from(axes: &[$t]) -> Axes {
                Axes::List(axes.iter().map(|&a| saturate(a)).collect())
            }
        }
        impl<const N: usize> From<[$t; N]> for Axes {
            fn from(axes: [$t; N]) -> Axes {
                Axes::from(&axes[..])
            }
        }
        impl From<Vec<$t>> for Axes {
            fn from(axes: Vec<$t>) -> Axes {
                Axes::from(&axes[..])
            }
        }
    )*};
}

/// `axis` as an `isize`; one too large for it stays out of range (`isize::MAX`) rather than
/// wrapping to a negative axis.
fn saturate<A: TryInto<isize>>(axis: A) -> isize {
    axis.try_into().unwrap_or(isize::MAX)
}

axes_from!(i32, i64, isize, usize);

/// `axis` counted from the end where negative, or `Error::MethodAxis`.
pub(crate) fn normalize(
    function: &'static str,
    method: &'static str,
    axis: isize,
    ndim: usize,
) -> Result<usize> {
    let a = if axis < 0 { axis + ndim as isize } else { axis };
    if a < 0 || a >= ndim as isize {
        return Err(Error::MethodAxis {
            function,
            method,
            axis,
            ndim,
        });
    }
    Ok(a as usize)
}

/// Whether `reduce` may regroup `f` (NumPy's *reorderable*): declared `associative = true`, or
/// given an identity (NumPy reads a ufunc with an identity as reorderable). Otherwise each
/// result folds its elements strictly in order, and at most one axis may be reduced.
pub(crate) fn reorderable<B: Body<In = (T, T), Out = T>, T: Element>() -> bool {
    B::ASSOCIATIVE || B::IDENTITY.is_some()
}

/// Which axes of an array of `ndim` dimensions `axes` reduces: each in range and at most
/// once, and only one (of two or more dimensions) where `B` is not [`reorderable`].
pub(crate) fn reduced_axes<B: Body<In = (T, T), Out = T>, T: Element>(
    axes: &Axes,
    ndim: usize,
) -> Result<Vec<bool>> {
    let function = B::NAME;
    let mut reduced = vec![false; ndim];
    match axes {
        Axes::All => reduced.fill(true),
        Axes::Axis(0 | -1) if ndim == 0 => {}
        &Axes::Axis(axis) => reduced[normalize(function, "reduce", axis, ndim)?] = true,
        Axes::List(list) => {
            // Every axis in range first, then none twice, as NumPy checks them.
            let axes: Vec<usize> = list
                .iter()
                .map(|&axis| normalize(function, "reduce", axis, ndim))
                .collect::<Result<_>>()?;
            for a in axes {
                if std::mem::replace(&mut reduced[a], true) {
                    return Err(Error::MethodRepeatedAxis {
                        function,
                        axes: list.clone(),
                    });
                }
            }
        }
    }
    if !reorderable::<B, T>() && reduced.iter().filter(|&&r| r).count() > 1 {
        return Err(Error::NotReorderable {
            function,
            axes: (0..ndim).filter(|&i| reduced[i]).collect(),
        });
    }
    Ok(reduced)
}

/// The one rule for empty reductions: `None` where no axis of `shape` that `reduced` marks is
/// empty, else `B`'s identity, or `Error::EmptyReduction` naming the axis where it has none.
pub(crate) fn empty_reduction<B: Body<In = (T, T), Out = T>, T: Element>(
    shape: &[usize],
    reduced: &[bool],
) -> Result<Option<T>> {
    match (0..reduced.len()).find(|&i| reduced[i] && shape[i] == 0) {
        None => Ok(None),
        Some(axis) => B::IDENTITY.map(Some).ok_or_else(|| Error::EmptyReduction {
            function: B::NAME,
            axis,
            shape: shape.to_vec(),
        }),
    }
}

/// Whether an output of `out_shape` for `function`'s reduction of `shape` over `reduced`
/// keeps the reduced axes (as length 1), or `Error::ReducedShape` where it has neither shape.
pub(crate) fn out_keepdims(
    function: &'static str,
    shape: &[usize],
    reduced: &[bool],
    out_shape: &[usize],
) -> Result<bool> {
    let (plain, kept) = (
        reduced_shape(shape, reduced, false),
        reduced_shape(shape, reduced, true),
    );
    if out_shape == plain.as_slice() {
        Ok(false)
    } else if out_shape == kept.as_slice() {
        Ok(true)
    } else {
        Err(Error::ReducedShape {
            function,
            found: out_shape.to_vec(),
            expected: plain,
            keepdims: kept,
        })
    }
}

/// Reduces `a` over `reduced` into `out` (its strides given for every axis of `a`, 0 along
/// reduced ones).
fn reduce_into<B: Body<In = (T, T), Out = T>, T: Element>(
    route: Route,
    a: RawOperand<'_>,
    reduced: &[bool],
    out_ptr: *mut T,
    out_strides: &[isize],
) -> Result<()> {
    let kept: Vec<usize> = (0..reduced.len()).filter(|&i| !reduced[i]).collect();
    let shape: Vec<usize> = kept.iter().map(|&i| a.shape[i]).collect();
    let threads = match route {
        Route::Cpu(threads) => threads,
        Route::Cuda(kernel) => {
            let strides: Vec<isize> = kept.iter().map(|&i| out_strides[i]).collect();
            return cuda::reduce_host::<B, T>(&kernel, a, reduced, (out_ptr, &shape, &strides));
        }
    };
    let n_out: usize = shape.iter().product();
    // An empty reduced axis needs an identity even for an empty result, as in NumPy.
    let empty = empty_reduction::<B, T>(a.shape, reduced)?;
    if n_out == 0 {
        return Ok(());
    }
    if let Some(identity) = empty {
        let strides = byte_strides(
            &kept.iter().map(|&i| out_strides[i]).collect::<Vec<_>>(),
            size_of::<T>(),
        );
        let inner = *strides.last().unwrap_or(&0);
        walk_rows(
            &shape,
            &[strides],
            &[out_ptr as *mut u8],
            0..n_out,
            |p, j, len| {
                for i in j..j + len {
                    // SAFETY: an element of `out`.
                    unsafe { (p[0].wrapping_offset(i as isize * inner) as *mut T).write(identity) };
                }
            },
        );
        return Ok(());
    }
    let axes: Vec<AxisSpec> = (0..reduced.len())
        .map(|i| (a.shape[i], a.strides[i], out_strides[i], reduced[i]))
        .collect();
    let job = Job::new::<B>(&axes, a.ptr as *const T, out_ptr);
    catching_panics(B::NAME, || job.reduce::<B>(threads))
}

/// The output's strides for every axis of the input: 0 along reduced axes; `out_strides` are
/// those of an output of the kept axes, or of every axis (keepdims).
pub(crate) fn full_strides(reduced: &[bool], out_strides: &[isize], keepdims: bool) -> Vec<isize> {
    let mut kept = out_strides.iter();
    reduced
        .iter()
        .enumerate()
        .map(|(i, &r)| {
            let s = if keepdims {
                out_strides[i]
            } else if r {
                0
            } else {
                *kept.next().expect("one per kept axis")
            };
            if r {
                0
            } else {
                s
            }
        })
        .collect()
}

pub(crate) fn reduced_shape(shape: &[usize], reduced: &[bool], keepdims: bool) -> Vec<usize> {
    shape
        .iter()
        .zip(reduced)
        .filter_map(|(&n, &r)| match (r, keepdims) {
            (false, _) => Some(n),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// `B` reduced over `axes` of `a`: a new array of `a`'s shape without those axes (with them as
/// length 1 where `keepdims`).
pub fn reduce<B, T, A>(
    target: Target,
    compiled: &'static [Target],
    a: A,
    axes: Axes,
    keepdims: bool,
) -> Result<ArrayD<T>>
where
    B: Body<In = (T, T), Out = T> + DeviceKernel,
    T: Element,
    A: Operand<T>,
{
    let route = route(B::NAME, target, compiled, B::CUDA)?;
    let raw = a.raw();
    let reduced = reduced_axes::<B, T>(&axes, raw.shape.len())?;
    let shape = reduced_shape(raw.shape, &reduced, keepdims);
    let mut out = crate::alloc::try_uninit::<T, IxDyn>(&IxDyn(&shape))?;
    let strides = full_strides(&reduced, &c_strides(&shape), keepdims);
    reduce_into::<B, T>(route, raw, &reduced, out.as_mut_ptr() as *mut T, &strides)?;
    // SAFETY: `reduce_into` wrote every element (it returned Ok).
    Ok(unsafe { out.assume_init() })
}

/// `B` reduced over `axes` of `a` into `out`, of the reduced shape with or without the reduced
/// axes kept as length 1, and any strides.
pub fn reduce_out<B, T, A, O>(
    target: Target,
    compiled: &'static [Target],
    a: A,
    axes: Axes,
    mut out: O,
) -> Result<()>
where
    B: Body<In = (T, T), Out = T> + DeviceKernel,
    T: Element,
    A: Operand<T>,
    O: OutOperand<T>,
{
    let route = route(B::NAME, target, compiled, B::CUDA)?;
    let raw = a.raw();
    let reduced = reduced_axes::<B, T>(&axes, raw.shape.len())?;
    let out: RawOutOperand<'_> = out.raw_mut();
    let keepdims = out_keepdims(B::NAME, raw.shape, &reduced, out.shape)?;
    let strides = full_strides(&reduced, out.strides, keepdims);
    reduce_into::<B, T>(route, raw, &reduced, out.ptr as *mut T, &strides)
}

/// The running `B` along `axis` of `a`: a new array of `a`'s shape whose element `i` along
/// the axis is `f` over elements `0..=i`.
pub fn accumulate<B, T, A>(
    target: Target,
    compiled: &'static [Target],
    a: A,
    axis: isize,
) -> Result<Array<T, A::Dim>>
where
    B: Body<In = (T, T), Out = T> + DeviceKernel,
    T: Element,
    A: Operand<T>,
{
    let route = route(B::NAME, target, compiled, B::CUDA)?;
    let raw = a.raw();
    let axis = normalize(B::NAME, "accumulate", axis, raw.shape.len())?;
    let mut dim = A::Dim::zeros(raw.shape.len());
    dim.slice_mut().copy_from_slice(raw.shape);
    let mut out = crate::alloc::try_uninit::<T, A::Dim>(&dim)?;
    let strides = c_strides(raw.shape);
    accumulate_into::<B, T>(route, raw, axis, out.as_mut_ptr() as *mut T, &strides)?;
    // SAFETY: the accumulation wrote every element (or there are none).
    Ok(unsafe { out.assume_init() })
}

/// [`accumulate`] into `out`, of `a`'s shape and any strides (NumPy's `out=`): no allocation.
pub fn accumulate_out<B, T, A, O>(
    target: Target,
    compiled: &'static [Target],
    a: A,
    axis: isize,
    mut out: O,
) -> Result<()>
where
    B: Body<In = (T, T), Out = T> + DeviceKernel,
    T: Element,
    A: Operand<T>,
    O: OutOperand<T>,
{
    let route = route(B::NAME, target, compiled, B::CUDA)?;
    let raw = a.raw();
    let axis = normalize(B::NAME, "accumulate", axis, raw.shape.len())?;
    let out: RawOutOperand<'_> = out.raw_mut();
    if out.shape != raw.shape {
        return Err(Error::OutputShape {
            output: 0,
            expected: raw.shape.to_vec(),
            found: out.shape.to_vec(),
        });
    }
    accumulate_into::<B, T>(route, raw, axis, out.ptr as *mut T, out.strides)
}

/// Accumulates `a` along `axis` into `out_ptr`, an array of `a`'s shape at `out_strides`
/// (elements).
fn accumulate_into<B: Body<In = (T, T), Out = T>, T: Element>(
    route: Route,
    a: RawOperand<'_>,
    axis: usize,
    out_ptr: *mut T,
    out_strides: &[isize],
) -> Result<()> {
    match route {
        Route::Cuda(kernel) => {
            cuda::accumulate_host::<B, T>(&kernel, a, axis, (out_ptr, out_strides))
        }
        Route::Cpu(_) if a.shape.contains(&0) => Ok(()),
        Route::Cpu(threads) => {
            let axes: Vec<AxisSpec> = (0..a.shape.len())
                .map(|i| (a.shape[i], a.strides[i], out_strides[i], i == axis))
                .collect();
            let job = Job::new::<B>(&axes, a.ptr as *const T, out_ptr);
            catching_panics(B::NAME, || job.accumulate::<B>(threads))
        }
    }
}

/// `a` of `outer` as an operand of the result's shape `a.shape + b.shape`: along the leading
/// axes, length 1 and stride 0 along the `b_ndim` trailing ones (`b` broadcasts along `a`'s).
pub(crate) fn outer_leading(
    shape: &[usize],
    strides: &[isize],
    b_ndim: usize,
) -> (Vec<usize>, Vec<isize>) {
    let ones = std::iter::repeat_n(1, b_ndim);
    let shape = shape.iter().copied().chain(ones).collect();
    let zeros = std::iter::repeat_n(0, b_ndim);
    (shape, strides.iter().copied().chain(zeros).collect())
}

/// `B` of every pair: `out[i.., j..] = f(a[i..], b[j..])`, of shape `a.shape + b.shape`.
pub fn outer<B, T, A, Bo>(
    target: Target,
    compiled: &'static [Target],
    a: A,
    b: Bo,
) -> Result<ArrayD<T>>
where
    B: Body<In = (T, T), Out = T> + DeviceKernel,
    T: Element,
    A: Operand<T>,
    Bo: Operand<T>,
{
    let route = route(B::NAME, target, compiled, B::CUDA)?;
    let (ra, rb) = (a.raw(), b.raw());
    let shape: Vec<usize> = ra.shape.iter().chain(rb.shape).copied().collect();
    byte_size(&shape, size_of::<T>())?;
    let (a_shape, a_strides) = outer_leading(ra.shape, ra.strides, rb.shape.len());
    let ins = [
        RawOperand {
            ptr: ra.ptr,
            shape: &a_shape,
            strides: &a_strides,
        },
        rb,
    ];
    let mut out = crate::alloc::try_uninit::<T, IxDyn>(&IxDyn(&shape))?;
    let strides = c_strides(&shape);
    let outs = [RawOutOperand {
        ptr: out.as_mut_ptr() as *mut u8,
        shape: &shape,
        strides: &strides,
    }];
    match route {
        Route::Cpu(threads) => crate::exec::execute::<B>(threads, &ins, &outs, &shape)?,
        Route::Cuda(kernel) => {
            let sizes = [size_of::<T>(); 2];
            cuda::run_elementwise(B::NAME, &kernel, &ins, &sizes, &outs, &sizes[..1], &shape)?
        }
    }
    // SAFETY: the engine wrote every element (it returned Ok).
    Ok(unsafe { out.assume_init() })
}
