//! The options of a transform (axes, lengths, normalisation, target) and the recipe they
//! resolve to: which 1-D passes run, along which axes, at which lengths, scaled by how much.
//! The recipe is plain data, built by a pure function that the unit tests check without
//! running a transform.

use crate::error::{Error, Result};
use crate::parallel::Threads;
use crate::shape::Shape;
use crate::Target;

/// The normalisation of a transform pair, NumPy's `norm`.
///
/// | `Norm` | forward scaled by | inverse scaled by |
/// | --- | --- | --- |
/// | `Backward` (default) | 1 | 1/n |
/// | `Ortho` | 1/√n | 1/√n |
/// | `Forward` | 1/n | 1 |
///
/// `n` is the number of points transformed (the product of the lengths over the axes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Norm {
    /// No scaling forward, 1/n on the inverse (NumPy's default).
    #[default]
    Backward,
    /// 1/√n both ways: the transform is unitary.
    Ortho,
    /// 1/n forward, no scaling on the inverse.
    Forward,
}

/// The options of every transform, built from [`FftOptions::new`] (or `Default`) with
/// NumPy's parameter names: `axis`/`axes`, `n`/`s`, `norm`, and the `target` to run on.
///
/// ```
/// use ufunc_runtime::fft::{FftOptions, Norm};
/// use ufunc_runtime::Target;
/// let one = FftOptions::new().axis(0).n(16).norm(Norm::Ortho);      // fft_with, rfft_with, ...
/// let many = FftOptions::new().axes(&[0, 2]).s(&[8, 8]);           // fftn_with, ...
/// let serial = FftOptions::new().target(Target::Cpu);              // one thread
/// # let _ = (one, many, serial);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FftOptions {
    axes: Option<Shape>,
    s: Option<Shape>,
    norm: Norm,
    target: Option<Target>,
}

impl FftOptions {
    /// The defaults: the function's default axes and lengths, [`Norm::Backward`],
    /// [`Target::Parallel`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Transform along `axis` only (NumPy's `axis`); the same as `axes(&[axis])`.
    pub fn axis(mut self, axis: usize) -> Self {
        self.axes = Some(Shape::from_slice(&[axis]));
        self
    }

    /// Transform along these axes, in this order (NumPy's `axes`). An axis given twice is
    /// transformed twice, as in NumPy (with its own length from `s` each time).
    pub fn axes(mut self, axes: &[usize]) -> Self {
        self.axes = Some(Shape::from_slice(axes));
        self
    }

    /// The number of points along the one axis (NumPy's `n`): the input is cropped or
    /// zero-padded to it (for `irfft`: the length of the real output). The same as `s(&[n])`.
    pub fn n(mut self, n: usize) -> Self {
        self.s = Some(Shape::from_slice(&[n]));
        self
    }

    /// The number of points along each axis of `axes` (NumPy's `s`). Without `axes`, they
    /// apply to the last `s.len()` axes.
    pub fn s(mut self, s: &[usize]) -> Self {
        self.s = Some(Shape::from_slice(s));
        self
    }

    /// The normalisation.
    pub fn norm(mut self, norm: Norm) -> Self {
        self.norm = norm;
        self
    }

    /// `Target::Cpu` (the calling thread) or `Target::Parallel` (rayon's pool, the default).
    pub fn target(mut self, target: Target) -> Self {
        self.target = Some(target);
        self
    }

    /// Device arrays are transformed on `cuda`: any other target given is an error.
    pub(crate) fn check_device(&self) -> Result<()> {
        match self.target {
            None | Some(Target::Cuda) => Ok(()),
            Some(other) => Err(Error::InvalidArgument {
                name: "target",
                message: format!("device arrays are transformed on `cuda`, not `{other}`"),
            }),
        }
    }

    pub(crate) fn threads(&self) -> Result<Threads> {
        match self.target.unwrap_or(Target::Parallel) {
            Target::Cpu => Ok(Threads::One),
            Target::Parallel => Ok(Threads::All),
            other => Err(Error::InvalidArgument {
                name: "target",
                message: format!(
                    "host arrays are transformed on `cpu` or `parallel`, not `{other}`"
                ),
            }),
        }
    }
}

/// Which transform a recipe computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transform {
    /// Complex to complex, `exp(-2πi jk/n)`.
    Forward,
    /// Complex to complex, `exp(+2πi jk/n)`.
    Inverse,
    /// Real to the half spectrum along the last axis of `axes`, then complex.
    RealForward,
    /// Complex, then the half spectrum to real along the last axis of `axes`.
    RealInverse,
}

