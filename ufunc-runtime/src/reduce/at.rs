//! `f::at`: unbuffered in-place application at indices, NumPy's `ufunc.at`, and the index forms
//! it takes: one list along the first axis, or a tuple of lists for the first k axes.

use crate::body::Body;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::operand::{Operand, OutOperand};
use crate::panic::catching_panics;
use crate::shape::{broadcast_strides_to, byte_strides, walk_rows, Strides};
use ndarray::{ArrayBase, Data, Ix1};

use super::kernels;

/// One list of indices along an axis, for `f::at`: a slice, array or `Vec` of integers, or a
/// 1-d `ndarray` array or view of them. Negative indices count from the end.
pub trait IndexList {
    /// How many indices there are.
    fn index_count(&self) -> usize;
    /// Index `k`, widened (`i128::MAX` for a value that does not fit, which is then out of
    /// bounds).
    fn index_at(&self, k: usize) -> i128;
}

fn widen<I: Copy + TryInto<i128>>(i: I) -> i128 {
    i.try_into().unwrap_or(i128::MAX)
}

impl<I: Copy + TryInto<i128>> IndexList for [I] {
    fn index_count(&self) -> usize {
        self.len()
    }
    fn index_at(&self, k: usize) -> i128 {
        widen(self[k])
    }
}

impl<I: Copy + TryInto<i128>, const N: usize> IndexList for [I; N] {
    fn index_count(&self) -> usize {
        N
    }
    fn index_at(&self, k: usize) -> i128 {
        widen(self[k])
    }
}

impl<I: Copy + TryInto<i128>> IndexList for Vec<I> {
    fn index_count(&self) -> usize {
        self.len()
    }
    fn index_at(&self, k: usize) -> i128 {
        widen(self[k])
    }
}

/// A reference to a list is the list (`&idx` where `idx` is already a `&[usize]`).
impl<L: IndexList + ?Sized> IndexList for &L {
    fn index_count(&self) -> usize {
        (**self).index_count()
    }
    fn index_at(&self, k: usize) -> i128 {
        (**self).index_at(k)
    }
}

impl<I: Copy + TryInto<i128>, S: Data<Elem = I>> IndexList for ArrayBase<S, Ix1> {
    fn index_count(&self) -> usize {
        self.len()
    }
    fn index_at(&self, k: usize) -> i128 {
        widen(self[k])
    }
}

/// The indices of `f::at`, as NumPy's `indices`: one list for the first axis (`&[1, 3, 1]`, a
/// `&Vec`, a `&Array1`), or a tuple of lists, one per leading axis (`(&rows, &cols)`, up to four),
/// paired element by element; a list of one index broadcasts against the others. `()` addresses
/// the whole array. NumPy's slices inside the tuple have no form here: index a view whose
/// sliced axes come after the indexed ones, with `b`'s axes permuted to match (for
/// `(slice(None), idx)` of a 3-d `a`: `a.view_mut().permuted_axes([1, 0, 2])` with `idx`, and
/// `b` permuted the same way).
pub trait AtIndices {
    /// How many leading axes the lists index.
    fn axes(&self) -> usize;
    /// The length of the list for `axis` (below [`axes`](Self::axes)).
    fn count(&self, axis: usize) -> usize;
    /// Index `k` of the list for `axis`.
    fn index(&self, axis: usize, k: usize) -> i128;
}

impl<L: IndexList + ?Sized> AtIndices for &L {
    fn axes(&self) -> usize {
        1
    }
    fn count(&self, _axis: usize) -> usize {
        self.index_count()
    }
    fn index(&self, _axis: usize, k: usize) -> i128 {
        self.index_at(k)
    }
}

/// No list: the indices address the whole array once (NumPy's `a[()]`, as `np.add.at(a, (), 1)`).
impl AtIndices for () {
    fn axes(&self) -> usize {
        0
    }
    fn count(&self, _axis: usize) -> usize {
        0
    }
    fn index(&self, _axis: usize, _k: usize) -> i128 {
        i128::MAX
    }
}

