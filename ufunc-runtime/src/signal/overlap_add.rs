//! Overlap-add (SciPy's `oaconvolve`): along each convolved axis where one input is much
//! longer than the other, the longer is cut into blocks of SciPy's optimal length
//! (`_calc_oa_lens`); each pair of blocks is convolved by FFT (pairs in parallel) and added
//! into the full result at the blocks' offsets.

use super::{ConvElement, ConvOptions};
use crate::error::{Error, Result};
use crate::fft::{next_fast_len, next_fast_len_real, FftElement};
use crate::Target;
use ndarray::{ArrayD, ArrayViewD, IxDyn, Slice};
use rayon::prelude::*;

/// The block steps of one axis of lengths `s1`, `s2`: `(step1, step2)`, each the whole length
/// where that input is not cut (SciPy's `_calc_oa_lens`).
pub(crate) fn oa_steps(s1: usize, s2: usize) -> (usize, usize) {
    let fallback = (s1, s2);
    if s1 == s2 || s1 == 1 || s2 == 1 {
        return fallback;
    }
    let (long, short, swapped) = if s2 > s1 {
        (s2, s1, true)
    } else {
        (s1, s2, false)
    };
    if short as f64 >= long as f64 / 2.0 {
        return fallback;
    }
    // The block length N minimising N log2(2N) / (N - K) for overlap K = short - 1:
    // N = -K W_{-1}(-1 / (2 e K)).
    let overlap = (short - 1) as f64;
    let optimal = -overlap * lambert_w_minus1(-1.0 / (2.0 * std::f64::consts::E * overlap));
    let Some(block) = next_fast_len(optimal.ceil() as usize) else {
        return fallback;
    };
    if block >= long {
        return fallback;
    }
    let step = block - short + 1;
    if swapped {
        (s1, step)
    } else {
        (step, s2)
    }
}

/// Whether either input is cut into more than one block along some axis.
pub(crate) fn cuts_blocks(s1: &[usize], s2: &[usize], axes: &[usize]) -> bool {
    axes.iter()
        .any(|&ax| oa_steps(s1[ax], s2[ax]) != (s1[ax], s2[ax]))
}

/// The lower branch of the Lambert W function on [-1/e, 0), by Halley's iteration from its
/// asymptotic expansion.
fn lambert_w_minus1(y: f64) -> f64 {
    let l1 = (-y).ln();
    let mut w = l1 - (-l1).ln();
    for _ in 0..50 {
        let e = w.exp();
        let f = w * e - y;
        let step = f / (e * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0));
        w -= step;
        if step.abs() < 1e-14 * w.abs() {
            break;
        }
    }
    w
}

/// The blocks of an overlap-add: per convolved axis the steps of both inputs, the transform
/// lengths every pair of blocks shares, and the start of every block of each input.
pub(crate) struct OaPlan {
    axes: Vec<usize>,
    steps: Vec<(usize, usize)>,
    pub(crate) fshape: Vec<usize>,
    blocks1: Vec<Vec<usize>>,
    blocks2: Vec<Vec<usize>>,
}

/// One pair of blocks: the ranges of each input along every axis, and where its full
/// convolution starts in the result.
pub(crate) struct OaPair {
    pub(crate) x: Vec<std::ops::Range<usize>>,
    pub(crate) k: Vec<std::ops::Range<usize>>,
    pub(crate) offset: Vec<usize>,
}

impl OaPlan {
    /// The plan for inputs of shapes `s1` and `s2` convolved along `axes` into `full`, with
    /// fast lengths for a complex result when `complex`.
    pub(crate) fn new(
        s1: &[usize],
        s2: &[usize],
        axes: &[usize],
        full: &[usize],
        complex: bool,
    ) -> Result<OaPlan> {
        let steps: Vec<(usize, usize)> = axes.iter().map(|&ax| oa_steps(s1[ax], s2[ax])).collect();
        let fast = |n: usize| {
            let f = if complex {
                next_fast_len(n)
            } else {
                next_fast_len_real(n)
            };
            f.ok_or_else(|| Error::TooLarge {
                shape: full.to_vec(),
            })
        };
        let fshape = axes
            .iter()
            .zip(&steps)
            .map(|(&ax, &(t1, t2))| fast(t1.min(s1[ax]) + t2.min(s2[ax]) - 1))
            .collect::<Result<Vec<_>>>()?;
        // Every block's start, and then every pair of blocks, is held at once: a length
        // whose list could not be allocated is an error here, not an abort in `block_starts`.
        let count = |shape: &[usize], step: fn(&(usize, usize)) -> usize| {
            axes.iter()
                .zip(&steps)
                .map(|(&ax, s)| shape[ax].div_ceil(step(s).max(1)))
                .fold(1usize, usize::saturating_mul)
        };
        let pairs = count(s1, |s| s.0).saturating_mul(count(s2, |s| s.1));
        let bytes = pairs.saturating_mul(size_of::<OaPair>() + 2 * axes.len() * size_of::<usize>());
        Vec::<u8>::new()
            .try_reserve_exact(bytes)
            .map_err(|_| Error::OutOfMemory {
                shape: full.to_vec(),
                bytes,
            })?;
        Ok(OaPlan {
            blocks1: block_starts(s1, axes, steps.iter().map(|s| s.0)),
            blocks2: block_starts(s2, axes, steps.iter().map(|s| s.1)),
            axes: axes.to_vec(),
            steps,
            fshape,
        })
    }

