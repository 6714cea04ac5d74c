//! Turning raw core operands into what the core function takes: ndarray views, plain values,
//! `&mut` scalars. The layout part of a view (dimension and stride types, which axes run
//! backwards) is computed once per run of loop items; each item then only supplies a pointer.

use ndarray::{ArrayView, ArrayViewMut, Axis, Dimension, ShapeBuilder};
use std::marker::PhantomData;

/// One operand at the start of a run of loop items: where its first core sub-array starts, its
/// core shape and strides (in elements, any sign).
#[derive(Debug, Clone, Copy)]
pub struct CoreArg<'a> {
    /// Address of the first item's core sub-array.
    pub ptr: *mut u8,
    /// Core shape, as the body sees it.
    pub shape: &'a [usize],
    /// Core strides in elements.
    pub strides: &'a [isize],
}

/// A core parameter type of a `#[guvectorize]` function: `ArrayView..`, `ArrayViewMut..`, a
/// plain element (a `()` input) or `&mut` element (a `()` output).
pub trait CoreParam: Sized {
    /// What is computed once per run of items.
    type Layout;
    /// Prepares the layout of `arg`.
    ///
    /// # Safety
    /// `arg` describes an operand of this parameter's element type and rank.
    unsafe fn layout(arg: &CoreArg<'_>) -> Self::Layout;
    /// The parameter for the item whose core sub-array starts at `ptr`.
    ///
    /// # Safety
    /// `ptr` is the start of a live core sub-array laid out as `layout` says, and nothing else
    /// references an output's elements while the parameter lives.
    unsafe fn make(layout: &Self::Layout, ptr: *mut u8) -> Self;
}

/// The layout of a view: non-negative strides from the lowest address, and the axes to invert.
pub struct ViewLayout<T, D> {
    dim: D,
    strides: D,
    /// Bytes from an item's first element to its lowest address.
    offset: isize,
    /// The axes that run backwards in memory (any rank: ndarray's dynamic views have no limit).
    flipped: smallvec::SmallVec<[usize; 4]>,
    elem: PhantomData<T>,
}

impl<T, D: Dimension> ViewLayout<T, D> {
    /// Turns the axes that run backwards in memory around again.
    #[inline(always)]
    fn reverse_flipped<S: ndarray::RawData>(&self, v: &mut ndarray::ArrayBase<S, D>) {
        for &k in &self.flipped {
            v.invert_axis(Axis(k));
        }
    }
}

fn view_layout<T, D: Dimension>(arg: &CoreArg<'_>) -> ViewLayout<T, D> {
    let mut dim = D::zeros(arg.shape.len());
    let mut strides = D::zeros(arg.shape.len());
    dim.slice_mut().copy_from_slice(arg.shape);
    let mut offset = 0isize;
    let mut flipped = smallvec::SmallVec::new();
    for (k, ((st, &n), &s)) in strides
        .slice_mut()
        .iter_mut()
        .zip(arg.shape)
        .zip(arg.strides)
        .enumerate()
    {
        *st = s.unsigned_abs();
        if s < 0 && n > 0 {
            offset += (n as isize - 1) * s * size_of::<T>() as isize;
            flipped.push(k);
        }
    }
    ViewLayout {
        dim,
        strides,
        offset,
        flipped,
        elem: PhantomData,
    }
}

impl<'a, T, D: Dimension> CoreParam for ArrayView<'a, T, D> {
    type Layout = ViewLayout<T, D>;
    unsafe fn layout(arg: &CoreArg<'_>) -> Self::Layout {
        view_layout(arg)
    }
    #[inline(always)]
    unsafe fn make(l: &Self::Layout, ptr: *mut u8) -> Self {
        let shape = l.dim.clone().strides(l.strides.clone());
        let first = ptr.wrapping_offset(l.offset) as *const T;
        // SAFETY: the caller's contract: a live core sub-array laid out as `l` says.
        let mut v = unsafe { ArrayView::from_shape_ptr(shape, first) };
        l.reverse_flipped(&mut v);
        v
    }
}

impl<'a, T, D: Dimension> CoreParam for ArrayViewMut<'a, T, D> {
    type Layout = ViewLayout<T, D>;
    unsafe fn layout(arg: &CoreArg<'_>) -> Self::Layout {
        view_layout(arg)
    }
    #[inline(always)]
    unsafe fn make(l: &Self::Layout, ptr: *mut u8) -> Self {
        let shape = l.dim.clone().strides(l.strides.clone());
        let first = ptr.wrapping_offset(l.offset) as *mut T;
        // SAFETY: the caller's contract: a live core sub-array that nothing else references.
        let mut v = unsafe { ArrayViewMut::from_shape_ptr(shape, first) };
        l.reverse_flipped(&mut v);
        v
    }
}

impl<T: crate::Element> CoreParam for &mut T {
    type Layout = ();
    unsafe fn layout(_: &CoreArg<'_>) -> Self::Layout {}
    #[inline(always)]
    unsafe fn make(_: &(), ptr: *mut u8) -> Self {
        // SAFETY: the caller's contract: a live `T` that nothing else references.
        unsafe { &mut *(ptr as *mut T) }
    }
}

macro_rules! scalar_core_params {
    ($($t:ty),*) => {$(
        impl CoreParam for $t {
            type Layout = ();
            unsafe fn layout(_: &CoreArg<'_>) -> Self::Layout {}
            #[inline(always)]
            unsafe fn make(_: &(), ptr: *mut u8) -> Self {
                // SAFETY: the caller's contract: a live element.
                unsafe { *(ptr as *const $t) }
            }
        }
    )*};
}

crate::element::for_each_element!(scalar_core_params);

/// Writes a returned scalar into its `()` core output.
///
/// # Safety
/// `ptr` points to a live `T` that nothing else references.
#[inline(always)]
pub unsafe fn store_scalar<T>(ptr: *mut u8, value: T) {
    // SAFETY: the caller's contract.
    unsafe { *(ptr as *mut T) = value };
}
