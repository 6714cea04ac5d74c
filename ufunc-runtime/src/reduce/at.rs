//! `f::at`: unbuffered in-place application at indices, NumPy's `ufunc.at`, and the index forms
//! it takes: one index array along the first axis, or a tuple of them for the first k axes.

use crate::body::Body;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::operand::{Operand, OutOperand};
use crate::panic::catching_panics;
use crate::shape::{
    broadcast_shape, broadcast_strides_to, byte_strides, c_strides, element_count, walk_rows,
    Shape, Strides,
};
use ndarray::{ArrayBase, Data, Dimension};
use std::ops::RangeFull;

use super::kernels;

/// One index array along an axis, for `f::at`: an integer (NumPy's scalar index), a slice,
/// array or `Vec` of integers, or an `ndarray` array or view of them of any dimension. Negative
/// indices count from the end.
pub trait IndexList {
    /// The shape of the indices: `[]` for one integer, `[n]` for a list of `n`, an array's
    /// shape.
    fn index_shape(&self) -> Vec<usize>;
    /// Index `k` in C order of [`index_shape`](Self::index_shape), widened (`i128::MAX` for a
    /// value that does not fit, which is then out of bounds).
    fn index_at(&self, k: usize) -> i128;
}

fn widen<I: Copy + TryInto<i128>>(i: I) -> i128 {
    i.try_into().unwrap_or(i128::MAX)
}

macro_rules! scalar_index {
    ($($t:ty)*) => {$(
        impl IndexList for $t {
            fn index_shape(&self) -> Vec<usize> {
                Vec::new()
            }
            fn index_at(&self, _k: usize) -> i128 {
                widen(*self)
            }
        }
    )*};
}
scalar_index!(i8 i16 i32 i64 isize u8 u16 u32 u64 usize);

impl<I: Copy + TryInto<i128>> IndexList for [I] {
    fn index_shape(&self) -> Vec<usize> {
        vec![self.len()]
    }
    fn index_at(&self, k: usize) -> i128 {
        widen(self[k])
    }
}

impl<I: Copy + TryInto<i128>, const N: usize> IndexList for [I; N] {
    fn index_shape(&self) -> Vec<usize> {
        vec![N]
    }
    fn index_at(&self, k: usize) -> i128 {
        widen(self[k])
    }
}

impl<I: Copy + TryInto<i128>> IndexList for Vec<I> {
    fn index_shape(&self) -> Vec<usize> {
        vec![self.len()]
    }
    fn index_at(&self, k: usize) -> i128 {
        widen(self[k])
    }
}

/// A reference to a list is the list (`&idx` where `idx` is already a `&[usize]`).
impl<L: IndexList + ?Sized> IndexList for &L {
    fn index_shape(&self) -> Vec<usize> {
        (**self).index_shape()
    }
    fn index_at(&self, k: usize) -> i128 {
        (**self).index_at(k)
    }
}

impl<I: Copy + TryInto<i128>, S: Data<Elem = I>, D: Dimension> IndexList for ArrayBase<S, D> {
    fn index_shape(&self) -> Vec<usize> {
        self.shape().to_vec()
    }
    fn index_at(&self, k: usize) -> i128 {
        if let Some(s) = self.as_slice() {
            return widen(s[k]);
        }
        // Any other layout: the element at C-order position `k`.
        let (mut rest, mut offset) = (k, 0isize);
        for (&len, &stride) in self.shape().iter().zip(self.strides()).rev() {
            offset += (rest % len) as isize * stride;
            rest /= len;
        }
        // SAFETY: `k` is below the element count, so `offset` addresses an element.
        widen(unsafe { *self.as_ptr().offset(offset) })
    }
}

/// One entry of `f::at`'s index tuple: an index array (a reference to an [`IndexList`]), or
/// `..`, NumPy's `slice(None)`: the whole axis, which then belongs to the sub-array that each
/// point addresses.
pub trait AtEntry {
    /// The shape of the index array, or `None` for `..`.
    fn entry_shape(&self) -> Option<Vec<usize>>;
    /// Index `k`, in C order of its shape, of the index array.
    fn entry_index(&self, k: usize) -> i128;
}