macro_rules! tuple_indices {
    ($n:literal: $($l:ident $i:tt),+) => {
        impl<$($l: IndexList + ?Sized),+> AtIndices for ($(&$l,)+) {
            fn axes(&self) -> usize {
                $n
            }
            fn count(&self, axis: usize) -> usize {
                match axis {
                    $($i => self.$i.index_count(),)+
                    _ => 0,
                }
            }
            fn index(&self, axis: usize, k: usize) -> i128 {
                match axis {
                    $($i => self.$i.index_at(k),)+
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

/// Where `f::at` applies, checked before `a` is touched.
pub(crate) struct AtPoints {
    /// The element offset in `a` of each indexed sub-array, in order.
    pub offsets: Vec<isize>,
    /// How many leading axes of `a` the indices consume.
    pub axes: usize,
    /// The element strides of `b` broadcast to `(offsets.len(),) + a.shape[axes..]`.
    pub b_strides: Strides,
}

/// The points of `indices` in `a` of `shape` and element `strides`: every index counted from
/// the end where negative (`Error::IndexOutOfBounds`, naming the axis, for one past either
/// end), the lists broadcast together, and `b` (`b_shape`, `b_strides`) broadcast to
/// `(points,) + shape[k..]` for `k` lists.
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
    let counts: Vec<usize> = (0..axes).map(|axis| indices.count(axis)).collect();
    let points = counts.iter().copied().find(|&n| n != 1).unwrap_or(1);
    if counts.iter().any(|&n| n != 1 && n != points) {
        return Err(Error::InvalidArgument {
            name: "indices",
            message: format!(
                "`{function}::at`: shape mismatch: index lists of lengths {counts:?} could not be \
                 broadcast together"
            ),
        });
    }
    let mut offsets = vec![0isize; points];
    for (axis, &count) in counts.iter().enumerate() {
        let len = shape[axis];
        for (k, offset) in offsets.iter_mut().enumerate() {
            let index = indices.index(axis, if count == 1 { 0 } else { k });
            let i = if index < 0 {
                index + len as i128
            } else {
                index
            };
            if i < 0 || i >= len as i128 {
                return Err(Error::IndexOutOfBounds {
                    function,
                    index,
                    axis,
                    len,
                });
            }
            *offset += i as isize * strides[axis];
        }
    }
    let b_strides = if axes == 0 {
        // `a[()]` is `a` itself: `b` broadcasts to `a`'s shape, with no axis of points.
        let s = broadcast_strides_to(shape, b_shape, b_strides)?;
        std::iter::once(0).chain(s).collect()
    } else {
        let full: Vec<usize> = std::iter::once(points)
            .chain(shape[axes..].iter().copied())
            .collect();
        broadcast_strides_to(&full, b_shape, b_strides)?
    };
    Ok(AtPoints {
        offsets,
        axes,
        b_strides,
    })
}

/// Unbuffered in-place `a[p_k, ..] = f(a[p_k, ..], b[k, ..])` for each point `p_k` of
/// `indices` in order, so a repeated point is applied repeatedly; `b` broadcasts to
/// `(points,) + a.shape[k..]` for `k` index lists. Every index is checked before `a` is
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
    let sub_shape = &ra.shape[at.axes..];
    let size = size_of::<T>();
    let a_bytes = byte_strides(&ra.strides[at.axes..], size);
    let b_bytes = byte_strides(&at.b_strides[1..], size);
    let (ia, ib) = (*a_bytes.last().unwrap_or(&0), *b_bytes.last().unwrap_or(&0));
    let n_sub: usize = sub_shape.iter().product();
    catching_panics(B::NAME, || {
        for (k, &offset) in at.offsets.iter().enumerate() {
            let pa = ra.ptr.wrapping_offset(offset * size as isize);
            let pb =
                (rb.ptr as *mut u8).wrapping_offset(k as isize * at.b_strides[0] * size as isize);
            walk_rows(
                sub_shape,
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
    })
}
