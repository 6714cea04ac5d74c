//! `phase_cross_correlation`: the cross-power spectrum, its inverse, the integer peak and the
//! upsampled refinement. Real 2-D images take a half-spectrum path (real transforms, the
//! upsampled DFT on half the columns); everything else the full n-d complex path. Both give
//! scikit-image's results.

use super::disambiguate::disambiguate;
use super::upsample::{upsampled_dft, upsampled_dft_half, HalfProduct, Refinement, Strips};
use super::{Normalization, Pcc, PccOptions, Space};
use crate::alloc::try_zeroed_fft;
use crate::error::{Error, Result};
use crate::fft::{ColumnRoundTrip, FftElement, FftOptions, FftPlan, FftReal, Shared};
use crate::isa::{active_isa, IsaLevel};
use crate::parallel::Threads;
use crate::Target;
use ndarray::{
    s, Array2, ArrayBase, ArrayD, ArrayView2, Data, DataMut, Dimension, Ix2, IxDyn, Zip,
};
use num_complex::Complex;
use rayon::prelude::*;

const CONTEXT: &str = "phase_cross_correlation";

/// Registers `moving` onto `reference` by phase correlation (scikit-image's
/// `phase_cross_correlation`): see the [module docs](super) for the conventions.
///
/// Errors: inputs of different shapes, an `upsample_factor` of 0, NaN in an input; on `cuda`,
/// inputs other than real 2-d `f32` images, and no device.
pub fn phase_cross_correlation<A, S1, S2, D>(
    reference: &ArrayBase<S1, D>,
    moving: &ArrayBase<S2, D>,
    options: &PccOptions,
) -> Result<Pcc>
where
    A: FftElement,
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
    check_options(reference.shape(), options)?;
    let is_image = !A::COMPLEX && options.space == Space::Real && reference.ndim() == 2;
    if options.target == Target::Cuda {
        if !is_image {
            return Err(Error::InvalidArgument {
                name: "target",
                message: format!(
                    "`cuda` registers real 2-d images in real space (got {} {}-d input{}): use \
                     `cpu` or `parallel`",
                    if A::COMPLEX { "complex" } else { "real" },
                    reference.ndim(),
                    if options.space == Space::Fourier {
                        " in Fourier space"
                    } else {
                        ""
                    },
                ),
            });
        }
        // The shift is disambiguated below, from the images as given.
        let found = PccOptions {
            disambiguate: false,
            ..*options
        };
        let correlator = Correlator::new(&real_image(reference), &found)?;
        let pcc = correlator.register(&real_image(moving))?;
        return disambiguated(pcc, reference, moving, options);
    }
    let threads = threads_of(options.target)?;
    let peak = if is_image {
        half_spectrum_peak(
            real_image(reference).view(),
            real_image(moving).view(),
            options,
            threads,
        )?
    } else {
        full_spectrum_peak(
            spectrum_of(reference, options)?,
            spectrum_of(moving, options)?,
            options,
        )?
    };
    let pcc = peak.finish(reference.shape(), options.upsample_factor)?;
    disambiguated(pcc, reference, moving, options)
}

/// `pcc` with its shift disambiguated where `options` ask for it.
fn disambiguated<A, S1, S2, D>(
    mut pcc: Pcc,
    reference: &ArrayBase<S1, D>,
    moving: &ArrayBase<S2, D>,
    options: &PccOptions,
) -> Result<Pcc>
where
    A: FftElement,
    S1: Data<Elem = A>,
    S2: Data<Elem = A>,
    D: Dimension,
{
    if options.disambiguate {
        pcc.shift = disambiguate(reference, moving, &pcc.shift, options.space, options.target)?;
    }
    Ok(pcc)
}

/// A real 2-d input as an image of its real type.
fn real_image<A: FftElement, S: Data<Elem = A>, D: Dimension>(
    a: &ArrayBase<S, D>,
) -> Array2<A::Real> {
    let a = a.view().into_dimensionality::<Ix2>().expect("2-d");
    a.mapv(|v| v.to_complex().re)
}

fn check_options(shape: &[usize], options: &PccOptions) -> Result<()> {
    check_upsample(options.upsample_factor, shape)?;
    if shape.is_empty() {
        // scikit-image raises here too; a 0-d array has no axis to shift along.
        return Err(Error::InvalidArgument {
            name: "reference",
            message: "a 0-d array has no axis to register along".into(),
        });
    }
    if shape.contains(&0) {
        return Err(Error::InvalidArgument {
            name: "reference",
            message: format!("an empty array of shape {shape:?} has no peak"),
        });
    }
    Ok(())
}

/// The full complex spectrum of an image (or the spectrum itself, in Fourier space).
fn spectrum_of<A: FftElement, S: Data<Elem = A>, D: Dimension>(
    a: &ArrayBase<S, D>,
    options: &PccOptions,
) -> Result<ArrayD<Complex<A::Real>>> {
    let mut z = a.mapv(A::to_complex).into_dyn();
    if options.space == Space::Real {
        complex_fftn_inplace(&mut z, false, options.target)?;
    }
    Ok(z)
}

/// The complex FFT over every axis of `z`, in place (the inverse divided by the size).
pub(super) fn complex_fftn_inplace<T: FftReal>(
    z: &mut ArrayD<Complex<T>>,
    inverse: bool,
    target: Target,
) -> Result<()> {
    let options = FftOptions::new().target(target);
    match inverse {
        true => FftPlan::ifftn(z.shape(), &options)?.execute_inplace(z),
        false => FftPlan::fftn(z.shape(), &options)?.execute_inplace(z),
    }
}

