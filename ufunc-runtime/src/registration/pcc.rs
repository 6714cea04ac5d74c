//! `phase_cross_correlation`: the cross-power spectrum, its inverse, the integer peak and the
//! upsampled refinement. Real 2-D images take a half-spectrum path (real transforms, the
//! upsampled DFT on half the columns); everything else the full n-d complex path. Both give
//! scikit-image's results.

use super::spectra::{fftn_inplace, RealPlan2};
use super::upsample::{upsampled_dft, upsampled_dft_half};
use super::{Normalization, Pcc, PccElement, PccOptions, Real, Space};
use crate::error::{Error, Result};
use crate::parallel::Threads;
use crate::Target;
use ndarray::{Array2, ArrayBase, ArrayD, ArrayView2, Data, Dimension, Ix2, IxDyn, Zip};
use num_complex::Complex;

const CONTEXT: &str = "phase_cross_correlation";

/// Registers `moving` onto `reference` by phase correlation (scikit-image's
/// `phase_cross_correlation`): see the [module docs](super) for the conventions.
///
/// Errors: inputs of different shapes, an `upsample_factor` of 0, NaN in an input, and the
/// `cuda` target (registration runs on `cpu` and `parallel` for now).
pub fn phase_cross_correlation<A, S1, S2, D>(
    reference: &ArrayBase<S1, D>,
    moving: &ArrayBase<S2, D>,
    options: &PccOptions,
) -> Result<Pcc>
where
    A: PccElement,
    S1: Data<Elem = A>,
    S2: Data<Elem = A>,
    D: Dimension,
{
    if reference.shape() != moving.shape() {
        return Err(Error::ShapeMismatch {
            context: CONTEXT,
            names: ["reference", "moving"],
            shapes: [reference.shape().to_vec(), moving.shape().to_vec()],
        });
    }
    if options.upsample_factor == 0 {
        return Err(Error::InvalidArgument {
            name: "upsample_factor",
            message: "must be at least 1 (1: whole pixels), got 0".into(),
        });
    }
    let threads = threads_of(options.target)?;
    if reference.is_empty() {
        return Err(Error::InvalidArgument {
            name: "reference",
            message: format!(
                "an empty array of shape {:?} has no peak",
                reference.shape()
            ),
        });
    }
    let peak = if !A::COMPLEX && options.space == Space::Real && reference.ndim() == 2 {
        let r = reference.view().into_dimensionality::<Ix2>().expect("2-d");
        let m = moving.view().into_dimensionality::<Ix2>().expect("2-d");
        half_spectrum_peak(
            r.mapv(A::real).view(),
            m.mapv(A::real).view(),
            options,
            threads,
        )
    } else {
        full_spectrum_peak(
            spectrum_of(reference, options.space),
            spectrum_of(moving, options.space),
            options,
        )
    };
    peak.finish(reference.shape(), options.upsample_factor)
}

/// The full complex spectrum of an image (or the spectrum itself, in Fourier space).
fn spectrum_of<A: PccElement, S: Data<Elem = A>, D: Dimension>(
    a: &ArrayBase<S, D>,
    space: Space,
) -> ArrayD<Complex<A::Real>> {
    let mut z = a.mapv(A::to_complex).into_dyn();
    if space == Space::Real {
        fftn_inplace(&mut z, false);
    }
    z
}

pub(super) fn threads_of(target: Target) -> Result<Threads> {
    match target {
        Target::Cpu => Ok(Threads::One),
        Target::Parallel => Ok(Threads::All),
        other => Err(Error::InvalidArgument {
            name: "target",
            message: format!("registration runs on `cpu` or `parallel`, not `{other:?}`"),
        }),
    }
}

/// What the two paths measure; `finish` turns it into scikit-image's result.
pub(super) struct Peak {
    /// The integer peak of the cross-correlation, wrapped to signed shifts.
    coarse: Vec<f64>,
    /// With U > 1: the upsampled peak's offset from the coarse one, in pixels.
    refinement: Option<Vec<f64>>,
    /// The cross-correlation's value at the peak (as scikit-image scales it).
    value: Complex<f64>,
    /// `Σ|reference spectrum|²` and `Σ|moving spectrum|²`, scaled like `value`.
    amplitudes: (f64, f64),
}

