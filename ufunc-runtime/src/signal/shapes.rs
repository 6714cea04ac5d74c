//! SciPy's rules for the shapes of a convolution, as small named steps: which axes are
//! convolved (`init_axes`, SciPy's `_init_freq_conv_axes`), whether `valid` swaps the inputs
//! (`inputs_swap_needed`), and which part of the full result each mode keeps (`mode_window`,
//! SciPy's `_apply_conv_mode` and `_centered`).

use super::Mode;
use crate::error::{Error, Result};

/// The convolved axes of inputs of shapes `s1` and `s2` (same length): `axes` (all by
/// default) checked, minus those where either length is 1 (a plain product there). The other
/// axes must be equal or 1.
pub(crate) fn init_axes(s1: &[usize], s2: &[usize], axes: Option<&[usize]>) -> Result<Vec<usize>> {
    let ndim = s1.len();
    let given: Vec<usize> = match axes {
        Some(a) => a.to_vec(),
        None => (0..ndim).collect(),
    };
    if axes.is_some_and(|a| a.is_empty()) {
        return Err(Error::InvalidArgument {
            name: "axes",
            message: "when given, the axes cannot be empty".into(),
        });
    }
    for (i, &axis) in given.iter().enumerate() {
        if axis >= ndim {
            let reason = "cannot be convolved along an axis they do not have";
            return Err(shapes_error(s1, s2, &given, reason));
        }
        if given[..i].contains(&axis) {
            let reason = "cannot be convolved twice along one axis";
            return Err(shapes_error(s1, s2, &given, reason));
        }
    }
    let convolved: Vec<usize> = given
        .into_iter()
        .filter(|&a| s1[a] != 1 && s2[a] != 1)
        .collect();
    let compatible = (0..ndim)
        .filter(|a| !convolved.contains(a))
        .all(|a| s1[a] == s2[a] || s1[a] == 1 || s2[a] == 1);
    if !compatible {
        return Err(shapes_error(
            s1,
            s2,
            &convolved,
            "must be equal or 1 on the axes not convolved",
        ));
    }
    Ok(convolved)
}

/// Whether `valid` mode must swap the inputs (`in2` at least as large on every axis), or an
/// error when neither input is at least as large as the other on every convolved axis.
pub(crate) fn inputs_swap_needed(
    mode: Mode,
    s1: &[usize],
    s2: &[usize],
    axes: &[usize],
) -> Result<bool> {
    if mode != Mode::Valid || s1.is_empty() {
        return Ok(false);
    }
    let ok1 = axes.iter().all(|&a| s1[a] >= s2[a]);
    let ok2 = axes.iter().all(|&a| s2[a] >= s1[a]);
    if !(ok1 || ok2) {
        return Err(shapes_error(
            s1,
            s2,
            axes,
            "do not fit mode `valid`: one must be at least as large as the other on every convolved axis",
        ));
    }
    Ok(!ok1)
}

pub(crate) fn shapes_error(
    s1: &[usize],
    s2: &[usize],
    axes: &[usize],
    reason: &'static str,
) -> Error {
    Error::ConvolveShapes {
        shapes: [s1.to_vec(), s2.to_vec()],
        axes: axes.to_vec(),
        reason,
    }
}

/// The shape of the full result: `s1 + s2 - 1` on the convolved axes, the larger length on
/// the others (they broadcast).
pub(crate) fn full_shape(s1: &[usize], s2: &[usize], axes: &[usize]) -> Vec<usize> {
    (0..s1.len())
        .map(|a| {
            if axes.contains(&a) {
                s1[a] + s2[a] - 1
            } else {
                s1[a].max(s2[a])
            }
        })
        .collect()
}