    /// Every pair of blocks, in the order their pieces are added (each block of the first
    /// input with each of the second).
    pub(crate) fn pairs(&self, s1: &[usize], s2: &[usize]) -> Vec<OaPair> {
        let ndim = s1.len();
        let range = |starts: &[usize], shape: &[usize], step: &dyn Fn(usize) -> usize| {
            (0..ndim)
                .map(|ax| match self.axes.iter().position(|&x| x == ax) {
                    Some(i) => starts[i]..(starts[i] + step(i)).min(shape[ax]),
                    None => 0..shape[ax],
                })
                .collect()
        };
        let (step1, step2) = (|i: usize| self.steps[i].0, |i: usize| self.steps[i].1);
        self.blocks1
            .iter()
            .flat_map(|p| self.blocks2.iter().map(move |q| (p, q)))
            .map(|(p, q)| OaPair {
                x: range(p, s1, &step1),
                k: range(q, s2, &step2),
                offset: (0..ndim)
                    .map(|ax| {
                        self.axes
                            .iter()
                            .position(|&x| x == ax)
                            .map_or(0, |i| p[i] + q[i])
                    })
                    .collect(),
            })
            .collect()
    }
}

/// The full convolution (shape `full`) by overlap-add.
pub(crate) fn overlap_add<A, B>(
    a: ArrayViewD<'_, A>,
    b: ArrayViewD<'_, B>,
    axes: &[usize],
    full: &[usize],
    options: &ConvOptions,
) -> Result<ArrayD<A::Output>>
where
    A: ConvElement<B>,
    B: FftElement<Real = A::Real>,
{
    let (s1, s2) = (a.shape(), b.shape());
    let complex = <A::Output as FftElement>::COMPLEX;
    let plan = OaPlan::new(s1, s2, axes, full, complex)?;
    let pairs = plan.pairs(s1, s2);
    // Each pair runs on one thread when pairs are spread over the pool.
    let inner = match options.target {
        Target::Cpu => options.fft_options(),
        _ if pairs.len() > 1 => options.clone().target(Target::Cpu).fft_options(),
        _ => options.fft_options(),
    };
    let one = |pair: &OaPair| -> Result<ArrayD<A::Output>> {
        let x = a.slice_each_axis(|d| Slice::from(pair.x[d.axis.index()].clone()));
        let k = b.slice_each_axis(|d| Slice::from(pair.k[d.axis.index()].clone()));
        let piece: Vec<(usize, usize)> = full_shape_of(x.shape(), k.shape(), axes)
            .into_iter()
            .map(|n| (0, n))
            .collect();
        A::spectrum_product(x, k, axes, &plan.fshape, &piece, &inner)
    };
    let pieces: Vec<_> = match options.target {
        Target::Cpu => pairs.iter().map(one).collect::<Result<_>>()?,
        _ => pairs.par_iter().map(one).collect::<Result<_>>()?,
    };
    let mut out = ArrayD::<A::Output>::default(IxDyn(full));
    for (pair, r) in pairs.iter().zip(pieces) {
        let mut region = out.slice_each_axis_mut(|d| {
            let ax = d.axis.index();
            Slice::from(pair.offset[ax]..pair.offset[ax] + r.shape()[ax])
        });
        region.zip_mut_with(&r, |o, &v| *o = *o + v);
    }
    Ok(out)
}

pub(crate) fn full_shape_of(s1: &[usize], s2: &[usize], axes: &[usize]) -> Vec<usize> {
    super::shapes::full_shape(s1, s2, axes)
}

/// The start of every block (one start per convolved axis) of an input of `shape` cut at
/// `steps` along `axes`.
fn block_starts(
    shape: &[usize],
    axes: &[usize],
    steps: impl Iterator<Item = usize>,
) -> Vec<Vec<usize>> {
    let mut all = vec![Vec::new()];
    for (&ax, step) in axes.iter().zip(steps) {
        let starts: Vec<usize> = (0..shape[ax]).step_by(step.max(1)).collect();
        all = all
            .into_iter()
            .flat_map(|prefix| {
                starts.iter().map(move |&s| {
                    let mut v = prefix.clone();
                    v.push(s);
                    v
                })
            })
            .collect();
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scipy_block_lengths() {
        let (step, k) = oa_steps(2048, 31);
        assert_eq!(k, 31);
        assert!(step > 100 && step < 400, "{step}");
        assert_eq!(oa_steps(31, 2048).0, 31);
        assert_eq!(oa_steps(100, 60), (100, 60), "no useful block");
        assert_eq!(oa_steps(7, 7), (7, 7));
        let w = lambert_w_minus1(-0.1);
        assert!((w * w.exp() + 0.1).abs() < 1e-12 && w < -1.0);
    }
}