/// What the caller's function defaults its axes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DefaultAxes {
    /// The last `k` axes (`fft`: 1, `fft2`: 2); `axes` must then have `k` entries.
    Last(usize),
    /// All axes, or the last `s.len()` when `s` is given (`fftn`).
    All,
}

/// One 1-D pass of a recipe.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Pass {
    /// The axis it runs along.
    pub axis: usize,
    /// What it computes.
    pub kind: PassKind,
    /// The length of the lanes it reads along `axis`.
    pub len_in: usize,
    /// The transform length: real points for `RealForward`/`RealInverse`.
    pub n: usize,
    /// The length of the lanes it writes (`n`, or `n / 2 + 1` for `RealForward`; less where
    /// the pass writes only a window of its transform, points `skip..skip + len_out`).
    pub len_out: usize,
    /// The first point of the transform written (0 but in a convolution's cropped last pass).
    pub skip: usize,
    /// The factor its outputs are multiplied by.
    pub scale: f64,
}

impl Pass {
    /// How many input points of a lane are read (the rest of the transform input is zeros).
    pub fn len_read(&self) -> usize {
        match self.kind {
            PassKind::RealInverse => self.len_in.min(self.n / 2 + 1),
            _ => self.len_in.min(self.n),
        }
    }
}

/// The kind of one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PassKind {
    /// Complex forward.
    Forward,
    /// Complex inverse.
    Inverse,
    /// Real to half spectrum.
    RealForward,
    /// Half spectrum to real.
    RealInverse,
}

/// A transform resolved against an input shape: the passes, in the order they run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Recipe {
    pub input: Shape,
    pub output: Shape,
    pub passes: Vec<Pass>,
}

impl Recipe {
    /// The recipe cut into consecutive pieces in which no axis repeats (one piece unless
    /// `axes` named an axis twice), each from the shape the one before it leaves.
    pub fn segments(&self) -> Vec<Recipe> {
        let mut cuts = vec![0];
        for (i, p) in self.passes.iter().enumerate() {
            let start = *cuts.last().unwrap_or(&0);
            if self.passes[start..i].iter().any(|q| q.axis == p.axis) {
                cuts.push(i);
            }
        }
        cuts.push(self.passes.len());
        cuts.windows(2)
            .map(|w| Recipe {
                input: self.shape_after(w[0]),
                output: self.shape_after(w[1]),
                passes: self.passes[w[0]..w[1]].to_vec(),
            })
            .collect()
    }

    /// The shape after the first `k` passes.
    pub fn shape_after(&self, k: usize) -> Shape {
        let mut shape = self.input.clone();
        for p in &self.passes[..k] {
            shape[p.axis] = p.len_out;
        }
        shape
    }
}

/// Resolves `options` for `transform` of an input of `shape` into a recipe, with NumPy's
/// rules: the axes (`defaults` where none are given), the lengths (`s`, or the input's, or
/// `2 (m - 1)` for the real inverse's last axis), the per-pass scales of `norm`.
pub(crate) fn plan_recipe(
    shape: &[usize],
    transform: Transform,
    options: &FftOptions,
    defaults: DefaultAxes,
) -> Result<Recipe> {
    let axes = resolve_axes(shape.len(), options, defaults)?;
    check_lengths_match(&axes, options.s.as_deref())?;
    // NumPy checks that `s` and `axes` pair up before it checks the axes' range.
    super::freq::check_axes(shape.len(), &axes)?;
    check_real_has_axis(&axes, transform)?;
    let lengths = resolve_lengths(shape, &axes, options.s.as_deref(), transform)?;
    let inverse = matches!(transform, Transform::Inverse | Transform::RealInverse);
    // Every pass takes its share of the scale, so the product is the n-d factor.
    let scale = |n: usize| match (options.norm, inverse) {
        (Norm::Ortho, _) => 1.0 / (n as f64).sqrt(),
        (Norm::Backward, true) | (Norm::Forward, false) => 1.0 / n as f64,
        _ => 1.0,
    };
    let mut current = Shape::from_slice(shape);
    let mut passes = Vec::with_capacity(axes.len());
    let mut push = |axis: usize, kind: PassKind, n: usize| {
        let len_out = match kind {
            PassKind::RealForward => n / 2 + 1,
            _ => n,
        };
        passes.push(Pass {
            axis,
            kind,
            len_in: current[axis],
            n,
            len_out,
            skip: 0,
            scale: scale(n),
        });
        current[axis] = len_out;
    };
    let complex_kind = if inverse {
        PassKind::Inverse
    } else {
        PassKind::Forward
    };
    match transform {
        Transform::Forward | Transform::Inverse => {
            for i in (0..axes.len()).rev() {
                push(axes[i], complex_kind, lengths[i]);
            }
        }
        Transform::RealForward => {
            let last = axes.len() - 1;
            push(axes[last], PassKind::RealForward, lengths[last]);
            for i in (0..last).rev() {
                push(axes[i], complex_kind, lengths[i]);
            }
        }
        Transform::RealInverse => {
            // NumPy's `irfftn` runs its complex passes in axis order, the others in reverse.
            let last = axes.len() - 1;
            for i in 0..last {
                push(axes[i], complex_kind, lengths[i]);
            }
            push(axes[last], PassKind::RealInverse, lengths[last]);
        }
    }
    Ok(Recipe {
        input: Shape::from_slice(shape),
        output: current,
        passes,
    })
}

