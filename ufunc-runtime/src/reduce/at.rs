//! `f::at`: unbuffered in-place application at indices, NumPy's `ufunc.at`, and the index forms
//! it takes: one index array (or integer) along the first axis, or a tuple of them and `..`
//! for the first k axes.
//!
//! The index traits are sealed: `at` checks every index before it writes, then reads the
//! indices again as it applies them, and trusts the two reads to agree, which only the
//! implementations here (over primitive integers) guarantee.

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

mod sealed {
    pub trait Sealed {}
}

/// A primitive integer type, as indices are (`i8` to `i64`, `isize`, `u8` to `u64`, `usize`).
pub trait IndexInt: Copy + sealed::Sealed {
    /// The value, exactly.
    fn wide(self) -> i128;
    /// The value, or `isize::MAX` (out of bounds) where it does not fit an `isize`.
    fn narrow(self) -> isize;
}

macro_rules! index_ints {
    ($($t:ty)*) => {$(
        impl sealed::Sealed for $t {}
        impl IndexInt for $t {
            fn wide(self) -> i128 {
                self as i128
            }
            fn narrow(self) -> isize {
                isize::try_from(self).unwrap_or(isize::MAX)
            }
        }
        /// One integer: NumPy's scalar index.
        impl IndexList for $t {
            fn index_shape(&self) -> Vec<usize> {
                Vec::new()
            }
            fn index_at(&self, _k: usize) -> i128 {
                self.wide()
            }
        }
    )*};
}
index_ints!(i8 i16 i32 i64 isize u8 u16 u32 u64 usize);

/// One index array along an axis, for `f::at`: an integer (NumPy's scalar index), a slice,
/// array or `Vec` of integers, or an `ndarray` array or view of them of any dimension. Negative
/// indices count from the end. Booleans are not indices (NumPy's masks have no form here).
pub trait IndexList: sealed::Sealed {
    /// The shape of the indices: `[]` for one integer, `[n]` for a list of `n`, an array's
    /// shape.
    fn index_shape(&self) -> Vec<usize>;
    /// Index `k` in C order of [`index_shape`](Self::index_shape).
    fn index_at(&self, k: usize) -> i128;
    /// `f(j, index_at(start + j * step))` for `j` in `0..count`, in order, in one loop, the
    /// index clamped to `isize` (which leaves any out of bounds out of bounds).
    fn each_index(&self, start: usize, step: usize, count: usize, mut f: impl FnMut(usize, isize)) {
        for j in 0..count {
            f(j, clamp(self.index_at(start + j * step)));
        }
    }
}

/// [`IndexList::each_index`] over a slice, with its address and length held in registers.
fn each_in_slice<I: IndexInt>(
    s: &[I],
    (start, step, count): (usize, usize, usize),
    mut f: impl FnMut(usize, isize),
) {
    match step {
        _ if count == 0 => {}
        0 => {
            let i = s[start].narrow();
            (0..count).for_each(|j| f(j, i));
        }
        1 => {
            // Contiguous: a loop the compiler can vectorise (the bounds check, say).
            for (j, &i) in s[start..start + count].iter().enumerate() {
                f(j, i.narrow());
            }
        }
        _ => {
            for (j, &i) in s[start..].iter().step_by(step).take(count).enumerate() {
                f(j, i.narrow());
            }
        }
    }
}

/// An index from [`IndexList::index_at`] as [`IndexInt::narrow`] gives it.
fn clamp(i: i128) -> isize {
    i.clamp(isize::MIN as i128, isize::MAX as i128) as isize
}

impl<I: IndexInt> IndexList for [I] {
    fn index_shape(&self) -> Vec<usize> {
        vec![self.len()]
    }
    fn index_at(&self, k: usize) -> i128 {
        self[k].wide()
    }
    fn each_index(&self, start: usize, step: usize, count: usize, f: impl FnMut(usize, isize)) {
        each_in_slice(self, (start, step, count), f);
    }
}