impl<L: IndexList + ?Sized> AtEntry for &L {
    fn entry_shape(&self) -> Option<Vec<usize>> {
        Some(self.index_shape())
    }
    fn entry_index(&self, k: usize) -> i128 {
        self.index_at(k)
    }
}

impl AtEntry for RangeFull {
    fn entry_shape(&self) -> Option<Vec<usize>> {
        None
    }
    fn entry_index(&self, _k: usize) -> i128 {
        i128::MAX
    }
}

/// The indices of `f::at`, as NumPy's `indices`: one index array for the first axis (`&[1, 3,
/// 1]`, a `&Vec`, an `&Array1`, an n-d `&Array`, or `&2`), or a tuple of them, one per leading
/// axis (`(&rows, &cols)`, up to four), broadcast together as NumPy's index arrays: the points
/// have their broadcast shape, in C order. `..` in the tuple is NumPy's `slice(None)`, the whole
/// axis (`(.., &idx)`); `()` addresses the whole array. As in NumPy, `b` broadcasts to
/// `a[indices]`'s shape: the points' axes take the place of the index arrays where those are
/// side by side, and come first where a `..` separates them. Other slices: slice `a` first.
pub trait AtIndices {
    /// How many leading axes the tuple covers.
    fn axes(&self) -> usize;
    /// The shape of the index array for `axis` (below [`axes`](Self::axes)), or `None` for
    /// `..`.
    fn shape(&self, axis: usize) -> Option<Vec<usize>>;
    /// Index `k`, in C order of its shape, of the index array for `axis`.
    fn index(&self, axis: usize, k: usize) -> i128;
}

impl<L: IndexList + ?Sized> AtIndices for &L {
    fn axes(&self) -> usize {
        1
    }
    fn shape(&self, _axis: usize) -> Option<Vec<usize>> {
        Some(self.index_shape())
    }
    fn index(&self, _axis: usize, k: usize) -> i128 {
        self.index_at(k)
    }
}

/// `..` alone: the whole array once (NumPy's `np.add.at(a, slice(None), b)`).
impl AtIndices for RangeFull {
    fn axes(&self) -> usize {
        1
    }
    fn shape(&self, _axis: usize) -> Option<Vec<usize>> {
        None
    }
    fn index(&self, _axis: usize, _k: usize) -> i128 {
        i128::MAX
    }
}

/// No index: the whole array once (NumPy's `a[()]`, as `np.add.at(a, (), 1)`).
impl AtIndices for () {
    fn axes(&self) -> usize {
        0
    }
    fn shape(&self, _axis: usize) -> Option<Vec<usize>> {
        None
    }
    fn index(&self, _axis: usize, _k: usize) -> i128 {
        i128::MAX
    }
}

macro_rules! tuple_indices {
    ($n:literal: $($e:ident $i:tt),+) => {
        impl<$($e: AtEntry),+> AtIndices for ($($e,)+) {
            fn axes(&self) -> usize {
                $n
            }
            fn shape(&self, axis: usize) -> Option<Vec<usize>> {
                match axis {
                    $($i => self.$i.entry_shape(),)+
                    _ => None,
                }
            }
            fn index(&self, axis: usize, k: usize) -> i128 {
                match axis {
                    $($i => self.$i.entry_index(k),)+
                    _ => i128::MAX,
                }
            }
        }
    };
}
tuple_indices!(1: A 0);
tuple_indices!(2: A 0, B 1);
tuple_indices!(3: A 0, B 1, C 2);
tuple_indices!(4: A 0, B 1, C 2, D 3);