impl Peak {
    /// The shift to apply to the moving input (an axis of length 1 carries none).
    pub(super) fn shift(&self, shape: &[usize], upsample: u32) -> Vec<f64> {
        let u = upsample as f64;
        let mut shift: Vec<f64> = match &self.refinement {
            None => self.coarse.clone(),
            Some(r) => self
                .coarse
                .iter()
                .zip(r)
                .map(|(c, d)| (c * u).round() / u + d)
                .collect(),
        };
        for (s, &n) in shift.iter_mut().zip(shape) {
            if n == 1 {
                *s = 0.0;
            }
        }
        shift
    }

    /// The peak's height relative to the inputs' energies: 1 for inputs equal up to a shift.
    pub(super) fn correlation(&self) -> f64 {
        let (a, b) = self.amplitudes;
        self.value.norm() / (a * b).sqrt()
    }

    fn finish(self, shape: &[usize], upsample: u32) -> Result<Pcc> {
        let (a, b) = self.amplitudes;
        if self.value.re.is_nan() || self.value.im.is_nan() || a.is_nan() || b.is_nan() {
            return Err(Error::NotFinite {
                context: CONTEXT,
                name: "reference` or `moving",
            });
        }
        let error = (1.0 - self.value.norm_sqr() / (a * b)).abs().sqrt();
        Ok(Pcc {
            shift: self.shift(shape, upsample),
            error,
            phasediff: self.value.im.atan2(self.value.re),
        })
    }
}

/// The grid of the upsampled refinement: `ceil(1.5 U)` points per axis, centred on the coarse
/// peak at index `fix(region / 2)`.
fn region_of(upsample: u32) -> (usize, f64) {
    let region = (1.5 * upsample as f64).ceil() as usize;
    (region, (region as f64 / 2.0).trunc())
}

/// Index of the largest `|value|` in C order, the first one on ties (NumPy's `argmax`).
fn argmax<'a, V: 'a>(
    values: impl Iterator<Item = (usize, &'a V)>,
    abs: impl Fn(&V) -> f64,
) -> usize {
    let mut best = (0, f64::NEG_INFINITY);
    for (i, v) in values {
        let a = abs(v);
        if a > best.1 || (a.is_nan() && !best.1.is_nan()) {
            best = (i, a);
        }
    }
    best.0
}

fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for axis in (0..shape.len()).rev() {
        index[axis] = flat % shape[axis];
        flat /= shape[axis];
    }
    index
}

/// Peak indices past the middle wrap to negative shifts.
fn wrap(index: &[usize], shape: &[usize]) -> Vec<f64> {
    index
        .iter()
        .zip(shape)
        .map(|(&i, &n)| {
            if i > n / 2 {
                i as f64 - n as f64
            } else {
                i as f64
            }
        })
        .collect()
}

pub(super) fn normalise<T: Real>(z: Complex<T>, normalization: Normalization) -> Complex<T> {
    match normalization {
        Normalization::Phase => {
            let floor = T::epsilon() * T::of_f64(100.0);
            z / z.norm().max(floor)
        }
        Normalization::Off => z,
    }
}

fn c64<T: Real>(z: Complex<T>) -> Complex<f64> {
    Complex::new(z.re.as_f64(), z.im.as_f64())
}

/// The full n-d complex path: scikit-image's algorithm as written.
fn full_spectrum_peak<T: Real>(
    reference: ArrayD<Complex<T>>,
    moving: ArrayD<Complex<T>>,
    options: &PccOptions,
) -> Peak {
    let shape = reference.shape().to_vec();
    let size = reference.len() as f64;
    let mut product = ArrayD::<Complex<T>>::zeros(IxDyn(&shape));
    Zip::from(&mut product)
        .and(&reference)
        .and(&moving)
        .for_each(|p, &r, &m| *p = normalise(r * m.conj(), options.normalization));
    let power = |a: &ArrayD<Complex<T>>| a.iter().map(|z| z.to_f64_norm_sqr()).sum::<f64>();
    let amplitudes = (power(&reference), power(&moving));
    let mut cc = product.clone();
    fftn_inplace(&mut cc, true);
    let flat = argmax(cc.iter().enumerate(), |z| c64(*z).norm());
    let index = unravel(flat, &shape);
    let coarse = wrap(&index, &shape);
    if options.upsample_factor == 1 {
        return Peak {
            value: c64(cc[IxDyn(&index)]),
            coarse,
            refinement: None,
            amplitudes: (amplitudes.0 / size, amplitudes.1 / size),
        };
    }
    let u = options.upsample_factor as f64;
    let (region, centre) = region_of(options.upsample_factor);
    let offsets: Vec<f64> = coarse.iter().map(|c| centre - (c * u).round()).collect();
    let up = upsampled_dft(product.view(), region, u, &offsets);
    let flat = argmax(up.iter().enumerate(), |z| z.norm());
    let at = unravel(flat, up.shape());
    Peak {
        value: up[IxDyn(&at)],
        refinement: Some(at.iter().map(|&i| (i as f64 - centre) / u).collect()),
        coarse,
        amplitudes,
    }
}