impl<I: IndexInt, const N: usize> IndexList for [I; N] {
    fn index_shape(&self) -> Vec<usize> {
        vec![N]
    }
    fn index_at(&self, k: usize) -> i128 {
        self[k].wide()
    }
    fn each_index(&self, start: usize, step: usize, count: usize, f: impl FnMut(usize, isize)) {
        each_in_slice(self, (start, step, count), f);
    }
}

impl<I: IndexInt> IndexList for Vec<I> {
    fn index_shape(&self) -> Vec<usize> {
        vec![self.len()]
    }
    fn index_at(&self, k: usize) -> i128 {
        self[k].wide()
    }
    fn each_index(&self, start: usize, step: usize, count: usize, f: impl FnMut(usize, isize)) {
        each_in_slice(self, (start, step, count), f);
    }
}

impl<I: IndexInt> sealed::Sealed for [I] {}
impl<I: IndexInt, const N: usize> sealed::Sealed for [I; N] {}
impl<I: IndexInt> sealed::Sealed for Vec<I> {}
impl<I: IndexInt, S: Data<Elem = I>, D: Dimension> sealed::Sealed for ArrayBase<S, D> {}
impl<L: IndexList + ?Sized> sealed::Sealed for &L {}
impl sealed::Sealed for RangeFull {}
impl sealed::Sealed for () {}

/// A reference to a list is the list (`&idx` where `idx` is already a `&[usize]`).
impl<L: IndexList + ?Sized> IndexList for &L {
    fn index_shape(&self) -> Vec<usize> {
        (**self).index_shape()
    }
    fn index_at(&self, k: usize) -> i128 {
        (**self).index_at(k)
    }
    fn each_index(&self, start: usize, step: usize, count: usize, f: impl FnMut(usize, isize)) {
        (**self).each_index(start, step, count, f);
    }
}

impl<I: IndexInt, S: Data<Elem = I>, D: Dimension> IndexList for ArrayBase<S, D> {
    fn index_shape(&self) -> Vec<usize> {
        self.shape().to_vec()
    }
    fn index_at(&self, k: usize) -> i128 {
        if let Some(s) = self.as_slice() {
            return s[k].wide();
        }
        // Any other layout: the element at C-order position `k`.
        let (mut rest, mut offset) = (k, 0isize);
        for (&len, &stride) in self.shape().iter().zip(self.strides()).rev() {
            offset += (rest % len) as isize * stride;
            rest /= len;
        }
        // SAFETY: every axis's index is taken modulo its length, so `offset` addresses an
        // element whatever `k` is.
        unsafe { *self.as_ptr().offset(offset) }.wide()
    }
    fn each_index(&self, start: usize, step: usize, count: usize, mut f: impl FnMut(usize, isize)) {
        match self.as_slice() {
            Some(s) => each_in_slice(s, (start, step, count), f),
            None => (0..count).for_each(|j| f(j, clamp(self.index_at(start + j * step)))),
        }
    }
}

/// One entry of `f::at`'s index tuple: an index array (a reference to an [`IndexList`]), or
/// `..`, NumPy's `slice(None)`: the whole axis, which then belongs to the sub-array that each
/// point addresses.
pub trait AtEntry: sealed::Sealed {
    /// The shape of the index array, or `None` for `..`.
    fn entry_shape(&self) -> Option<Vec<usize>>;
    /// Index `k`, in C order of its shape, of the index array.
    fn entry_index(&self, k: usize) -> i128;
    /// [`IndexList::each_index`] of the index array.
    fn entry_each(&self, start: usize, step: usize, count: usize, mut f: impl FnMut(usize, isize)) {
        for j in 0..count {
            f(j, clamp(self.entry_index(start + j * step)));
        }
    }
}

