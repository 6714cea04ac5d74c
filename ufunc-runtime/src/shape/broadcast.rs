//! NumPy broadcasting: shapes are aligned on the right; an axis of length 1 (or a missing one)
//! stretches to the other operands' length by a stride of 0.

use super::layout::{Shape, Strides};
use crate::error::{Error, Result};

/// The broadcast shape of `shapes`, by NumPy's rules.
///
/// ```
/// use ufunc_runtime::broadcast_shapes;
/// assert_eq!(broadcast_shapes(&[&[4000, 4000], &[4000]]).unwrap(), vec![4000, 4000]);
/// assert_eq!(broadcast_shapes(&[&[2, 1, 3], &[5, 1], &[]]).unwrap(), vec![2, 5, 3]);
/// assert_eq!(broadcast_shapes(&[&[0], &[1]]).unwrap(), vec![0]);
/// assert!(broadcast_shapes(&[&[0], &[3]]).is_err());
/// ```
pub fn broadcast_shapes(shapes: &[&[usize]]) -> Result<Vec<usize>> {
    broadcast_shape(shapes.len(), |i| shapes[i]).map(|s| s.to_vec())
}

/// [`broadcast_shapes`] over `count` shapes given by `shape_of`, without allocating.
pub(crate) fn broadcast_shape<'s>(
    count: usize,
    shape_of: impl Fn(usize) -> &'s [usize],
) -> Result<Shape> {
    let ndim = (0..count).map(|i| shape_of(i).len()).max().unwrap_or(0);
    let mut out: Shape = smallvec::smallvec![1usize; ndim];
    for shape in (0..count).map(&shape_of) {
        let offset = ndim - shape.len();
        for (axis, &n) in shape.iter().enumerate() {
            let o = &mut out[offset + axis];
            if n == 1 || n == *o {
                continue;
            }
            if *o != 1 {
                return Err(Error::Broadcast {
                    shapes: (0..count).map(|i| shape_of(i).to_vec()).collect(),
                });
            }
            *o = n;
        }
    }
    Ok(out)
}

/// The strides an operand of `shape`/`strides` has when viewed with the broadcast shape `out`:
/// 0 on every stretched or prepended axis; `Error::Broadcast` if `shape` does not broadcast
/// to `out`.
///
/// ```
/// use ufunc_runtime::broadcast_strides;
/// assert_eq!(broadcast_strides(&[3, 4], &[4], &[1]).unwrap(), vec![0, 1]);
/// assert_eq!(broadcast_strides(&[3, 4], &[3, 1], &[1, 1]).unwrap(), vec![1, 0]);
/// assert!(broadcast_strides(&[3, 4], &[2, 4], &[4, 1]).is_err());
/// ```
pub fn broadcast_strides(out: &[usize], shape: &[usize], strides: &[isize]) -> Result<Vec<isize>> {
    broadcast_strides_to(out, shape, strides).map(|s| s.to_vec())
}

/// [`broadcast_strides`] without allocating.
pub(crate) fn broadcast_strides_to(
    out: &[usize],
    shape: &[usize],
    strides: &[isize],
) -> Result<Strides> {
    let mismatch = || Error::Broadcast {
        shapes: vec![shape.to_vec(), out.to_vec()],
    };
    let offset = out.len().checked_sub(shape.len()).ok_or_else(mismatch)?;
    let mut s: Strides = smallvec::smallvec![0isize; out.len()];
    for (axis, (&n, &st)) in shape.iter().zip(strides).enumerate() {
        match n {
            1 => {}
            n if n == out[offset + axis] => s[offset + axis] = st,
            _ => return Err(mismatch()),
        }
    }
    Ok(s)
}

/// Checks that each output has the shape expected of it: `OutputShape` names the first that
/// does not.
pub(crate) fn check_output_shapes<'s>(
    found: impl Iterator<Item = &'s [usize]>,
    expected: impl Iterator<Item = &'s [usize]>,
) -> Result<()> {
    for (output, (found, expected)) in found.zip(expected).enumerate() {
        if found != expected {
            return Err(Error::OutputShape {
                output,
                expected: expected.to_vec(),
                found: found.to_vec(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_dim_and_empty() {
        assert_eq!(broadcast_shapes(&[]).unwrap(), Vec::<usize>::new());
        assert_eq!(broadcast_shapes(&[&[], &[]]).unwrap(), Vec::<usize>::new());
        assert_eq!(broadcast_shapes(&[&[], &[0, 3]]).unwrap(), vec![0, 3]);
        assert_eq!(broadcast_shapes(&[&[1, 0], &[5, 1]]).unwrap(), vec![5, 0]);
    }

    #[test]
    fn mismatch_names_all_shapes() {
        let e = broadcast_shapes(&[&[2, 3], &[3], &[4, 1]]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "operands could not be broadcast together with shapes (2,3) (3,) (4,1)"
        );
    }

    #[test]
    fn strides_of_size_one_axes_are_zero() {
        assert_eq!(
            broadcast_strides(&[1, 4], &[1, 4], &[4, 1]).unwrap(),
            vec![0, 1]
        );
        assert_eq!(broadcast_strides(&[2, 3], &[], &[]).unwrap(), vec![0, 0]);
        assert_eq!(
            broadcast_strides(&[2, 3], &[2, 3], &[-3, -1]).unwrap(),
            vec![-3, -1]
        );
        assert!(
            broadcast_strides(&[3], &[2, 3], &[3, 1]).is_err(),
            "more axes than out"
        );
    }
}
