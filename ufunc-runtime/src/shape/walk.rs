//! The one n-d walk: the rows (runs along the last axis) of a C-order iteration space, with one
//! pointer per operand kept in step. The CPU engine, the gufunc runner, the CUDA host path and
//! device views all walk arrays through it; strided copies (gather into C order, scatter back)
//! are built on it.

use super::layout::{is_c_contiguous, Strides};
use smallvec::SmallVec;
use std::ops::Range;

/// Operand pointers of one row, on the stack for up to 16 operands.
pub(crate) type RowPtrs = SmallVec<[*mut u8; 16]>;

/// Calls `row(ptrs, j, len)` for every run of the last axis that the flat C-order indices
/// `range` of `shape` cover: `ptrs[k]` is operand `k`'s address of element 0 of that row, and
/// the run is its elements `j..j + len`. `byte_strides[k]` gives operand `k`'s stride in bytes
/// along each axis of `shape`. A 0-d shape is one row of one element.
///
/// The walk itself only offsets pointers (`wrapping_offset`); dereferencing them is the
/// caller's business.
pub(crate) fn walk_rows<S: AsRef<[isize]>>(
    shape: &[usize],
    byte_strides: &[S],
    bases: &[*mut u8],
    range: Range<usize>,
    mut row: impl FnMut(&[*mut u8], usize, usize),
) {
    if range.is_empty() {
        return;
    }
    if shape.is_empty() {
        return row(bases, 0, 1);
    }
    let nd = shape.len();
    let inner = shape[nd - 1];
    let mut ptrs: RowPtrs = bases.iter().copied().collect();
    let mut idx: SmallVec<[usize; 8]> = smallvec::smallvec![0; nd - 1];
    let mut rest = range.start / inner;
    for a in (0..nd - 1).rev() {
        idx[a] = rest % shape[a];
        rest /= shape[a];
        for (p, s) in ptrs.iter_mut().zip(byte_strides) {
            *p = p.wrapping_offset(idx[a] as isize * s.as_ref()[a]);
        }
    }
    let mut j = range.start % inner;
    let mut remaining = range.len();
    loop {
        let len = (inner - j).min(remaining);
        row(&ptrs, j, len);
        remaining -= len;
        if remaining == 0 {
            return;
        }
        j = 0;
        for a in (0..nd - 1).rev() {
            idx[a] += 1;
            for (p, s) in ptrs.iter_mut().zip(byte_strides) {
                *p = p.wrapping_offset(s.as_ref()[a]);
            }
            if idx[a] < shape[a] {
                break;
            }
            for (p, s) in ptrs.iter_mut().zip(byte_strides) {
                *p = p.wrapping_offset(-(shape[a] as isize) * s.as_ref()[a]);
            }
            idx[a] = 0;
        }
    }
}

/// Element strides scaled to bytes.
pub(crate) fn byte_strides(strides: &[isize], size: usize) -> Strides {
    strides.iter().map(|&s| s * size as isize).collect()
}

/// Copies `n` elements of `size` bytes between strided locations (strides in bytes).
///
/// # Safety
/// Both locations hold `n` elements at those strides; they do not overlap.
pub(crate) unsafe fn copy_strided(
    dst: *mut u8,
    dst_stride: isize,
    src: *const u8,
    src_stride: isize,
    size: usize,
    n: usize,
) {
    unsafe fn copy<T: Copy>(dst: *mut u8, ds: isize, src: *const u8, ss: isize, n: usize) {
        for i in 0..n as isize {
            // SAFETY: the caller's contract, element by element.
            unsafe {
                let v = (src.offset(i * ss) as *const T).read_unaligned();
                (dst.offset(i * ds) as *mut T).write_unaligned(v);
            }
        }
    }
    // SAFETY: the caller's contract; each arm copies whole elements of `size` bytes.
    unsafe {
        match size {
            1 => copy::<u8>(dst, dst_stride, src, src_stride, n),
            2 => copy::<u16>(dst, dst_stride, src, src_stride, n),
            4 => copy::<u32>(dst, dst_stride, src, src_stride, n),
            8 => copy::<u64>(dst, dst_stride, src, src_stride, n),
            16 => copy::<[u64; 2]>(dst, dst_stride, src, src_stride, n),
            _ => {
                for i in 0..n as isize {
                    std::ptr::copy_nonoverlapping(
                        src.offset(i * src_stride),
                        dst.offset(i * dst_stride),
                        size,
                    );
                }
            }
        }
    }
}