/// The axes of the transform (their range is checked by the caller). A repeated axis is
/// transformed once per appearance, as in NumPy; none (`axes(&[])`, `s(&[])`, a 0-d array)
/// leaves the complex transforms nothing to do.
fn resolve_axes(ndim: usize, options: &FftOptions, defaults: DefaultAxes) -> Result<Shape> {
    let axes: Shape = match (&options.axes, defaults, &options.s) {
        (Some(axes), _, _) => axes.clone(),
        (None, DefaultAxes::Last(k), _) => {
            if ndim < k {
                return Err(Error::InvalidArgument {
                    name: "axes",
                    message: format!(
                        "the default axes are the last {k}, but the array has {ndim} dimension(s)"
                    ),
                });
            }
            (ndim - k..ndim).collect()
        }
        (None, DefaultAxes::All, None) => (0..ndim).collect(),
        (None, DefaultAxes::All, Some(s)) => {
            if s.len() > ndim {
                return Err(Error::InvalidArgument {
                    name: "s",
                    message: format!(
                        "{} lengths given for an array of {ndim} dimension(s)",
                        s.len()
                    ),
                });
            }
            (ndim - s.len()..ndim).collect()
        }
    };
    if let (DefaultAxes::Last(1), Some(given)) = (defaults, &options.axes) {
        if given.len() != 1 {
            return Err(Error::InvalidArgument {
                name: "axes",
                message: format!(
                    "a 1-d transform takes one axis, not {:?}; the n-d functions take several",
                    given.as_slice()
                ),
            });
        }
    }
    Ok(axes)
}

/// A real transform has an axis to halve: over none, NumPy's `fftn` and `ifftn` return their
/// input, but its `rfftn` and `irfftn` raise.
fn check_real_has_axis(axes: &[usize], transform: Transform) -> Result<()> {
    match transform {
        Transform::RealForward | Transform::RealInverse if axes.is_empty() => {
            Err(Error::InvalidArgument {
                name: "axes",
                message: "a real transform needs at least one axis (the one its half spectrum \
                          is along)"
                    .into(),
            })
        }
        _ => Ok(()),
    }
}

/// One length of `s`, where given, per axis.
fn check_lengths_match(axes: &[usize], s: Option<&[usize]>) -> Result<()> {
    match s {
        Some(s) if s.len() != axes.len() => Err(Error::InvalidArgument {
            name: "s",
            message: format!(
                "{} lengths {s:?} for {} axes {axes:?}; give one length per axis",
                s.len(),
                axes.len()
            ),
        }),
        _ => Ok(()),
    }
}