/// The part of the full result of shape `full` that `mode` keeps, as (start, length) per
/// axis. `s1`, `s2` are the shapes after any `valid` swap; `same` is centred on `s1`.
pub(crate) fn mode_window(
    mode: Mode,
    full: &[usize],
    s1: &[usize],
    s2: &[usize],
    axes: &[usize],
) -> Vec<(usize, usize)> {
    let keep: Vec<usize> = match mode {
        Mode::Full => return full.iter().map(|&n| (0, n)).collect(),
        Mode::Same => s1.to_vec(),
        Mode::Valid => (0..full.len())
            .map(|a| {
                if axes.contains(&a) {
                    s1[a] - s2[a] + 1
                } else {
                    full[a]
                }
            })
            .collect(),
    };
    // SciPy's `_centered`: start at (current - new) // 2.
    full.iter()
        .zip(keep)
        .map(|(&n, k)| ((n - k.min(n)) / 2, k.min(n)))
        .collect()
}

/// A convolution's shapes resolved by SciPy's rules, for the host and the device paths alike.
pub(crate) enum ConvShapes {
    /// Two 0-d inputs: their product.
    Scalar,
    /// An empty input: an empty result of this many dimensions.
    Empty(usize),
    /// A convolution over `axes` (possibly none: a broadcast product).
    Conv {
        axes: Vec<usize>,
        /// `valid` with `in2` the larger: the inputs trade places.
        swap: bool,
        full: Vec<usize>,
        /// Per axis of `full`: the start and length of the result.
        window: Vec<(usize, usize)>,
    },
}

/// Resolves the shapes of a convolution of `s1` with `s2` in `mode` along `axes` (all when
/// `None`), or the error SciPy raises.
pub(crate) fn conv_shapes(
    mode: Mode,
    s1: &[usize],
    s2: &[usize],
    axes: Option<&[usize]>,
    empty: bool,
) -> Result<ConvShapes> {
    if s1.len() != s2.len() {
        return Err(shapes_error(
            s1,
            s2,
            &[],
            "should have the same dimensionality",
        ));
    }
    if s1.is_empty() {
        return Ok(ConvShapes::Scalar);
    }
    if empty {
        return Ok(ConvShapes::Empty(s1.len()));
    }
    let axes = init_axes(s1, s2, axes)?;
    let swap = inputs_swap_needed(mode, s1, s2, &axes)?;
    let (m1, m2) = if swap { (s2, s1) } else { (s1, s2) };
    let full = full_shape(s1, s2, &axes);
    let window = mode_window(mode, &full, m1, m2, &axes);
    Ok(ConvShapes::Conv {
        axes,
        swap,
        full,
        window,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scipy_shape_rules() {
        assert_eq!(init_axes(&[5, 1, 4], &[3, 6, 4], None).unwrap(), vec![0, 2]);
        assert_eq!(init_axes(&[5, 4], &[1, 3], Some(&[1])).unwrap(), vec![1]);
        assert!(
            init_axes(&[5, 4], &[2, 3], Some(&[1])).is_err(),
            "axis 0 neither equal nor 1"
        );
        assert!(matches!(
            init_axes(&[5], &[2], Some(&[])),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(!inputs_swap_needed(Mode::Valid, &[5, 5], &[3, 5], &[0, 1]).unwrap());
        assert!(inputs_swap_needed(Mode::Valid, &[3, 5], &[5, 5], &[0, 1]).unwrap());
        assert!(inputs_swap_needed(Mode::Valid, &[3, 6], &[5, 5], &[0, 1]).is_err());
        assert!(!inputs_swap_needed(Mode::Same, &[3, 6], &[5, 5], &[0, 1]).unwrap());
        let full = full_shape(&[10, 7], &[4, 3], &[0, 1]);
        assert_eq!(full, [13, 9]);
        assert_eq!(
            mode_window(Mode::Same, &full, &[10, 7], &[4, 3], &[0, 1]),
            [(1, 10), (1, 7)]
        );
        assert_eq!(
            mode_window(Mode::Valid, &full, &[10, 7], &[4, 3], &[0, 1]),
            [(3, 7), (2, 5)]
        );
    }
}