/// The real 2-D transforms of one image shape, both ways, planned once for one thread and for
/// all (frames transformed in parallel use the first, whole images the second); and the same
/// split for a cross-correlation: the rows' transforms, and the columns' round trip fused
/// with the cross-power spectrum between them.
pub(super) struct ImagePlan<T: FftReal> {
    ny: usize,
    nx: usize,
    forward: [FftPlan<T, Complex<T>>; 2],
    inverse: [FftPlan<Complex<T>, T>; 2],
    rows_forward: [FftPlan<T, Complex<T>>; 2],
    /// The rows' inverse of [`PEAK_ROWS`] rows on one thread (the peak search's blocks), and
    /// of the rows left over at the end.
    block_inverse: FftPlan<Complex<T>, T>,
    last_block_inverse: Option<FftPlan<Complex<T>, T>>,
    columns: ColumnRoundTrip<T>,
    /// The inverse along the columns of a half spectrum on one thread (the movie path's, whose
    /// rows then go through the block inverse and search).
    columns_inverse: FftPlan<Complex<T>, Complex<T>>,
}

/// Rows per block of the fused inverse and peak search: 128 KiB of a 2048-wide f32 image,
/// searched while in cache.
const PEAK_ROWS: usize = 16;

impl<T: FftReal> ImagePlan<T> {
    pub(super) fn new(ny: usize, nx: usize) -> Result<Self> {
        let options = |t| FftOptions::new().target(t);
        let (one, all) = (options(Target::Cpu), options(Target::Parallel));
        let half = [ny, nx / 2 + 1];
        let full = options(Target::Cpu).s(&[ny, nx]);
        let rows = |o: FftOptions| o.axis(1);
        let row_length = |t| options(t).axis(1).n(nx);
        Ok(ImagePlan {
            ny,
            nx,
            forward: [
                FftPlan::rfftn(&[ny, nx], &one)?,
                FftPlan::rfftn(&[ny, nx], &all)?,
            ],
            inverse: [
                FftPlan::irfftn(&half, &full)?,
                FftPlan::irfftn(&half, &full.target(Target::Parallel))?,
            ],
            rows_forward: [
                FftPlan::rfftn(&[ny, nx], &rows(one.clone()))?,
                FftPlan::rfftn(&[ny, nx], &rows(all.clone()))?,
            ],
            block_inverse: FftPlan::irfftn(&[PEAK_ROWS, half[1]], &row_length(Target::Cpu))?,
            last_block_inverse: match ny % PEAK_ROWS {
                0 => None,
                rest => Some(FftPlan::irfftn(&[rest, half[1]], &row_length(Target::Cpu))?),
            },
            columns: ColumnRoundTrip::new(ny)?,
            columns_inverse: FftPlan::ifftn(&half, &one.clone().axis(0))?,
        })
    }

    pub(super) fn width(&self) -> usize {
        self.nx
    }

    pub(super) fn height(&self) -> usize {
        self.ny
    }

    pub(super) fn half_width(&self) -> usize {
        self.nx / 2 + 1
    }

    /// The half spectrum of `image` (any strides) into `out` (any strides).
    pub(super) fn forward<S: DataMut<Elem = Complex<T>>>(
        &self,
        image: ArrayView2<'_, T>,
        out: &mut ArrayBase<S, Ix2>,
        threads: Threads,
    ) -> Result<()> {
        self.forward[slot(threads)].execute_into(&image, out)
    }

    /// The image of the half spectrum `spectrum` into `out`, divided by the size.
    pub(super) fn inverse(
        &self,
        spectrum: &Array2<Complex<T>>,
        out: &mut Array2<T>,
        threads: Threads,
    ) -> Result<()> {
        self.inverse[slot(threads)].execute_into(spectrum, out)
    }
}

impl<T: FftReal> ImagePlan<T> {
    /// The cross-correlation of `moving` with the half spectrum `reference`, as
    /// [`ImagePlan::forward`], a cross-power spectrum and [`ImagePlan::inverse`] would give
    /// it: the cross-power spectrum (`R conj(M)`, normalised) in `scratch.strips`, as the
    /// refinement reads it; returns
    /// `Σ|M|²` over the full spectrum and the correlation image's peak ([`Coarse`]). The image
    /// itself is never written out: each block of rows is transformed back into a buffer in
    /// cache and searched there.
    fn correlate(
        &self,
        moving: ArrayView2<'_, T>,
        reference: ArrayView2<'_, Complex<T>>,
        scratch: &mut Scratch<T>,
        normalization: Normalization,
        threads: Threads,
    ) -> Result<(f64, Coarse<T>)> {
        let (ny, nx, m) = (self.ny, self.nx, self.half_width());
        let Scratch { strips, rows, .. } = scratch;
        let rows = made(rows, (ny, m))?;
        let strips = made_with(strips, || Strips::new(ny, m))?;
        // Each block of the column pass is one piece of the strips (both 32 columns).
        const { assert!(ColumnRoundTrip::<f32>::BLOCK == Strips::<f32>::COLUMNS) };
        let data = Shared(strips.as_mut_ptr());
        let keep = |first: usize, lanes: &[Complex<T>], pitch: usize| {
            let (width, per) = (lanes.len() / pitch, Strips::<T>::COLUMNS);
            // A whole piece a block (a partial one at the end), or two threads could write one.
            assert!(
                first % per == 0 && width == (m - first).min(per),
                "a block of the column pass is one piece of the strips"
            );
            let index = first / per;
            // SAFETY: the strips of this spectrum, and piece `index` is this block's alone.
            unsafe { Strips::fill(data.get(), ny, index, width, |q, j| lanes[j * pitch + q]) };
        };
        self.rows_forward[slot(threads)].execute_into(&moving, rows)?;
        // Each column's `Σ|M|²`, summed in column order afterwards (the same total whatever
        // the threads did).
        let powers: Vec<std::sync::atomic::AtomicU64> = (0..m).map(|_| 0.into()).collect();
        let combine = |c: usize, column: &mut [Complex<T>], r: &[Complex<T>]| {
            let power = cross_power_column((c, nx), column, r, normalization);
            powers[c].store(power.to_bits(), std::sync::atomic::Ordering::Relaxed);
        };
        // The rows' inverse divides by `nx`: the columns' round trip by `ny`.
        let scale = T::of_f64(1.0 / ny as f64);
        self.columns
            .run(rows, reference, keep, scale, threads, combine);
        let coarse = self.rows_inverse_peak(rows, threads)?;
        let power = powers
            .iter()
            .map(|p| f64::from_bits(p.load(std::sync::atomic::Ordering::Relaxed)))
            .sum();
        Ok((power, coarse))
    }

