//! `LoopPlan`: how the broadcast iteration space is walked, as plain data.
//!
//! Built by a pure function from the broadcast shape and every operand's strides: axes of length
//! 1 are dropped, axes where the first output runs backwards are flipped, axes are ordered so the
//! innermost is the output's fastest, and adjacent axes that every operand steps through
//! uniformly are merged. Unit tests compare plans as values.

/// The iteration order of one ufunc call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopPlan {
    /// Axis lengths, outermost first; never empty (a 0-d call is one axis of length 1).
    pub shape: Vec<usize>,
    /// Per operand (inputs then outputs), the stride in elements along each axis of `shape`.
    pub strides: Vec<Vec<isize>>,
    /// Per operand, the element offset of the first visited element from its base pointer
    /// (non-zero where an axis was flipped).
    pub offsets: Vec<isize>,
}

impl LoopPlan {
    /// The number of elements visited.
    pub fn len(&self) -> usize {
        if self.shape.contains(&0) {
            return 0;
        }
        self.shape
            .iter()
            .try_fold(1usize, |acc, &n| acc.checked_mul(n))
            .unwrap_or(usize::MAX)
    }

    /// Whether no element is visited.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Plans the loop over `shape` for operands with the given broadcast `strides` (inputs then
/// outputs; `first_output` is the index of the first output, whose layout decides the order).
/// Each operand has one stride per axis of `shape` (a shorter list panics). Any lengths and
/// strides are accepted: where a merge or a flip would overflow `isize`, it is not done.
///
/// ```
/// use ufunc_runtime::{plan_loop, LoopPlan};
/// // A C-contiguous (2,3) input and output merge into one axis of 6.
/// let plan = plan_loop(&[2, 3], &[vec![3, 1], vec![3, 1]], 1);
/// assert_eq!(plan, LoopPlan { shape: vec![6], strides: vec![vec![1], vec![1]], offsets: vec![0, 0] });
/// ```
pub fn plan_loop<S: AsRef<[isize]>>(
    shape: &[usize],
    strides: &[S],
    first_output: usize,
) -> LoopPlan {
    let nops = strides.len();
    let mut axes: Vec<usize> = (0..shape.len()).filter(|&a| shape[a] != 1).collect();
    let mut offsets = vec![0isize; nops];
    let mut st: Vec<Vec<isize>> = strides.iter().map(|s| s.as_ref().to_vec()).collect();

    // Flip axes the first output walks backwards, so that its memory is visited forwards.
    if first_output < nops && shape.iter().all(|&n| n > 0) {
        for &a in &axes {
            if st[first_output][a] >= 0 {
                continue;
            }
            let last = isize::try_from(shape[a] - 1).ok();
            let flipped: Option<Vec<isize>> = st
                .iter()
                .zip(&offsets)
                .map(|(s, &o)| {
                    s[a].checked_neg()?;
                    o.checked_add(last?.checked_mul(s[a])?)
                })
                .collect();
            if let Some(flipped) = flipped {
                offsets = flipped;
                for s in st.iter_mut() {
                    s[a] = -s[a];
                }
            }
        }
    }

    // Outermost first: larger output stride first; ties broken by the inputs' strides. The sort
    // is stable, so C order is kept where nothing else decides.
    let key = |a: usize| -> (usize, usize) {
        let out = st.get(first_output).map_or(0, |s| s[a].unsigned_abs());
        let ins = st[..first_output.min(nops)]
            .iter()
            .map(|s| s[a].unsigned_abs())
            .sum();
        (out, ins)
    };
    axes.sort_by_key(|&a| std::cmp::Reverse(key(a)));

    let mut plan_shape: Vec<usize> = Vec::with_capacity(axes.len());
    let mut plan_strides: Vec<Vec<isize>> = vec![Vec::with_capacity(axes.len()); nops];
    for &a in &axes {
        let merged_len = plan_shape.last().and_then(|n| n.checked_mul(shape[a]));
        let mergeable = merged_len.is_some()
            && st.iter().enumerate().all(|(op, s)| {
                let outer = *plan_strides[op].last().unwrap();
                isize::try_from(shape[a])
                    .ok()
                    .and_then(|n| s[a].checked_mul(n))
                    == Some(outer)
            });
        if let (true, Some(n)) = (mergeable, merged_len) {
            *plan_shape.last_mut().unwrap() = n;
            for (op, s) in st.iter().enumerate() {
                *plan_strides[op].last_mut().unwrap() = s[a];
            }
        } else {
            plan_shape.push(shape[a]);
            for (op, s) in st.iter().enumerate() {
                plan_strides[op].push(s[a]);
            }
        }
    }
    if plan_shape.is_empty() {
        plan_shape.push(1);
        for s in &mut plan_strides {
            s.push(0);
        }
    }
    LoopPlan {
        shape: plan_shape,
        strides: plan_strides,
        offsets,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_row_keeps_two_axes() {
        // (4000,4000) + (4000,) -> output C order; the row operand has stride 0 on axis 0.
        let plan = plan_loop(
            &[4000, 4000],
            &[vec![4000, 1], vec![0, 1], vec![4000, 1]],
            2,
        );
        assert_eq!(plan.shape, vec![4000, 4000]);
        assert_eq!(plan.strides, vec![vec![4000, 1], vec![0, 1], vec![4000, 1]]);
    }

    #[test]
    fn scalar_operand_merges_with_anything() {
        let plan = plan_loop(&[3, 5], &[vec![5, 1], vec![0, 0], vec![5, 1]], 2);
        assert_eq!(plan.shape, vec![15]);
        assert_eq!(plan.strides, vec![vec![1], vec![0], vec![1]]);
    }

    #[test]
    fn fortran_output_makes_axis_zero_innermost() {
        let plan = plan_loop(&[3, 4, 5], &[vec![1, 3, 12], vec![1, 3, 12]], 1);
        assert_eq!(plan.shape, vec![60]);
        assert_eq!(plan.strides, vec![vec![1], vec![1]]);
        // A C-order input against a Fortran output: output order wins.
        let plan = plan_loop(&[3, 4], &[vec![4, 1], vec![1, 3]], 1);
        assert_eq!(plan.shape, vec![4, 3]);
        assert_eq!(plan.strides, vec![vec![1, 4], vec![3, 1]]);
    }

    #[test]
    fn negative_output_stride_is_flipped() {
        let plan = plan_loop(&[5], &[vec![1], vec![-1]], 1);
        assert_eq!(plan.shape, vec![5]);
        assert_eq!(plan.strides, vec![vec![-1], vec![1]]);
        assert_eq!(plan.offsets, vec![4, -4]);
    }

    #[test]
    fn size_one_axes_dropped_and_zero_d_is_one_element() {
        let plan = plan_loop(&[1, 1], &[vec![0, 0], vec![1, 1]], 1);
        assert_eq!(plan.shape, vec![1]);
        let plan = plan_loop(&[], &[vec![], vec![]], 1);
        assert_eq!(plan.shape, vec![1]);
        assert_eq!(plan.strides, vec![vec![0], vec![0]]);
    }

    #[test]
    fn zero_size_axis_gives_empty_plan() {
        let plan = plan_loop(&[3, 0], &[vec![0, 1], vec![0, 1]], 1);
        assert!(plan.is_empty());
    }

    #[test]
    fn non_mergeable_slice_keeps_axes() {
        // The first 4 columns of a (4,8) array: strides (8,1) cannot merge.
        let plan = plan_loop(&[4, 4], &[vec![8, 1], vec![4, 1]], 1);
        assert_eq!(plan.shape, vec![4, 4]);
        assert_eq!(plan.strides, vec![vec![8, 1], vec![4, 1]]);
        // Every other column: (8,2) steps uniformly by 2 and merges.
        let plan = plan_loop(&[4, 4], &[vec![8, 2], vec![4, 1]], 1);
        assert_eq!(plan.shape, vec![16]);
        assert_eq!(plan.strides, vec![vec![2], vec![1]]);
    }
}