trait NormSqr {
    fn to_f64_norm_sqr(&self) -> f64;
}
impl<T: Real> NormSqr for Complex<T> {
    fn to_f64_norm_sqr(&self) -> f64 {
        c64(*self).norm_sqr()
    }
}

/// The real 2-D path: half spectra by real transforms, the same peak and refinement.
fn half_spectrum_peak<T: Real>(
    reference: ArrayView2<'_, T>,
    moving: ArrayView2<'_, T>,
    options: &PccOptions,
    threads: Threads,
) -> Peak {
    let (ny, nx) = reference.dim();
    let plan = RealPlan2::<T>::new(ny, nx);
    let m = plan.half_width();
    let mut spec_r = Array2::zeros((ny, m));
    let mut spec_m = Array2::zeros((ny, m));
    plan.forward(reference, &mut spec_r, threads);
    plan.forward(moving, &mut spec_m, threads);
    let mut product = spec_r;
    let amplitudes = (half_power(&product, nx), half_power(&spec_m, nx));
    Zip::from(&mut product)
        .and(&spec_m)
        .for_each(|p, &s| *p = normalise(*p * s.conj(), options.normalization));
    half_product_peak(&plan, product, options.upsample_factor, amplitudes, threads)
}

/// `Σ|S|²` over the full spectrum, from the half: the columns that have a mirror count twice.
pub(super) fn half_power<T: Real>(s: &Array2<Complex<T>>, nx: usize) -> f64 {
    s.indexed_iter()
        .map(|((_, c), z)| {
            let twice = c > 0 && !(nx % 2 == 0 && c == nx / 2);
            z.to_f64_norm_sqr() * if twice { 2.0 } else { 1.0 }
        })
        .sum()
}

/// The peak of a cross-power half spectrum (`amplitudes` unscaled: `Σ|S|²` of each input).
pub(super) fn half_product_peak<T: Real>(
    plan: &RealPlan2<T>,
    product: Array2<Complex<T>>,
    upsample: u32,
    amplitudes: (f64, f64),
    threads: Threads,
) -> Peak {
    let (ny, nx) = (product.nrows(), plan.width());
    let mut spectrum = product.clone();
    let mut cc = Array2::<T>::zeros((ny, nx));
    plan.inverse(&mut spectrum, &mut cc, threads);
    let flat = argmax(cc.iter().enumerate(), |v| v.as_f64().abs());
    let index = unravel(flat, &[ny, nx]);
    let coarse = wrap(&index, &[ny, nx]);
    let size = (ny * nx) as f64;
    if upsample == 1 {
        return Peak {
            value: Complex::new(cc[[index[0], index[1]]].as_f64(), 0.0),
            coarse,
            refinement: None,
            amplitudes: (amplitudes.0 / size, amplitudes.1 / size),
        };
    }
    let u = upsample as f64;
    let (region, centre) = region_of(upsample);
    let offsets = [
        centre - (coarse[0] * u).round(),
        centre - (coarse[1] * u).round(),
    ];
    let up = upsampled_dft_half(product.view(), nx, region, u, offsets, threads);
    let flat = argmax(up.iter().enumerate(), |z| z.norm());
    let at = unravel(flat, &[region, region]);
    Peak {
        value: up[[at[0], at[1]]],
        refinement: Some(at.iter().map(|&i| (i as f64 - centre) / u).collect()),
        coarse,
        amplitudes,
    }
}