/// `f(k, offset)` for each element `k` of `shape`, in C order, where `offset` is the dot
/// product of its index with `strides`.
fn c_order_offsets(shape: &[usize], strides: &[isize], mut f: impl FnMut(usize, isize)) {
    let Some((&inner, outer)) = shape.split_last() else {
        return f(0, 0);
    };
    if inner == 0 || outer.contains(&0) {
        return;
    }
    let step = strides[outer.len()];
    let mut index = vec![0usize; outer.len()];
    let (mut k, mut base) = (0usize, 0isize);
    loop {
        for i in 0..inner {
            f(k + i, base + i as isize * step);
        }
        k += inner;
        // The next row: carry through the outer axes from the last.
        let mut axis = outer.len();
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            index[axis] += 1;
            base += strides[axis];
            if index[axis] < outer[axis] {
                break;
            }
            base -= strides[axis] * outer[axis] as isize;
            index[axis] = 0;
        }
    }
}

/// A shape as NumPy prints it: `(2,3)`, `(2,)`, `()`.
fn py_shape(shape: &[usize]) -> String {
    let axes: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
    match axes.len() {
        1 => format!("({},)", axes[0]),
        _ => format!("({})", axes.join(",")),
    }
}

/// Where `f::at` applies, checked before `a` is touched.
pub(crate) struct AtPoints {
    /// The element offset in `a` of each indexed sub-array, in order.
    pub offsets: Vec<isize>,
    /// The axes of `a` that each point's sub-array spans (those not indexed), in order.
    pub sub_axes: Vec<usize>,
    /// The points' shape (the index arrays' broadcast shape).
    points: Shape,
    /// `b`'s element strides along the points' axes (broadcast).
    b_points: Strides,
    /// `b`'s element strides along `sub_axes` (broadcast).
    pub b_sub_strides: Strides,
}

impl AtPoints {
    /// `f(k, offset of b's sub-array for point k)` for each point in order.
    pub fn for_each_b(&self, f: impl FnMut(usize, isize)) {
        c_order_offsets(&self.points, &self.b_points, f);
    }

    /// The offset of `b`'s sub-array for each point, in order.
    pub fn b_offsets(&self) -> Vec<isize> {
        let mut b = vec![0isize; self.offsets.len()];
        self.for_each_b(|k, offset| b[k] = offset);
        b
    }
}

/// The points of `indices` in `a` of `shape` and element `strides`: the index arrays broadcast
/// together, every index counted from the end where negative (`Error::IndexOutOfBounds`,
/// naming the axis, for one past either end), and `b` (`b_shape`, `b_strides`) broadcast to
/// `a[indices]`'s shape.
pub(crate) fn at_points(
    function: &'static str,
    shape: &[usize],
    strides: &[isize],
    indices: &impl AtIndices,
    b_shape: &[usize],
    b_strides: &[isize],
) -> Result<AtPoints> {
    let axes = indices.axes();
    if axes > shape.len() {
        return Err(Error::InvalidArgument {
            name: "indices",
            message: format!(
                "`{function}::at`: too many indices for array: array is {}-dimensional, but {axes} \
                 were indexed",
                shape.len()
            ),
        });
    }
    let entries: Vec<Option<Vec<usize>>> = (0..axes).map(|axis| indices.shape(axis)).collect();
    let indexed: Vec<usize> = (0..axes).filter(|&i| entries[i].is_some()).collect();
    let shapes: Vec<&[usize]> = entries.iter().flatten().map(|s| &s[..]).collect();
    let points =
        broadcast_shape(shapes.len(), |i| shapes[i]).map_err(|_| Error::InvalidArgument {
            name: "indices",
            message: format!(
            "`{function}::at`: shape mismatch: indexing arrays could not be broadcast together \
             with shapes {}",
            shapes.iter().map(|s| py_shape(s)).collect::<Vec<_>>().join(" ")
        ),
        })?;
    let mut offsets = vec![0isize; element_count(&points)?];
    for (&axis, own) in indexed.iter().zip(&shapes) {
        let len = shape[axis];
        let own_in_points = broadcast_strides_to(&points, own, &c_strides(own))?;
        let mut bad = None;
        c_order_offsets(&points, &own_in_points, |k, position| {
            let index = indices.index(axis, position as usize);
            let i = if index < 0 {
                index + len as i128
            } else {
                index
            };
            if i < 0 || i >= len as i128 {
                bad.get_or_insert(index);
            } else {
                offsets[k] += i as isize * strides[axis];
            }
        });
        if let Some(index) = bad {
            return Err(Error::IndexOutOfBounds {
                function,
                index,
                axis,
                len,
            });
        }
    }
    // `a[indices]`'s shape, as NumPy's: the points' axes where the index arrays are, if they
    // are side by side, else first.
    let sub_axes: Vec<usize> = (0..shape.len())
        .filter(|&i| i >= axes || entries[i].is_none())
        .collect();
    let side_by_side = indexed.windows(2).all(|w| w[1] == w[0] + 1);
    let at = match indexed.first() {
        Some(&first) if side_by_side => sub_axes.iter().take_while(|&&i| i < first).count(),
        _ => 0,
    };
    let sub_shape = sub_axes.iter().map(|&i| shape[i]);
    let full: Vec<usize> = sub_shape
        .clone()
        .take(at)
        .chain(points.iter().copied())
        .chain(sub_shape.skip(at))
        .collect();
    let b_full = broadcast_strides_to(&full, b_shape, b_strides)?;
    let b_points = b_full[at..at + points.len()].into();
    let b_sub_strides = b_full[..at]
        .iter()
        .chain(&b_full[at + points.len()..])
        .copied()
        .collect();
    Ok(AtPoints {
        offsets,
        sub_axes,
        points,
        b_points,
        b_sub_strides,
    })
}