    /// The peak of the rows' real inverse of `rows` ([`largest_abs`]'s), a block of
    /// [`PEAK_ROWS`] rows at a time into a buffer of each rayon job.
    fn rows_inverse_peak(&self, rows: &Array2<Complex<T>>, threads: Threads) -> Result<Coarse<T>> {
        let (ny, nx) = (self.ny, self.nx);
        let search = |buffer: &mut Array2<T>, block: usize| -> Result<Coarse<T>> {
            let first = block * PEAK_ROWS;
            let end = (first + PEAK_ROWS).min(ny);
            let plan = match &self.last_block_inverse {
                Some(last) if end - first < PEAK_ROWS => last,
                _ => &self.block_inverse,
            };
            let mut image = buffer.slice_mut(s![..end - first, ..]);
            plan.execute_into(&rows.slice(s![first..end, ..]), &mut image)?;
            let values = image
                .as_slice()
                .expect("leading rows of a standard-layout buffer");
            Ok(largest_abs(values, first * nx))
        };
        let buffer = || Array2::<T>::zeros((PEAK_ROWS, nx));
        let blocks = ny.div_ceil(PEAK_ROWS);
        let start = Coarse::none();
        match threads {
            Threads::One => {
                let mut buffer = buffer();
                (0..blocks).try_fold(start, |a, b| Ok(a.or_better(search(&mut buffer, b)?)))
            }
            Threads::All => (0..blocks)
                .into_par_iter()
                .with_min_len(blocks.div_ceil(4 * rayon::current_num_threads()))
                .map_init(buffer, search)
                .try_reduce(|| start, |a, b| Ok(a.or_better(b))),
        }
    }
}