impl<L: IndexList + ?Sized> AtEntry for &L {
    fn entry_shape(&self) -> Option<Vec<usize>> {
        Some(self.index_shape())
    }
    fn entry_index(&self, k: usize) -> i128 {
        self.index_at(k)
    }
    fn entry_each(&self, start: usize, step: usize, count: usize, f: impl FnMut(usize, isize)) {
        IndexList::each_index(*self, start, step, count, f);
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
pub trait AtIndices: sealed::Sealed {
    /// How many leading axes the tuple covers.
    fn axes(&self) -> usize;
    /// The shape of the index array for `axis` (below [`axes`](Self::axes)), or `None` for
    /// `..`.
    fn shape(&self, axis: usize) -> Option<Vec<usize>>;
    /// Index `k`, in C order of its shape, of the index array for `axis`.
    fn index(&self, axis: usize, k: usize) -> i128;
    /// `f(j, index(axis, start + j * step))` for `j` in `0..count`, in order, in one loop.
    fn each_index(
        &self,
        axis: usize,
        start: usize,
        step: usize,
        count: usize,
        mut f: impl FnMut(usize, isize),
    ) {
        for j in 0..count {
            f(j, clamp(self.index(axis, start + j * step)));
        }
    }
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
    fn each_index(
        &self,
        _axis: usize,
        start: usize,
        step: usize,
        count: usize,
        f: impl FnMut(usize, isize),
    ) {
        IndexList::each_index(*self, start, step, count, f);
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
        impl<$($e: AtEntry),+> sealed::Sealed for ($($e,)+) {}
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
            fn each_index(
                &self,
                axis: usize,
                start: usize,
                step: usize,
                count: usize,
                f: impl FnMut(usize, isize),
            ) {
                match axis {
                    $($i => self.$i.entry_each(start, step, count, f),)+
                    _ => {}
                }
            }
        }
    };
}
tuple_indices!(1: A 0);
tuple_indices!(2: A 0, B 1);
tuple_indices!(3: A 0, B 1, C 2);
tuple_indices!(4: A 0, B 1, C 2, D 3);

/// `f(offsets)` for each element of `shape`, in C order, where `offsets[j]` is the dot product
/// of its index with `sets[j]` (a set of strides, one per axis): [`walk_rows`]'s walk, from
/// null bases, so that its row "pointers" are the offsets themselves.
fn c_order_offsets(shape: &[usize], sets: &[&[isize]], mut f: impl FnMut(&[isize])) {
    let mut at: Strides = smallvec::smallvec![0isize; sets.len()];
    let Some(last) = shape.len().checked_sub(1) else {
        return f(&at);
    };
    let bases = vec![std::ptr::null_mut::<u8>(); sets.len()];
    walk_rows(
        shape,
        sets,
        &bases,
        0..shape.iter().product(),
        |rows, j, len| {
            for t in j..j + len {
                for ((o, row), set) in at.iter_mut().zip(rows).zip(sets) {
                    *o = *row as isize + t as isize * set[last];
                }
                f(&at);
            }
        },
    );
}

/// A shape as NumPy prints it: `(2,3)`, `(2,)`, `()`.
fn py_shape(shape: &[usize]) -> String {
    let axes: Vec<String> = shape.iter().map(|n| n.to_string()).collect();
    match axes.len() {
        1 => format!("({},)", axes[0]),
        _ => format!("({})", axes.join(",")),
    }
}

/// Where `f::at` applies, every index checked before `a` is touched.
pub(crate) struct AtPoints {
    /// How many points there are.
    pub count: usize,
    /// The axes of `a` that each point's sub-array spans (those not indexed), in order.
    pub sub_axes: Vec<usize>,
    /// The points' shape (the index arrays' broadcast shape).
    points: Shape,
    /// The index arrays, in axis order.
    indexed: Vec<IndexedAxis>,
    /// `b`'s element strides along the points' axes (broadcast).
    b_points: Strides,
    /// `b`'s element strides along `sub_axes` (broadcast).
    pub b_sub_strides: Strides,
}

/// An index array of [`AtPoints`].
struct IndexedAxis {
    /// The axis of `a` it indexes, that axis's length and element stride.
    axis: usize,
    len: usize,
    stride: isize,
    /// The strides of its elements' C-order positions along the points' axes (broadcast).
    positions: Strides,
}

impl AtPoints {
    /// `f(offsets in a, offsets in b)` of the points' sub-arrays, a few hundred points at a
    /// time, in order; `indices` are those the points were made from. A chunk's offsets are
    /// worked out one index array at a time, so that each loop is lean (as is the caller's
    /// loop over a chunk, which then keeps many of `a`'s random reads in flight).
    pub fn for_each_chunk(&self, indices: &impl AtIndices, mut f: impl FnMut(&[isize], &[isize])) {
        const CHUNK: usize = 256;
        let (mut a, mut b) = ([0isize; CHUNK], [0isize; CHUNK]);
        if let [points] = self.points[..] {
            // Points along one axis, the common case: position `k * step` in each array.
            for start in (0..points).step_by(CHUNK) {
                let m = CHUNK.min(points - start);
                let (a, b) = (&mut a[..m], &mut b[..m]);
                a.fill(0);
                for x in &self.indexed {
                    let (len, stride, step) = (x.len, x.stride, x.positions[0] as usize);
                    let a = &mut *a;
                    indices.each_index(x.axis, start * step, step, m, move |j, i| {
                        a[j] += normalized(i, len) * stride;
                    });
                }
                for (j, o) in b.iter_mut().enumerate() {
                    *o = (start + j) as isize * self.b_points[0];
                }
                f(a, b);
            }
            return;
        }
        let mut sets: Vec<&[isize]> = self.indexed.iter().map(|x| &x.positions[..]).collect();
        sets.push(&self.b_points);
        let n = self.indexed.len();
        let mut m = 0;
        c_order_offsets(&self.points, &sets, |at| {
            let positions = self.indexed.iter().zip(at);
            a[m] = positions
                .map(|(x, &p)| {
                    normalized(clamp(indices.index(x.axis, p as usize)), x.len) * x.stride
                })
                .sum();
            b[m] = at[n];
            m += 1;
            if m == CHUNK {
                f(&a, &b);
                m = 0;
            }
        });
        if m > 0 {
            f(&a[..m], &b[..m]);
        }
    }