/// The transform length along each axis (`s` matching `axes`), checked (at least 1).
fn resolve_lengths(
    shape: &[usize],
    axes: &[usize],
    s: Option<&[usize]>,
    transform: Transform,
) -> Result<Shape> {
    let lengths: Shape = match s {
        Some(s) => Shape::from_slice(s),
        None => {
            let mut l: Shape = axes.iter().map(|&a| shape[a]).collect();
            if transform == Transform::RealInverse {
                let last = l.len() - 1;
                l[last] = 2 * l[last].saturating_sub(1);
            }
            l
        }
    };
    for (&axis, &n) in axes.iter().zip(&lengths) {
        if n == 0 {
            return Err(Error::FftLength {
                axis,
                shape: shape.to_vec(),
            });
        }
    }
    Ok(lengths)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recipe(shape: &[usize], t: Transform, o: FftOptions, d: DefaultAxes) -> Recipe {
        plan_recipe(shape, t, &o, d).unwrap()
    }

    #[test]
    fn numpy_output_shapes() {
        let o = FftOptions::new;
        let last = DefaultAxes::Last(1);
        let r = recipe(&[3, 8], Transform::RealForward, o(), last);
        assert_eq!(r.output.as_slice(), &[3, 5]);
        let r = recipe(&[3, 7], Transform::RealForward, o(), last);
        assert_eq!(r.output.as_slice(), &[3, 4]);
        // irfft's default length: 2 (m - 1), from 5 and from 4.
        let r = recipe(&[3, 5], Transform::RealInverse, o(), last);
        assert_eq!(r.output.as_slice(), &[3, 8]);
        let r = recipe(&[3, 4], Transform::RealInverse, o().n(7), last);
        assert_eq!(r.output.as_slice(), &[3, 7]);
        assert_eq!(r.passes[0].len_read(), 4);
        let r = recipe(&[3, 9], Transform::RealInverse, o().n(7), last);
        assert_eq!(r.passes[0].len_read(), 4, "cropped to n/2+1");
        let r = recipe(&[3, 8], Transform::Forward, o().axis(0).n(5), last);
        assert_eq!(r.output.as_slice(), &[5, 8]);
        // fftn with s and no axes: the last len(s) axes, last axis first.
        let r = recipe(
            &[2, 3, 4],
            Transform::Forward,
            o().s(&[6, 2]),
            DefaultAxes::All,
        );
        assert_eq!(r.output.as_slice(), &[2, 6, 2]);
        assert_eq!(r.passes.iter().map(|p| p.axis).collect::<Vec<_>>(), [2, 1]);
        // rfftn: the real pass on the last of the axes, first.
        let r = recipe(
            &[4, 6, 8],
            Transform::RealForward,
            o().axes(&[2, 0]),
            DefaultAxes::All,
        );
        assert_eq!(r.output.as_slice(), &[3, 6, 8]);
        assert_eq!(r.passes[0].kind, PassKind::RealForward);
        assert_eq!(r.passes[0].axis, 0);
        assert_eq!(r.shape_after(1).as_slice(), &[3, 6, 8]);
        let r = recipe(&[4, 6], Transform::RealInverse, o(), DefaultAxes::Last(2));
        assert_eq!(r.output.as_slice(), &[4, 10]);
    }

    #[test]
    fn a_repeated_axis_is_transformed_again() {
        let o = FftOptions::new;
        let all = DefaultAxes::All;
        let axes_ns = |r: &Recipe| -> Vec<(usize, usize, usize)> {
            r.passes.iter().map(|p| (p.axis, p.len_in, p.n)).collect()
        };
        // fftn: the last of `axes` first, each with its own length, as NumPy's loop.
        let r = recipe(
            &[3, 8],
            Transform::Forward,
            o().axes(&[1, 0, 1]).s(&[4, 5, 6]),
            all,
        );
        assert_eq!(axes_ns(&r), [(1, 8, 6), (0, 3, 5), (1, 6, 4)]);
        assert_eq!(r.output.as_slice(), &[5, 4]);
        let parts = r.segments();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].output.as_slice(), &[5, 6]);
        assert_eq!(parts[1].input.as_slice(), &[5, 6]);
        assert_eq!(axes_ns(&parts[1]), [(1, 6, 4)]);
        // irfftn: the complex passes in axis order, then the real one.
        let r = recipe(
            &[4, 5],
            Transform::RealInverse,
            o().axes(&[0, 0, 1]).s(&[6, 2, 8]),
            all,
        );
        assert_eq!(axes_ns(&r), [(0, 4, 6), (0, 6, 2), (1, 5, 8)]);
        assert_eq!(r.output.as_slice(), &[2, 8]);
        assert_eq!(r.segments().len(), 2);
        // rfftn: the real pass on the last axis, then the half spectrum again.
        let r = recipe(&[3, 8], Transform::RealForward, o().axes(&[1, 1]), all);
        assert_eq!(axes_ns(&r), [(1, 8, 8), (1, 5, 8)]);
        assert_eq!(r.output.as_slice(), &[3, 8]);
        // Distinct axes stay one segment.
        let r = recipe(&[3, 8, 2], Transform::Forward, o(), all);
        assert_eq!(r.segments(), std::slice::from_ref(&r));
    }

    #[test]
    fn scales_multiply_to_the_norm() {
        let o = FftOptions::new;
        let prod = |r: Recipe| r.passes.iter().map(|p| p.scale).product::<f64>();
        let all = DefaultAxes::All;
        assert_eq!(prod(recipe(&[4, 8], Transform::Forward, o(), all)), 1.0);
        assert_eq!(
            prod(recipe(&[4, 8], Transform::Inverse, o(), all)),
            1.0 / 32.0
        );
        let f = prod(recipe(
            &[4, 8],
            Transform::Forward,
            o().norm(Norm::Forward),
            all,
        ));
        assert_eq!(f, 1.0 / 32.0);
        // The real inverse of a (4, 5) half spectrum gives (4, 8) points.
        let r = prod(recipe(
            &[4, 5],
            Transform::RealInverse,
            o().norm(Norm::Ortho),
            all,
        ));
        assert!((r - 1.0 / 32f64.sqrt()).abs() < 1e-15);
    }

    #[test]
    fn bad_options_are_errors() {
        let o = FftOptions::new;
        let last = DefaultAxes::Last(1);
        let e = plan_recipe(&[3, 4], Transform::Forward, &o().axis(2), last).unwrap_err();
        assert_eq!(e, Error::AxisOutOfRange { axis: 2, ndim: 2 });
        let e = plan_recipe(&[3, 0], Transform::Forward, &o(), last).unwrap_err();
        assert_eq!(
            e,
            Error::FftLength {
                axis: 1,
                shape: vec![3, 0]
            }
        );
        let e = plan_recipe(&[3, 1], Transform::RealInverse, &o(), last).unwrap_err();
        assert!(
            matches!(e, Error::FftLength { axis: 1, .. }),
            "irfft of one point"
        );
        let e = plan_recipe(
            &[3, 4],
            Transform::Forward,
            &o().axes(&[0]).s(&[2, 2]),
            last,
        );
        assert!(matches!(e, Err(Error::InvalidArgument { name: "s", .. })));
        // As NumPy: `s` against `axes` before the axes' range.
        let e = plan_recipe(
            &[3, 4],
            Transform::Forward,
            &o().axes(&[0, 5]).s(&[2]),
            DefaultAxes::All,
        );
        assert!(matches!(e, Err(Error::InvalidArgument { name: "s", .. })));
        let e = plan_recipe(&[4], Transform::Forward, &o(), DefaultAxes::Last(2)).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { name: "axes", .. }));
        assert!(plan_recipe(&[], Transform::Forward, &o(), DefaultAxes::Last(1)).is_err());
    }

    /// Over no axes NumPy's `fftn` and `ifftn` return their input (`axes=()`, `s=()`, a 0-d
    /// array; `fft2(a, axes=())`), and its real transforms raise: a recipe without passes, or
    /// an error naming the axes.
    #[test]
    fn no_axes_is_no_pass_for_complex_transforms_and_an_error_for_real_ones() {
        let o = FftOptions::new;
        let (all, two) = (DefaultAxes::All, DefaultAxes::Last(2));
        let cases = [
            (&[2, 3][..], o().axes(&[]), all),
            (&[2, 3], o().s(&[]), all),
            (&[2, 3], o().axes(&[]).s(&[]), all),
            (&[], o(), all),
            (&[], o().norm(Norm::Ortho), all),
            (&[2, 3], o().axes(&[]), two),
            (&[], o().axes(&[]), two),
        ];
        for (shape, options, defaults) in cases {
            for t in [Transform::Forward, Transform::Inverse] {
                let r = recipe(shape, t, options.clone(), defaults);
                assert!(r.passes.is_empty(), "{shape:?} {options:?} {t:?}");
                assert_eq!(r.output.as_slice(), shape);
            }
            for t in [Transform::RealForward, Transform::RealInverse] {
                let e = plan_recipe(shape, t, &options, defaults).unwrap_err();
                assert!(
                    matches!(e, Error::InvalidArgument { name: "axes", .. }),
                    "{shape:?} {options:?} {t:?}: {e}"
                );
            }
        }
        // As NumPy, `fft2` without axes still needs two, and `s` one length per axis.
        let forward = Transform::Forward;
        assert!(plan_recipe(&[], forward, &o(), two).is_err());
        let e = plan_recipe(&[2, 3], forward, &o().s(&[]), two).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { name: "s", .. }), "{e}");
        let last = DefaultAxes::Last(1);
        let e = plan_recipe(&[2, 3], forward, &o().axes(&[]), last).unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument { name: "axes", .. }),
            "{e}"
        );
    }
}
