//! Strides and sizes, the one place they are computed: C-order strides, contiguity, and
//! element and byte counts checked against overflow.

use crate::error::{Error, Result};
use smallvec::SmallVec;

/// A shape that stays on the stack up to 8 dimensions.
pub(crate) type Shape = SmallVec<[usize; 8]>;
/// Strides (in elements or bytes, as each use says) on the stack up to 8 dimensions.
pub(crate) type Strides = SmallVec<[isize; 8]>;

/// Element strides of a standard-layout (C order) array of `shape`.
pub(crate) fn c_strides(shape: &[usize]) -> Strides {
    let mut strides: Strides = smallvec::smallvec![0isize; shape.len()];
    let mut s = 1isize;
    for (st, &n) in strides.iter_mut().zip(shape).rev() {
        *st = s;
        s = s.wrapping_mul(n.max(1) as isize);
    }
    strides
}

/// Whether an operand of `shape` and element `strides` is one C-order block: every axis
/// longer than 1 steps by the product of the lengths after it. An operand with no elements
/// is contiguous whatever its strides (there is nothing to address).
pub(crate) fn is_c_contiguous(shape: &[usize], strides: &[isize]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let mut expected = 1isize;
    for (&n, &s) in shape.iter().zip(strides).rev() {
        if n != 1 && s != expected {
            return false;
        }
        expected = expected.wrapping_mul(n as isize);
    }
    true
}

/// The number of elements of `shape` (0 if any length is 0), or `Error::TooLarge` if it
/// overflows `usize`.
///
/// ```
/// use ufunc_runtime::element_count;
/// assert_eq!(element_count(&[2, 3, 4]).unwrap(), 24);
/// assert_eq!(element_count(&[]).unwrap(), 1);
/// assert_eq!(element_count(&[usize::MAX, 2, 0]).unwrap(), 0);
/// assert!(element_count(&[usize::MAX, 2]).is_err());
/// ```
pub fn element_count(shape: &[usize]) -> Result<usize> {
    if shape.contains(&0) {
        return Ok(0);
    }
    shape
        .iter()
        .try_fold(1usize, |acc, &n| acc.checked_mul(n))
        .ok_or_else(|| Error::TooLarge {
            shape: shape.to_vec(),
        })
}

/// The bytes of an array of `shape` with elements of `elem_size` bytes: `Error::TooLarge`
/// unless they fit in `isize` (the most one allocation, host or device, may hold). The
/// product of the non-zero lengths must fit too, even when a zero length makes the array
/// empty: ndarray refuses (panics on) shapes that break that rule.
pub(crate) fn byte_size(shape: &[usize], elem_size: usize) -> Result<usize> {
    let too_large = || Error::TooLarge {
        shape: shape.to_vec(),
    };
    let nonzero_bytes = shape
        .iter()
        .filter(|&&n| n != 0)
        .try_fold(elem_size.max(1), |acc, &n| acc.checked_mul(n))
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(too_large)?;
    Ok(if shape.contains(&0) {
        0
    } else {
        nonzero_bytes / elem_size.max(1) * elem_size
    })
}

/// The sub-space of `shape` made of `axes` (in the order given), with each operand's strides
/// along them: what a parallel split walks when only some axes may be split (a reduction
/// splits the axes it keeps and walks the reduced ones itself).
#[cfg_attr(not(test), allow(dead_code))] // reductions (issue 12) are its first caller
pub(crate) fn select_axes<S: AsRef<[isize]>>(
    shape: &[usize],
    strides: &[S],
    axes: &[usize],
) -> (Shape, Vec<Strides>) {
    let sub_shape = axes.iter().map(|&a| shape[a]).collect();
    let sub_strides = strides
        .iter()
        .map(|s| axes.iter().map(|&a| s.as_ref()[a]).collect())
        .collect();
    (sub_shape, sub_strides)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguity() {
        assert!(is_c_contiguous(&[2, 3], &[3, 1]));
        assert!(!is_c_contiguous(&[2, 3], &[1, 2]));
        assert!(
            is_c_contiguous(&[1, 3], &[99, 1]),
            "size-1 axes take any stride"
        );
        assert!(
            is_c_contiguous(&[0, 3], &[7, 5]),
            "no elements: nothing to address"
        );
        assert!(is_c_contiguous(&[], &[]));
        assert!(!is_c_contiguous(&[4], &[-1]));
        assert!(is_c_contiguous(&[3, 4], &c_strides(&[3, 4])));
        assert_eq!(c_strides(&[2, 0, 3]).as_slice(), &[3, 3, 1]);
    }

    #[test]
    fn selected_axes_keep_their_strides() {
        let (shape, strides) = select_axes(&[2, 3, 4], &[[12isize, 4, 1], [0, 1, 3]], &[0, 2]);
        assert_eq!(shape.as_slice(), &[2, 4]);
        assert_eq!(strides[0].as_slice(), &[12, 1]);
        assert_eq!(strides[1].as_slice(), &[0, 3]);
    }

    #[test]
    fn sizes_are_checked() {
        assert_eq!(byte_size(&[4, 4], 8).unwrap(), 128);
        assert!(matches!(
            byte_size(&[1 << 61], 8),
            Err(Error::TooLarge { .. })
        ));
        assert!(
            byte_size(&[usize::MAX / 2 + 1], 1).is_err(),
            "beyond isize::MAX"
        );
        assert_eq!(byte_size(&[0, 5], 8).unwrap(), 0);
        // Empty, but ndarray would refuse it: the non-zero lengths overflow isize.
        assert!(byte_size(&[0, 1 << 32, 1 << 32], 4).is_err());
        assert!(byte_size(&[0, usize::MAX], 8).is_err());
        assert_eq!(byte_size(&[3, 0], 0).unwrap(), 0);
    }
}