/// Unbuffered in-place `a[p_k, ..] = f(a[p_k, ..], b[k, ..])` for each point `p_k` of
/// `indices` in order, so a repeated point is applied repeatedly; `b` broadcasts to
/// `a[indices]`'s shape, as NumPy's. Every index is checked before `a` is
/// touched. Runs on the calling thread.
pub fn at<B, T, O, X, Bo>(mut a: O, indices: X, b: Bo) -> Result<()>
where
    B: Body<In = (T, T), Out = T>,
    T: Element,
    O: OutOperand<T>,
    X: AtIndices,
    Bo: Operand<T>,
{
    let ra = a.raw_mut();
    let rb = b.raw();
    let at = at_points(
        B::NAME,
        ra.shape,
        ra.strides,
        &indices,
        rb.shape,
        rb.strides,
    )?;
    let sub_shape: Shape = at.sub_axes.iter().map(|&i| ra.shape[i]).collect();
    let sub_strides: Strides = at.sub_axes.iter().map(|&i| ra.strides[i]).collect();
    let size = size_of::<T>();
    let a_bytes = byte_strides(&sub_strides, size);
    let b_bytes = byte_strides(&at.b_sub_strides, size);
    let (ia, ib) = (*a_bytes.last().unwrap_or(&0), *b_bytes.last().unwrap_or(&0));
    let n_sub: usize = sub_shape.iter().product();
    catching_panics(B::NAME, || {
        at.for_each_b(|k, b_offset| {
            let pa = ra.ptr.wrapping_offset(at.offsets[k] * size as isize);
            let pb = (rb.ptr as *mut u8).wrapping_offset(b_offset * size as isize);
            walk_rows(
                &sub_shape,
                &[&a_bytes, &b_bytes],
                &[pa, pb],
                0..n_sub,
                |p, j, len| {
                    for t in j..j + len {
                        let ea = p[0].wrapping_offset(t as isize * ia) as *mut T;
                        let eb = p[1].wrapping_offset(t as isize * ib) as *const T;
                        // SAFETY: elements of `a` and of `b` (broadcast).
                        unsafe { ea.write(kernels::call::<B, T>(ea.read(), eb.read())) };
                    }
                },
            );
        });
    })
}
