//! Turning one loop item's raw core operands into what the core function takes: ndarray views,
//! plain values, `&mut` scalars.

use ndarray::{ArrayView, ArrayViewMut, Axis, Dimension, ShapeBuilder};

/// One operand of one core call: where its core sub-array starts, its core shape and strides
/// (in elements, any sign).
#[derive(Debug, Clone, Copy)]
pub struct CoreArg<'a> {
    /// Address of the core sub-array's first element.
    pub ptr: *mut u8,
    /// Core shape, as the body sees it.
    pub shape: &'a [usize],
    /// Core strides in elements.
    pub strides: &'a [isize],
}

/// Shape, non-negative strides and the lowest address; the axes to invert afterwards.
#[inline(always)]
fn positive_parts<D: Dimension>(arg: &CoreArg<'_>, size: usize) -> (D, D, *mut u8, u32) {
    let mut dim = D::zeros(arg.shape.len());
    let mut strides = D::zeros(arg.shape.len());
    dim.slice_mut().copy_from_slice(arg.shape);
    let mut ptr = arg.ptr;
    let mut flipped = 0u32;
    for ((st, _), &s) in strides
        .slice_mut()
        .iter_mut()
        .zip(arg.shape)
        .zip(arg.strides)
    {
        *st = s.unsigned_abs();
    }
    if arg.strides.iter().any(|&s| s < 0) {
        for (k, (&n, &s)) in arg.shape.iter().zip(arg.strides).enumerate() {
            if s < 0 && n > 0 {
                ptr = ptr.wrapping_offset((n as isize - 1) * s * size as isize);
                flipped |= 1 << k;
            }
        }
    }
    (dim, strides, ptr, flipped)
}

/// A read-only view of a core operand.
///
/// # Safety
/// `arg` describes live, properly aligned elements of type `T` for the lifetime `'a`, and `D`
/// has `arg.shape.len()` dimensions (or is dynamic).
#[inline(always)]
pub unsafe fn core_view<'a, T, D: Dimension>(arg: &CoreArg<'_>) -> ArrayView<'a, T, D> {
    let (dim, strides, ptr, flipped) = positive_parts::<D>(arg, size_of::<T>());
    let mut v = ArrayView::from_shape_ptr(dim.strides(strides), ptr as *const T);
    if flipped == 0 {
        return v;
    }
    for k in 0..arg.shape.len() {
        if flipped & (1 << k) != 0 {
            v.invert_axis(Axis(k));
        }
    }
    v
}

/// A mutable view of a core output.
///
/// # Safety
/// As [`core_view`], and no other live reference overlaps the elements.
#[inline(always)]
pub unsafe fn core_view_mut<'a, T, D: Dimension>(arg: &CoreArg<'_>) -> ArrayViewMut<'a, T, D> {
    let (dim, strides, ptr, flipped) = positive_parts::<D>(arg, size_of::<T>());
    let mut v = ArrayViewMut::from_shape_ptr(dim.strides(strides), ptr as *mut T);
    if flipped == 0 {
        return v;
    }
    for k in 0..arg.shape.len() {
        if flipped & (1 << k) != 0 {
            v.invert_axis(Axis(k));
        }
    }
    v
}

/// The value of a `()` core input.
///
/// # Safety
/// `arg.ptr` points to a live `T`.
pub unsafe fn core_scalar<T: Copy>(arg: &CoreArg<'_>) -> T {
    *(arg.ptr as *const T)
}

/// A `()` core output as `&mut T`.
///
/// # Safety
/// `arg.ptr` points to a live `T` that nothing else references.
pub unsafe fn core_scalar_mut<'a, T>(arg: &CoreArg<'_>) -> &'a mut T {
    &mut *(arg.ptr as *mut T)
}

/// Writes a returned scalar into its `()` core output.
///
/// # Safety
/// As [`core_scalar_mut`].
pub unsafe fn store_scalar<T>(arg: &CoreArg<'_>, value: T) {
    *(arg.ptr as *mut T) = value;
}