fn slot(threads: Threads) -> usize {
    match threads {
        Threads::One => 0,
        Threads::All => 1,
    }
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

    /// The peak's height relative to the inputs' energies: 1 for inputs equal up to a shift,
    /// 0 where an input has none (a blank frame, once its mean is left out).
    pub(super) fn correlation(&self) -> f64 {
        let (a, b) = self.amplitudes;
        if a * b == 0.0 {
            return 0.0;
        }
        self.value.norm() / (a * b).sqrt()
    }

    /// A peak from its parts (the device's registration state): `amplitudes` scaled as
    /// `value` is.
    pub(super) fn new(
        coarse: Vec<f64>,
        refinement: Option<Vec<f64>>,
        value: Complex<f64>,
        amplitudes: (f64, f64),
    ) -> Peak {
        Peak {
            coarse,
            refinement,
            value,
            amplitudes,
        }
    }

    /// The integer peak at `index` of a cross-correlation of `shape` holding `value` there
    /// (`amplitudes` unscaled: `Σ|S|²` of each input, scaled here as the inverse FFT is).
    pub(super) fn whole(
        index: &[usize],
        shape: &[usize],
        value: Complex<f64>,
        amplitudes: (f64, f64),
    ) -> Peak {
        let size = shape.iter().product::<usize>() as f64;
        Peak {
            coarse: wrap(index, shape),
            refinement: None,
            value,
            amplitudes: (amplitudes.0 / size, amplitudes.1 / size),
        }
    }

    /// The grid of the upsampled DFT around this peak: `ceil(1.5 U)` points per axis, the
    /// index of the centre, and per axis the offset the DFT takes.
    pub(super) fn refinement_grid(&self, upsample: u32) -> (usize, f64, Vec<f64>) {
        let u = upsample as f64;
        let region = refinement_region(upsample);
        let centre = (region as f64 / 2.0).trunc();
        let offsets = self
            .coarse
            .iter()
            .map(|c| centre - (c * u).round())
            .collect();
        (region, centre, offsets)
    }

    /// This peak refined by `up`, the upsampled DFT on its grid (not scaled: `amplitudes` are
    /// the unscaled ones).
    pub(super) fn refined(
        self,
        up: ndarray::ArrayViewD<'_, Complex<f64>>,
        upsample: u32,
        amplitudes: (f64, f64),
    ) -> Peak {
        let (_, centre, _) = self.refinement_grid(upsample);
        let u = upsample as f64;
        let flat = argmax(up.iter().enumerate(), |z| z.norm());
        let at = unravel(flat, up.shape());
        Peak {
            value: up[IxDyn(&at)],
            refinement: Some(at.iter().map(|&i| (i as f64 - centre) / u).collect()),
            coarse: self.coarse,
            amplitudes,
        }
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

/// An upsample factor of at least 1 whose refinement fits in memory for images of `shape`:
/// its DFT matrices of `ceil(1.5 U)` rows by an axis's length, and the arrays it contracts
/// one axis at a time (the last `j` axes already `ceil(1.5 U)` long), in `Complex<f64>`. The
/// largest, if large, is reserved (never touched) here, so that a factor too large is an
/// error rather than an abort in the middle of a registration.
pub(super) fn check_upsample(upsample: u32, shape: &[usize]) -> Result<()> {
    if upsample == 0 {
        return Err(Error::InvalidArgument {
            name: "upsample_factor",
            message: "must be at least 1 (1: whole pixels), got 0".into(),
        });
    }
    if upsample == 1 {
        return Ok(());
    }
    let region = refinement_region(upsample);
    let widest = shape.iter().copied().fold(region, usize::max);
    let count = |s: &[usize]| s.iter().fold(1usize, |a, &n| a.saturating_mul(n));
    let mut largest = vec![region, widest];
    for j in 1..=shape.len() {
        let mut contracted = shape[..shape.len() - j].to_vec();
        contracted.extend(std::iter::repeat_n(region, j));
        if count(&contracted) > count(&largest) {
            largest = contracted;
        }
    }
    let elements = count(&largest);
    // Any machine holds this much: no probe (an mmap and munmap) on every call.
    if elements <= PROBE_BELOW_ELEMENTS {
        return Ok(());
    }
    let mut probe: Vec<Complex<f64>> = Vec::new();
    probe
        .try_reserve_exact(elements)
        .map_err(|_| Error::InvalidArgument {
            name: "upsample_factor",
            message: format!(
                "{upsample} needs an upsampled DFT of {} points ({} bytes), more memory than can \
                 be had",
                largest
                    .iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join("x"),
                elements.saturating_mul(size_of::<Complex<f64>>())
            ),
        })
}

/// Refinements of fewer points (64 MiB of `Complex<f64>`) are not probed.
const PROBE_BELOW_ELEMENTS: usize = 1 << 22;

/// Points per axis of the upsampled DFT's grid around a peak: `ceil(1.5 U)`.
pub(super) fn refinement_region(upsample: u32) -> usize {
    (1.5 * upsample as f64).ceil() as usize
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

pub(super) fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
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

#[inline(always)]
pub(super) fn normalise<T: FftReal>(z: Complex<T>, normalization: Normalization) -> Complex<T> {
    match normalization {
        // |z| as sqrt(re² + im²): num-complex's `norm` calls `hypot`, many times slower, and
        // the cross-power values are far from overflow.
        Normalization::Phase => {
            let floor = T::epsilon() * T::of_f64(100.0);
            z / (z.re * z.re + z.im * z.im).sqrt().max(floor)
        }
        Normalization::Off => z,
    }
}

#[inline(always)]
fn c64<T: FftReal>(z: Complex<T>) -> Complex<f64> {
    Complex::new(z.re.as_f64(), z.im.as_f64())
}

/// The full n-d complex path: scikit-image's algorithm as written.
fn full_spectrum_peak<T: FftReal>(
    reference: ArrayD<Complex<T>>,
    moving: ArrayD<Complex<T>>,
    options: &PccOptions,
) -> Result<Peak> {
    let shape = reference.shape().to_vec();
    let mut product = ArrayD::<Complex<T>>::zeros(IxDyn(&shape));
    Zip::from(&mut product)
        .and(&reference)
        .and(&moving)
        .for_each(|p, &r, &m| *p = normalise(r * m.conj(), options.normalization));
    let power = |a: &ArrayD<Complex<T>>| a.iter().map(|z| z.to_f64_norm_sqr()).sum::<f64>();
    let amplitudes = (power(&reference), power(&moving));
    let mut cc = product.clone();
    complex_fftn_inplace(&mut cc, true, options.target)?;
    let flat = argmax(cc.iter().enumerate(), |z| c64(*z).norm());
    let index = unravel(flat, &shape);
    let peak = Peak::whole(&index, &shape, c64(cc[IxDyn(&index)]), amplitudes);
    let upsample = options.upsample_factor;
    if upsample == 1 {
        return Ok(peak);
    }
    let (region, _, offsets) = peak.refinement_grid(upsample);
    let up = upsampled_dft(product.view(), region, upsample as f64, &offsets);
    Ok(peak.refined(up.view(), upsample, amplitudes))
}

trait NormSqr {
    fn to_f64_norm_sqr(&self) -> f64;
}
impl<T: FftReal> NormSqr for Complex<T> {
    #[inline(always)]
    fn to_f64_norm_sqr(&self) -> f64 {
        c64(*self).norm_sqr()
    }
}

/// The real 2-D path: half spectra by real transforms, the same peak and refinement.
fn half_spectrum_peak<T: FftReal>(
    reference: ArrayView2<'_, T>,
    moving: ArrayView2<'_, T>,
    options: &PccOptions,
    threads: Threads,
) -> Result<Peak> {
    Correlator::with_threads(reference, options, threads)?.peak(moving)
}

/// Registers many images onto one reference: the reference's spectrum and the transform plans
/// are made once, so each [`register`](Correlator::register) costs one forward and one inverse
/// real FFT, the cross-power product and the refinement. Real 2-d images, `f32` or `f64`.
///
/// ```
/// use ndarray::Array2;
/// use ufunc_runtime::registration::{Correlator, PccOptions};
/// # fn main() -> Result<(), ufunc_runtime::Error> {
/// let spot = |cy: f32| Array2::from_shape_fn((32, 32), |(y, x)| {
///     (-((y as f32 - cy).powi(2) + (x as f32 - 9.0).powi(2)) / 4.0).exp()
/// });
/// let options = PccOptions { upsample_factor: 10, ..Default::default() };
/// let correlator = Correlator::new(&spot(10.0), &options)?;
/// for k in 1..4 {
///     let r = correlator.register(&spot(10.0 + k as f32))?;
///     assert!((r.shift[0] + k as f64).abs() < 0.11 && r.shift[1].abs() < 0.11);
/// }
/// # Ok(())
/// # }
/// ```
pub struct Correlator<T: FftReal> {
    shape: [usize; 2],
    options: PccOptions,
    engine: Engine<T>,
    /// The reference image, kept only to disambiguate shifts (`options.disambiguate`).
    reference: Option<Array2<T>>,
}

enum Engine<T: FftReal> {
    Host(Box<HostCorrelator<T>>),
    Device(super::device::DeviceCorrelator),
}

/// The `cpu` and `parallel` correlator: the reference's half spectrum and the plans.
struct HostCorrelator<T: FftReal> {
    plan: ImagePlan<T>,
    /// The reference's half spectrum, column by column (`m x ny`, the transpose of the
    /// spectrum): the fused column pass reads each column where it lies.
    reference_columns: Array2<Complex<T>>,
    reference_power: f64,
    threads: Threads,
    scratch: ScratchPool<T>,
}

/// A registration's buffers, each made on first use (fresh zero pages, [`try_zeroed_fft`]:
/// writing zeros into them on one thread was a third of a first registration).
pub(super) struct Scratch<T: FftReal> {
    /// The cross-power spectrum (the movie path's).
    product: Option<Array2<Complex<T>>>,
    /// The cross-power spectrum in the refinement's strips ([`Correlator`]'s).
    strips: Option<Strips<T>>,
    /// The moving image transformed along its rows, then the correlation's columns
    /// ([`Correlator`]'s), or the movie path's cross-power spectrum transformed back along
    /// its columns.
    rows: Option<Array2<Complex<T>>>,
    /// The refinement's buffers.
    refine: Refinement<T>,
    /// The plan's half-spectrum size.
    half: (usize, usize),
}

impl<T: FftReal> Scratch<T> {
    fn new(plan: &ImagePlan<T>) -> Self {
        Scratch {
            product: None,
            strips: None,
            rows: None,
            refine: Refinement::default(),
            half: (plan.height(), plan.half_width()),
        }
    }

    pub(super) fn product_mut(&mut self) -> Result<&mut Array2<Complex<T>>> {
        made(&mut self.product, self.half)
    }
}

/// Registration buffers of finished calls, reused by the next ones (one per concurrent caller).
pub(super) struct ScratchPool<T: FftReal>(std::sync::Mutex<Vec<Scratch<T>>>);

impl<T: FftReal> ScratchPool<T> {
    pub(super) fn new() -> Self {
        ScratchPool(std::sync::Mutex::new(Vec::new()))
    }

    /// `f` on buffers from the pool (made for `plan` where none is free), which go back to the
    /// pool afterwards, whether or not `f` failed.
    pub(super) fn with<R>(
        &self,
        plan: &ImagePlan<T>,
        f: impl FnOnce(&mut Scratch<T>) -> Result<R>,
    ) -> Result<R> {
        let pool = || self.0.lock().unwrap_or_else(|e| e.into_inner());
        let taken = pool().pop();
        let mut scratch = match taken {
            Some(scratch) => scratch,
            None => Scratch::new(plan),
        };
        let r = f(&mut scratch);
        pool().push(scratch);
        r
    }
}

/// The array in `slot`, made of fresh zero pages ([`try_zeroed_fft`]) on first use.
fn made<A: FftElement>(
    slot: &mut Option<Array2<A>>,
    shape: (usize, usize),
) -> Result<&mut Array2<A>> {
    made_with(slot, || try_zeroed_fft(&Ix2(shape.0, shape.1)))
}

/// The buffer in `slot`, made by `make` on first use.
fn made_with<X>(slot: &mut Option<X>, make: impl FnOnce() -> Result<X>) -> Result<&mut X> {
    match slot {
        Some(x) => Ok(x),
        None => Ok(slot.insert(make()?)),
    }
}

impl<T: FftReal> Correlator<T> {
    /// Prepares registration onto `reference` (errors: an empty image, an `upsample_factor` of
    /// 0, NaN in the reference; on `cuda`, images other than `f32` and no device). With
    /// `options.disambiguate`, a copy of the reference is kept for the real-space comparison.
    pub fn new<S: Data<Elem = T>>(
        reference: &ArrayBase<S, Ix2>,
        options: &PccOptions,
    ) -> Result<Self> {
        check_options(reference.shape(), options)?;
        let nan = || Error::NotFinite {
            context: CONTEXT,
            name: "reference",
        };
        let engine = match options.target {
            Target::Cuda => {
                if super::contains_nan(reference.view()) {
                    return Err(nan());
                }
                Engine::Device(super::device::DeviceCorrelator::new(
                    reference.view(),
                    options,
                )?)
            }
            target => {
                let host = HostCorrelator::new(reference.view(), threads_of(target)?)?;
                // A NaN anywhere reaches every bin of the spectrum (its real or imaginary part
                // or both), and so its power: the image is read again only then (an infinity
                // can make the power NaN too).
                if host.reference_power.is_nan() && super::contains_nan(reference.view()) {
                    return Err(nan());
                }
                Engine::Host(Box::new(host))
            }
        };
        let (ny, nx) = reference.dim();
        Ok(Correlator {
            shape: [ny, nx],
            options: *options,
            engine,
            reference: options.disambiguate.then(|| reference.to_owned()),
        })
    }

    fn with_threads(
        reference: ArrayView2<'_, T>,
        options: &PccOptions,
        threads: Threads,
    ) -> Result<Self> {
        let (ny, nx) = reference.dim();
        Ok(Correlator {
            shape: [ny, nx],
            options: *options,
            engine: Engine::Host(Box::new(HostCorrelator::new(reference, threads)?)),
            reference: options.disambiguate.then(|| reference.to_owned()),
        })
    }

    /// The shift that registers `moving` onto the reference, as [`phase_cross_correlation`]
    /// gives it.
    pub fn register<S: Data<Elem = T>>(&self, moving: &ArrayBase<S, Ix2>) -> Result<Pcc> {
        if moving.shape() != self.shape {
            return Err(Error::ShapeMismatch {
                context: CONTEXT,
                names: ["reference", "moving"],
                shapes: [self.shape.to_vec(), moving.shape().to_vec()],
            });
        }
        let pcc = self
            .peak(moving.view())?
            .finish(&self.shape, self.options.upsample_factor)?;
        match &self.reference {
            // A correlator's images are images, whatever `space` says.
            Some(reference) => {
                let options = PccOptions {
                    space: Space::Real,
                    ..self.options
                };
                disambiguated(pcc, reference, moving, &options)
            }
            None => Ok(pcc),
        }
    }

    fn peak(&self, moving: ArrayView2<'_, T>) -> Result<Peak> {
        match &self.engine {
            Engine::Host(host) => host.peak(moving, &self.options),
            Engine::Device(device) => device.peak(moving),
        }
    }
}

impl<T: FftReal> HostCorrelator<T> {
    fn new(reference: ArrayView2<'_, T>, threads: Threads) -> Result<Self> {
        let (ny, nx) = reference.dim();
        let plan = ImagePlan::<T>::new(ny, nx)?;
        let mut columns: Array2<Complex<T>> = try_zeroed_fft(&Ix2(plan.half_width(), ny))?;
        plan.forward(reference, &mut columns.view_mut().reversed_axes(), threads)?;
        Ok(HostCorrelator {
            reference_power: spectrum_power(&columns, nx, threads),
            reference_columns: columns,
            plan,
            threads,
            scratch: ScratchPool::new(),
        })
    }

    fn peak(&self, moving: ArrayView2<'_, T>, options: &PccOptions) -> Result<Peak> {
        self.scratch.with(&self.plan, |scratch| {
            let (moving_power, coarse) = self.plan.correlate(
                moving,
                self.reference_columns.t(),
                scratch,
                options.normalization,
                self.threads,
            )?;
            let amplitudes = (self.reference_power, moving_power);
            let Scratch { strips, refine, .. } = scratch;
            let strips = strips.as_ref().expect("made by correlate");
            Ok(correlation_peak(
                &self.plan,
                HalfProduct::Strips(strips),
                coarse,
                (options.upsample_factor, refine),
                amplitudes,
                self.threads,
            ))
        })
    }
}

/// `Σ|S|²` of the half spectrum `columns` (a row per column of a spectrum `nx` wide) as it
/// counts in the full one: column by column, as `correlate` sums the moving image's power,
/// the columns' powers worked out on `threads` and added in order (the same bits either way).
fn spectrum_power<T: FftReal>(columns: &Array2<Complex<T>>, nx: usize, threads: Threads) -> f64 {
    let power = |c: usize| column_power(c, columns.row(c).to_slice().expect("a row"), nx);
    let powers: Vec<f64> = match threads {
        Threads::One => (0..columns.nrows()).map(power).collect(),
        Threads::All => (0..columns.nrows()).into_par_iter().map(power).collect(),
    };
    powers.into_iter().sum()
}

/// `Σ|S|²` over one row of a half spectrum as it counts in the full one: the columns that have
/// a mirror count twice. In four interleaved sums ([`norm_sqr_sum`]), twice, less the columns
/// without a mirror: one running sum over a 2048-wide spectrum is a chain of 2 million
/// dependent additions, about 2.5 ms, and the movie path takes two of them per registration.
pub(super) fn row_power<T: FftReal>(row: &[Complex<T>], nx: usize) -> f64 {
    let last = (nx % 2 == 0 && nx / 2 > 0)
        .then(|| row.get(nx / 2))
        .flatten()
        .map_or(0.0, |z| z.to_f64_norm_sqr());
    let unmirrored = row.first().map_or(0.0, |z| z.to_f64_norm_sqr()) + last;
    2.0 * norm_sqr_sum(row) - unmirrored
}

/// `Σ|z|²` in f64, in four interleaved sums (one running sum is a chain of dependent
/// additions, which held up the fused column pass).
#[inline(always)]
fn norm_sqr_sum<T: FftReal>(values: &[Complex<T>]) -> f64 {
    let mut sums = [0.0f64; 4];
    let mut fours = values.chunks_exact(4);
    for four in &mut fours {
        for (s, z) in sums.iter_mut().zip(four) {
            *s += z.to_f64_norm_sqr();
        }
    }
    let rest: f64 = fours.remainder().iter().map(|z| z.to_f64_norm_sqr()).sum();
    (sums[0] + sums[1]) + (sums[2] + sums[3]) + rest
}

/// `Σ|S|²` of column `c` of a half spectrum of `nx` columns, counted as in the full spectrum.
#[inline(always)]
fn column_power<T: FftReal>(c: usize, column: &[Complex<T>], nx: usize) -> f64 {
    norm_sqr_sum(column) * mirrored(c, nx)
}

/// The fused column pass's step for column `c` of `nx`: the moving column's power
/// ([`column_power`]), then the column replaced by `R conj(M)`, normalised. Compiled for AVX2
/// where the CPU has it: the baseline's loops ran four lanes wide, with two divisions per
/// point, and took a third of the pass's own time. The same bits either way (no fused
/// multiply-adds: Rust does not contract them).
fn cross_power_column<T: FftReal>(
    (c, nx): (usize, usize),
    column: &mut [Complex<T>],
    r: &[Complex<T>],
    normalization: Normalization,
) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if active_isa() >= IsaLevel::Avx2 {
        // SAFETY: the CPU supports AVX2 and FMA (active_isa never reports more than it has).
        return unsafe { cross_power_column_avx2((c, nx), column, r, normalization) };
    }
    cross_power_column_portable((c, nx), column, r, normalization)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn cross_power_column_avx2<T: FftReal>(
    at: (usize, usize),
    column: &mut [Complex<T>],
    r: &[Complex<T>],
    normalization: Normalization,
) -> f64 {
    cross_power_column_portable(at, column, r, normalization)
}

#[inline(always)]
fn cross_power_column_portable<T: FftReal>(
    (c, nx): (usize, usize),
    column: &mut [Complex<T>],
    r: &[Complex<T>],
    normalization: Normalization,
) -> f64 {
    let power = column_power(c, column, nx);
    for (z, &r) in column.iter_mut().zip(r) {
        *z = normalise(r * z.conj(), normalization);
    }
    power
}

/// How many times column `c` of a half spectrum counts in the full one of `nx` columns: twice
/// where it has a mirror image (all but the first, and the last for even `nx`).
fn mirrored(c: usize, nx: usize) -> f64 {
    let last = nx / 2;
    if c > 0 && !(nx % 2 == 0 && c == last) {
        2.0
    } else {
        1.0
    }
}

/// The correlation image's largest `|value|`, its flat index and the value there, or none yet.
#[derive(Clone, Copy)]
struct Coarse<T> {
    at: usize,
    top: T,
    value: T,
}

impl<T: FftReal> Coarse<T> {
    fn none() -> Self {
        // After every real index, so that an image of NaN alone gives its first element.
        Coarse {
            at: usize::MAX,
            top: T::neg_infinity(),
            value: T::nan(),
        }
    }

    /// The larger of two, the first on ties (whatever the grouping: NumPy's `argmax`).
    fn or_better(self, other: Self) -> Self {
        if other.top > self.top || (other.top == self.top && other.at < self.at) {
            other
        } else {
            self
        }
    }
}

/// The largest `|v|` of `values` (which start at flat index `offset`) and the first index that
/// holds it. NaN is passed over (values of NaN alone give the first); a NaN image makes the
/// registration's amplitudes NaN, which [`Peak::finish`] reports.
fn largest_abs<T: FftReal>(values: &[T], offset: usize) -> Coarse<T> {
    // Eight independent lanes (branch-free, so it vectorises), then the first index.
    let larger = |m: T, v: T| if v.abs() > m { v.abs() } else { m };
    let mut lanes = [T::neg_infinity(); 8];
    let mut eights = values.chunks_exact(8);
    for e in &mut eights {
        for (m, &v) in lanes.iter_mut().zip(e) {
            *m = larger(*m, v);
        }
    }
    // The lanes hold magnitudes already (or -inf where fewer than eight values came): the
    // largest of them, not of their magnitudes, or an unused lane's -inf counts as +inf.
    let top = eights.remainder().iter().fold(
        lanes.into_iter().fold(T::neg_infinity(), T::max),
        |m, &v| larger(m, v),
    );
    let at = values.iter().position(|v| v.abs() == top).unwrap_or(0);
    Coarse {
        at: offset + at,
        top,
        value: values.get(at).copied().unwrap_or(T::zero()),
    }
}

/// [`largest_abs`] of a contiguous image, pieces split across threads (the block search's
/// reference in the tests).
#[cfg(test)]
fn argmax_abs<T: FftReal>(values: &[T], threads: Threads) -> Coarse<T> {
    const PIECE: usize = 1 << 16;
    let piece = |(p, chunk): (usize, &[T])| largest_abs(chunk, p * PIECE);
    let start = Coarse::none();
    match threads {
        Threads::One => values
            .chunks(PIECE)
            .enumerate()
            .map(piece)
            .fold(start, Coarse::or_better),
        Threads::All => values
            .par_chunks(PIECE)
            .enumerate()
            .map(piece)
            .reduce(|| start, Coarse::or_better),
    }
}

/// The peak of a cross-power half spectrum (`amplitudes` unscaled: `Σ|S|²` of each input), on
/// one thread (the movie path registers its frames side by side). The correlation image is
/// never written out: the spectrum goes back along its columns, then each block of rows is
/// transformed back into a buffer in cache and searched there, as [`Correlator`]'s.
pub(super) fn half_product_peak<T: FftReal>(
    plan: &ImagePlan<T>,
    scratch: &mut Scratch<T>,
    upsample: u32,
    amplitudes: (f64, f64),
) -> Result<Peak> {
    let Scratch {
        product,
        rows,
        refine,
        half,
        ..
    } = scratch;
    let product = product.as_ref().expect("the product made by the caller");
    let rows = made(rows, *half)?;
    plan.columns_inverse.execute_into(product, rows)?;
    let coarse = plan.rows_inverse_peak(rows, Threads::One)?;
    let half = HalfProduct::Rows(product.view());
    Ok(correlation_peak(
        plan,
        half,
        coarse,
        (upsample, refine),
        amplitudes,
        Threads::One,
    ))
}

/// The peak of a correlation image whose largest `|value|` is `coarse`, refined by the
/// upsampled DFT of its cross-power half spectrum `product`.
fn correlation_peak<T: FftReal>(
    plan: &ImagePlan<T>,
    product: HalfProduct<'_, T>,
    coarse: Coarse<T>,
    (upsample, buffers): (u32, &mut Refinement<T>),
    amplitudes: (f64, f64),
    threads: Threads,
) -> Peak {
    let (ny, nx) = (plan.height(), plan.width());
    let index = unravel(coarse.at, &[ny, nx]);
    let value = Complex::new(coarse.value.as_f64(), 0.0);
    let peak = Peak::whole(&index, &[ny, nx], value, amplitudes);
    if upsample == 1 {
        return peak;
    }
    let (region, _, offsets) = peak.refinement_grid(upsample);
    let offsets = [offsets[0], offsets[1]];
    let u = upsample as f64;
    let up = upsampled_dft_half(product, nx, region, u, offsets, threads, buffers);
    peak.refined(up.into_dyn().view(), upsample, amplitudes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_half_spectrums_power_counts_mirrored_columns_twice() {
        // Odd and even widths (an even one's last column is its own mirror), one and two
        // columns.
        for (ny, nx) in [(5, 1), (4, 2), (3, 7), (6, 8), (7, 2049), (2, 2048)] {
            let m = nx / 2 + 1;
            let s = Array2::from_shape_fn((ny, m), |(r, c)| {
                Complex::new(
                    (r * 31 + c * 7) as f32 % 11.0 - 5.0,
                    (r + 3 * c) as f32 % 7.0,
                )
            });
            let naive: f64 = s
                .indexed_iter()
                .map(|((_, c), z)| z.to_f64_norm_sqr() * mirrored(c, nx))
                .sum();
            let got: f64 = s
                .rows()
                .into_iter()
                .map(|r| row_power(r.as_slice().unwrap(), nx))
                .sum();
            assert!(
                (got - naive).abs() <= 1e-12 * naive,
                "{ny}x{nx}: {got} vs {naive}"
            );
        }
    }

    /// Fewer than eight values leave lanes of the search at -inf: their magnitude, +inf, was
    /// once taken for the peak (at the first value).
    #[test]
    fn the_search_of_fewer_than_eight_values_finds_their_peak() {
        for len in 1..20 {
            for at in 0..len {
                let mut values: Vec<f64> = (0..len).map(|i| i as f64 * 0.01 - 0.05).collect();
                values[at] = -3.0;
                let got = largest_abs(&values, 100);
                assert_eq!(
                    (got.at, got.top, got.value),
                    (100 + at, 3.0, -3.0),
                    "{len} {at}"
                );
            }
        }
        let got = largest_abs(&[f64::NAN, f64::NAN], 4);
        assert_eq!(got.at, 4, "NaN alone: the first");
    }

    #[test]
    fn the_block_search_finds_what_the_whole_image_search_finds() {
        // Heights a multiple of the block, not one, under one block. The peak is a bump in
        // spectrum row `copy.0`, which row `copy.1` repeats: two image rows bit for bit the
        // same, so the peak ties across blocks, within one, within the short last block, and
        // between a whole block and the last (the first wins).
        let p = PEAK_ROWS;
        for (ny, nx, copy) in [
            (2 * p, 12, (3, p + 3)),
            (2 * p + 5, 9, (1, 2)),
            (2 * p + 5, 9, (2 * p + 1, 2 * p + 3)),
            (2 * p + 5, 10, (p + 2, 2 * p + 2)),
            (5, 8, (0, 4)),
        ] {
            let mut s = (ny * 1000 + nx) as u64;
            let mut next = move || {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64) - 0.5
            };
            let m = nx / 2 + 1;
            let mut spectrum =
                Array2::from_shape_simple_fn((ny, m), || Complex::new(next(), next()));
            let x = nx / 3;
            for (k, z) in spectrum.row_mut(copy.0).iter_mut().enumerate() {
                let phase = -2.0 * std::f64::consts::PI * (k * x) as f64 / nx as f64;
                *z += Complex::from_polar(40.0, phase);
            }
            let first = spectrum.row(copy.0).to_owned();
            spectrum.row_mut(copy.1).assign(&first);
            let mut image = Array2::zeros((ny, nx));
            let inverse = FftPlan::irfftn(&[ny, m], &FftOptions::new().axis(1).n(nx)).unwrap();
            inverse.execute_into(&spectrum, &mut image).unwrap();
            let whole = argmax_abs(image.as_slice().unwrap(), Threads::One);
            assert_eq!(whole.at, copy.0 * nx + x, "{ny}x{nx}: the bump is the peak");
            let plan = ImagePlan::<f64>::new(ny, nx).unwrap();
            for threads in [Threads::One, Threads::All] {
                let got = plan.rows_inverse_peak(&spectrum, threads).unwrap();
                assert_eq!((got.at, got.value), (whole.at, whole.value), "{ny}x{nx}");
            }
        }
    }
}
