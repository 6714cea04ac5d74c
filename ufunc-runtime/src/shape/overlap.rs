//! Memory overlap between operands, as NumPy checks it before a ufunc runs: an input that
//! shares memory with an output is read from a copy, unless it is that output element for
//! element (an in-place `a = f(a)`), so every target gives the answer of copy-then-compute.

use super::broadcast::broadcast_strides_to;
use super::layout::{c_strides, Strides};
use super::walk::c_order_bytes;
use crate::operand::{RawOperand, RawOperands, RawOutOperand};

/// The half-open byte range `[lo, hi)` an operand's elements occupy; `None` if it has none.
fn byte_extent(
    ptr: *const u8,
    shape: &[usize],
    strides: &[isize],
    size: usize,
) -> Option<(usize, usize)> {
    if shape.contains(&0) {
        return None;
    }
    let (mut lo, mut hi) = (ptr as isize, ptr as isize);
    for (&n, &s) in shape.iter().zip(strides) {
        let reach = (n as isize - 1).wrapping_mul(s).wrapping_mul(size as isize);
        if reach < 0 {
            lo = lo.wrapping_add(reach);
        } else {
            hi = hi.wrapping_add(reach);
        }
    }
    Some((lo as usize, hi as usize + size))
}

fn overlap(a: Option<(usize, usize)>, b: Option<(usize, usize)>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if a.0 < b.1 && b.0 < a.1)
}

/// Copies of the inputs of one call that overlap an output.
#[derive(Default)]
pub(crate) struct InputCopies {
    copies: Vec<(usize, Vec<u128>, Strides)>,
}

impl InputCopies {
    /// Finds the inputs that share memory with an output and copies them. `elementwise`: the
    /// call's broadcast shape, for a ufunc, whose in-place form (an input laid out exactly as
    /// an output) needs no copy; `None` for a gufunc, whose core reads any element.
    pub(crate) fn of(
        ins: &[RawOperand<'_>],
        in_sizes: &[usize],
        outs: &[RawOutOperand<'_>],
        out_sizes: &[usize],
        elementwise: Option<&[usize]>,
    ) -> InputCopies {
        let out_extents: Vec<_> = outs
            .iter()
            .zip(out_sizes)
            .map(|(o, &size)| byte_extent(o.ptr, o.shape, o.strides, size))
            .collect();
        let mut copies = Vec::new();
        for (k, (op, &size)) in ins.iter().zip(in_sizes).enumerate() {
            let extent = byte_extent(op.ptr, op.shape, op.strides, size);
            let shared = outs
                .iter()
                .zip(&out_extents)
                .zip(out_sizes)
                .any(|((o, &oe), &osize)| {
                    overlap(extent, oe) && !same_elements(op, size, o, osize, elementwise)
                });
            if shared {
                // SAFETY: a `RawOperand` describes live elements of `size` bytes.
                let bytes = unsafe { c_order_bytes(op.ptr, op.shape, op.strides, size) };
                let mut buf = vec![0u128; bytes.len().div_ceil(16)];
                // SAFETY: `buf` holds at least `bytes.len()` bytes; they do not overlap.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        bytes.as_ptr(),
                        buf.as_mut_ptr() as *mut u8,
                        bytes.len(),
                    )
                };
                copies.push((k, buf, c_strides(op.shape)));
            }
        }
        InputCopies { copies }
    }

    /// The inputs, the copied ones pointing at their copies.
    pub(crate) fn apply<'a>(&'a self, ins: &[RawOperand<'a>]) -> RawOperands<'a> {
        let mut ins: RawOperands<'a> = ins.iter().copied().collect();
        for (k, buf, strides) in &self.copies {
            ins[*k] = RawOperand {
                ptr: buf.as_ptr() as *const u8,
                shape: ins[*k].shape,
                strides,
            };
        }
        ins
    }
}

/// Whether input `op`, broadcast to the call's `shape`, is output `o` element for element.
fn same_elements(
    op: &RawOperand<'_>,
    size: usize,
    o: &RawOutOperand<'_>,
    osize: usize,
    shape: Option<&[usize]>,
) -> bool {
    let Some(shape) = shape else {
        return false;
    };
    size == osize
        && std::ptr::eq(op.ptr, o.ptr)
        && broadcast_strides_to(shape, op.shape, op.strides).is_ok_and(|s| {
            s.iter()
                .zip(o.strides)
                .zip(shape)
                .all(|((&a, &b), &n)| n <= 1 || a == b)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extents_follow_negative_strides() {
        let base = 1000 as *const u8;
        assert_eq!(byte_extent(base, &[3, 4], &[4, 1], 4), Some((1000, 1048)));
        assert_eq!(byte_extent(base, &[3], &[-1], 8), Some((984, 1008)));
        assert_eq!(byte_extent(base, &[0, 4], &[4, 1], 4), None);
        assert!(overlap(Some((0, 8)), Some((4, 12))));
        assert!(!overlap(Some((0, 8)), Some((8, 12))));
    }
}