/// An operand's elements in C order: borrowed when it is already one C-order block, else
/// gathered into a new buffer.
///
/// # Safety
/// `ptr`, `shape` and element `strides` describe live elements of `size` bytes.
pub(crate) unsafe fn c_order_bytes<'a>(
    ptr: *const u8,
    shape: &[usize],
    strides: &[isize],
    size: usize,
) -> std::borrow::Cow<'a, [u8]> {
    let n: usize = shape.iter().product();
    if is_c_contiguous(shape, strides) {
        // SAFETY: one C-order block of `n` elements starts at `ptr`.
        return std::borrow::Cow::Borrowed(unsafe { std::slice::from_raw_parts(ptr, n * size) });
    }
    let mut out = vec![0u8; n * size];
    let src = byte_strides(strides, size);
    let mut dst = out.as_mut_ptr();
    let inner = *src.last().unwrap_or(&0);
    walk_rows(shape, &[src], &[ptr as *mut u8], 0..n, |p, j, len| {
        // SAFETY: the row lies inside the operand; `out` has room for all `n` elements.
        unsafe {
            copy_strided(
                dst,
                size as isize,
                p[0].wrapping_offset(j as isize * inner),
                inner,
                size,
                len,
            );
            dst = dst.add(len * size);
        }
    });
    std::borrow::Cow::Owned(out)
}

/// The inverse of [`c_order_bytes`]: C-order `bytes` written into an operand of any strides.
///
/// # Safety
/// `ptr`, `shape` and element `strides` describe live, writable elements of `size` bytes, as
/// many as `bytes` holds, not overlapping `bytes`.
pub(crate) unsafe fn scatter_c_order(
    bytes: &[u8],
    ptr: *mut u8,
    shape: &[usize],
    strides: &[isize],
    size: usize,
) {
    if is_c_contiguous(shape, strides) {
        // SAFETY: the operand is one C-order block of exactly `bytes.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, bytes.len()) };
        return;
    }
    let dst = byte_strides(strides, size);
    let mut src = bytes.as_ptr();
    let inner = *dst.last().unwrap_or(&0);
    walk_rows(shape, &[dst], &[ptr], 0..bytes.len() / size, |p, j, len| {
        // SAFETY: as in `c_order_bytes`, for the caller's writable operand.
        unsafe {
            copy_strided(
                p[0].wrapping_offset(j as isize * inner),
                inner,
                src,
                size as isize,
                size,
                len,
            );
            src = src.add(len * size);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(shape: &[usize], range: Range<usize>) -> Vec<(isize, usize, usize)> {
        let strides = byte_strides(&super::super::layout::c_strides(shape), 1);
        let mut seen = Vec::new();
        walk_rows(
            shape,
            &[strides],
            &[std::ptr::null_mut()],
            range,
            |p, j, len| seen.push((p[0] as isize, j, len)),
        );
        seen
    }

    #[test]
    fn rows_cover_the_range_in_c_order() {
        // (2,3,4): rows start at 0, 4, 8, 12, 16, 20.
        assert_eq!(rows(&[2, 3, 4], 0..24).len(), 6);
        assert_eq!(
            rows(&[2, 3, 4], 6..15),
            vec![(4, 2, 2), (8, 0, 4), (12, 0, 3)]
        );
        assert_eq!(rows(&[], 0..1), vec![(0, 0, 1)]);
        assert!(rows(&[3, 0], 0..0).is_empty());
        assert_eq!(rows(&[5], 1..3), vec![(0, 1, 2)]);
    }

    #[test]
    fn gather_and_scatter_follow_strides() {
        // A (2,3) i32 array seen transposed: shape (3,2), strides (1,3).
        let data: Vec<i32> = (0..6).collect();
        let bytes = unsafe { c_order_bytes(data.as_ptr() as *const u8, &[3, 2], &[1, 3], 4) };
        let got: Vec<i32> = bytes
            .chunks_exact(4)
            .map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(got, vec![0, 3, 1, 4, 2, 5]);
        assert!(matches!(
            unsafe { c_order_bytes(data.as_ptr() as *const u8, &[2, 3], &[3, 1], 4) },
            std::borrow::Cow::Borrowed(_)
        ));
        let mut out = vec![0i32; 6];
        unsafe { scatter_c_order(&bytes, out.as_mut_ptr() as *mut u8, &[3, 2], &[1, 3], 4) };
        assert_eq!(out, data);
        // Negative strides: the reversed vector.
        let rev = unsafe { c_order_bytes((data.as_ptr() as *const u8).add(20), &[6], &[-1], 4) };
        assert_eq!(&rev[..4], &5i32.to_ne_bytes());
        assert_eq!(&rev[20..], &0i32.to_ne_bytes());
    }
}