    /// For points along one axis from one index array (the common case, `a[idx]`), `f(offset
    /// in a, offset in b)` of each point's sub-array in order, in one lean loop, and `true`;
    /// `false` (nothing called) for any other points.
    pub fn for_each_of_one(
        &self,
        indices: &impl AtIndices,
        mut f: impl FnMut(isize, isize),
    ) -> bool {
        let ([points], [x]) = (&self.points[..], &self.indexed[..]) else {
            return false;
        };
        let (len, stride, b_step) = (x.len, x.stride, self.b_points[0]);
        // `move`: the loop keeps `len`, the strides and `f`'s pointers in registers rather
        // than reloading them after each store through `a` (which could alias them).
        indices.each_index(x.axis, 0, x.positions[0] as usize, *points, move |k, i| {
            f(normalized(i, len) * stride, k as isize * b_step)
        });
        true
    }

    /// Each point's offset in `a` and in `b`, in order (`OutOfMemory` where index arrays
    /// broadcast to more points than memory holds).
    pub fn offsets(&self, indices: &impl AtIndices) -> Result<(Vec<isize>, Vec<isize>)> {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        a.try_reserve_exact(self.count)
            .and_then(|_| b.try_reserve_exact(self.count))
            .map_err(|_| Error::OutOfMemory {
                shape: self.points.to_vec(),
                bytes: self.count.saturating_mul(2 * size_of::<isize>()),
            })?;
        self.for_each_chunk(indices, |pa, pb| {
            a.extend_from_slice(pa);
            b.extend_from_slice(pb);
        });
        Ok((a, b))
    }
}

/// A checked index `i` of an axis of `len`, counted from the end where negative.
#[inline(always)]
fn normalized(i: isize, len: usize) -> isize {
    let i = if i < 0 { i + len as isize } else { i };
    debug_assert!((0..len as isize).contains(&i), "an unchecked index");
    i
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
    let indexed_axes: Vec<usize> = (0..axes).filter(|&i| entries[i].is_some()).collect();
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
    let count = element_count(&points)?;
    let mut indexed = Vec::with_capacity(shapes.len());
    for (&axis, own) in indexed_axes.iter().zip(&shapes) {
        let len = shape[axis];
        // NumPy checks an integer index even where no points are made; an array's only if
        // some are.
        if count > 0 || own.is_empty() {
            // The range first, in a loop that vectorises; the first bad index only if needed.
            let own_count = own.iter().product();
            let (mut lo, mut hi) = (0isize, 0isize);
            indices.each_index(axis, 0, 1, own_count, |_, i| {
                (lo, hi) = (lo.min(i), hi.max(i))
            });
            let in_bounds = |i: i128| i >= -(len as i128) && i < len as i128;
            if !in_bounds(lo as i128) || !in_bounds(hi as i128) {
                let index = (0..own_count)
                    .map(|k| indices.index(axis, k))
                    .find(|&i| !in_bounds(i))
                    .unwrap_or(i128::MAX);
                return Err(Error::IndexOutOfBounds {
                    function,
                    index,
                    axis,
                    len,
                });
            }
        }
        let positions = broadcast_strides_to(&points, own, &c_strides(own))?;
        indexed.push(IndexedAxis {
            axis,
            len,
            stride: strides[axis],
            positions,
        });
    }
    // `a[indices]`'s shape, as NumPy's: the points' axes where the index arrays are, if they
    // are side by side, else first.
    let sub_axes: Vec<usize> = (0..shape.len())
        .filter(|&i| i >= axes || entries[i].is_none())
        .collect();
    let side_by_side = indexed_axes.windows(2).all(|w| w[1] == w[0] + 1);
    let at = match indexed_axes.first() {
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
    let b_full =
        broadcast_strides_to(&full, b_shape, b_strides).map_err(|_| Error::InvalidArgument {
            name: "b",
            message: format!(
                "`{function}::at`: shape {} does not broadcast to the indexed shape {}",
                py_shape(b_shape),
                py_shape(&full)
            ),
        })?;
    let b_points = b_full[at..at + points.len()].into();
    let b_sub_strides = b_full[..at]
        .iter()
        .chain(&b_full[at + points.len()..])
        .copied()
        .collect();
    Ok(AtPoints {
        count,
        sub_axes,
        indexed,
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
        let (pa, pb) = (ra.ptr as *mut T, rb.ptr as *const T);
        let apply = move |i: isize, j: isize| {
            let (ea, eb) = (pa.wrapping_offset(i), pb.wrapping_offset(j));
            // SAFETY: an element of `a` and one of `b` (broadcast).
            unsafe { ea.write(kernels::call::<B, T>(ea.read(), eb.read())) };
        };
        // Every axis indexed (a histogram), one element a point: one fused loop for one index
        // array.
        if n_sub == 1 && at.for_each_of_one(&indices, apply) {
            return;
        }
        // One element or one row at each point (`a[idx]` of a 2-d `a`): a plain loop.
        let row = match sub_shape[..] {
            _ if n_sub == 1 => Some((1, 0, 0)),
            [len] => Some((len as isize, sub_strides[0], at.b_sub_strides[0])),
            _ => None,
        };
        if let Some((len, sa, sb)) = row {
            return at.for_each_chunk(&indices, move |a_offsets, b_offsets| {
                for (&i, &j) in a_offsets.iter().zip(b_offsets) {
                    for t in 0..len {
                        apply(i + t * sa, j + t * sb);
                    }
                }
            });
        }
        at.for_each_chunk(&indices, move |a_offsets, b_offsets| {
            for (&a_offset, &b_offset) in a_offsets.iter().zip(b_offsets) {
                let pa = ra.ptr.wrapping_offset(a_offset * size as isize);
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
            }
        });
    })
}
