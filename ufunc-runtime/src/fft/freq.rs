//! Helpers around the transforms: sample frequencies, shifting the zero frequency to the
//! centre and back, and fast transform lengths.

use super::FftReal;
use crate::error::{Error, Result};
use ndarray::{Array, Array1, Array2, ArrayBase, Data, Dimension, Ix2, Slice};

/// The sample frequencies of an `n`-point transform with sample spacing `d` (NumPy's
/// `fftfreq`): `[0, 1, ..., ceil(n/2) - 1, -floor(n/2), ..., -1] / (d n)`.
///
/// ```
/// use ufunc_runtime::fft::fftfreq;
/// assert_eq!(fftfreq(5, 0.5f64)?.to_vec(), [0.0, 0.4, 0.8, -0.8, -0.4]);
/// # Ok::<(), ufunc_runtime::Error>(())
/// ```
pub fn fftfreq<T: FftReal>(n: usize, d: T) -> Result<Array1<T>> {
    let scale = frequency_step(n, d)?;
    let half = n.div_ceil(2);
    Ok(Array1::from_shape_fn(n, |i| {
        let k = if i < half {
            i as f64
        } else {
            i as f64 - n as f64
        };
        T::of_f64(k * scale)
    }))
}

/// The sample frequencies of [`rfft`](super::rfft)'s `n / 2 + 1` outputs (NumPy's
/// `rfftfreq`): `[0, 1, ..., n/2] / (d n)`.
///
/// ```
/// use ufunc_runtime::fft::rfftfreq;
/// assert_eq!(rfftfreq(4, 1.0f32)?.to_vec(), [0.0, 0.25, 0.5]);
/// # Ok::<(), ufunc_runtime::Error>(())
/// ```
pub fn rfftfreq<T: FftReal>(n: usize, d: T) -> Result<Array1<T>> {
    let scale = frequency_step(n, d)?;
    Ok(Array1::from_shape_fn(n / 2 + 1, |i| {
        T::of_f64(i as f64 * scale)
    }))
}

fn frequency_step<T: FftReal>(n: usize, d: T) -> Result<f64> {
    let d = d.as_f64();
    if n == 0 || d == 0.0 || !d.is_finite() {
        return Err(Error::InvalidArgument {
            name: if n == 0 { "n" } else { "d" },
            message: format!(
                "frequencies need n >= 1 and a finite, non-zero spacing d, not n = {n}, d = {d}"
            ),
        });
    }
    Ok(1.0 / (d * n as f64))
}

/// `a` with the zero frequency moved to the centre of every axis (NumPy's `fftshift`): each
/// axis of length `n` rolled by `n / 2`.
///
/// ```
/// use ndarray::array;
/// use ufunc_runtime::fft::{fftshift, ifftshift};
/// let f = array![0, 1, 2, -2, -1];
/// assert_eq!(fftshift(&f), array![-2, -1, 0, 1, 2]);
/// assert_eq!(ifftshift(&fftshift(&f)), f);
/// ```
pub fn fftshift<A: Clone, S: Data<Elem = A>, D: Dimension>(a: &ArrayBase<S, D>) -> Array<A, D> {
    let axes: Vec<usize> = (0..a.ndim()).collect();
    roll_halves(a, &axes, false)
}

/// [`fftshift`] over the given axes only (an axis given twice is rolled twice, as NumPy).
pub fn fftshift_axes<A: Clone, S: Data<Elem = A>, D: Dimension>(
    a: &ArrayBase<S, D>,
    axes: &[usize],
) -> Result<Array<A, D>> {
    check_axes(a.ndim(), axes)?;
    Ok(roll_halves(a, axes, false))
}

/// The inverse of [`fftshift`] (they differ for odd lengths): each axis rolled by `-(n / 2)`.
pub fn ifftshift<A: Clone, S: Data<Elem = A>, D: Dimension>(a: &ArrayBase<S, D>) -> Array<A, D> {
    let axes: Vec<usize> = (0..a.ndim()).collect();
    roll_halves(a, &axes, true)
}

/// [`ifftshift`] over the given axes only (an axis given twice is rolled twice).
pub fn ifftshift_axes<A: Clone, S: Data<Elem = A>, D: Dimension>(
    a: &ArrayBase<S, D>,
    axes: &[usize],
) -> Result<Array<A, D>> {
    check_axes(a.ndim(), axes)?;
    Ok(roll_halves(a, axes, true))
}

/// `AxisOutOfRange` for the first of `axes` that an array of `ndim` dimensions lacks.
pub(super) fn check_axes(ndim: usize, axes: &[usize]) -> Result<()> {
    match axes.iter().find(|&&axis| axis >= ndim) {
        Some(&axis) => Err(Error::AxisOutOfRange { axis, ndim }),
        None => Ok(()),
    }
}

/// Rolls each of `axes` by `n / 2` (`inverse`: by `-(n / 2)`), an axis given twice twice, as
/// NumPy's `roll` adds the shifts: the array is cut into 2^k blocks at the split points of
/// the k axes that move, each copied to its rolled place with one `assign`.
fn roll_halves<A: Clone, S: Data<Elem = A>, D: Dimension>(
    a: &ArrayBase<S, D>,
    axes: &[usize],
    inverse: bool,
) -> Array<A, D> {
    let mut shifts = vec![0; a.ndim()];
    for &ax in axes {
        let n = a.shape()[ax];
        let half = if inverse { n - n / 2 } else { n / 2 };
        shifts[ax] = (shifts[ax] + half) % n.max(1);
    }
    let moved: Vec<usize> = (0..a.ndim()).filter(|&ax| shifts[ax] != 0).collect();
    let mut out = a.to_owned();
    for corner in 0..1usize << moved.len() {
        // Bit b of `corner` picks the first or second part of axis `moved[b]`.
        let part = |ax: usize, source: bool| -> Slice {
            let (n, shift) = (a.shape()[ax], shifts[ax]);
            let Some(b) = moved.iter().position(|&x| x == ax) else {
                return Slice::from(..);
            };
            // Source part [0, n - shift) moves to [shift, n); [n - shift, n) moves to [0, shift).
            let first = corner >> b & 1 == 0;
            let (lo, hi) = match (first, source) {
                (true, true) => (0, n - shift),
                (true, false) => (shift, n),
                (false, true) => (n - shift, n),
                (false, false) => (0, shift),
            };
            Slice::from(lo as isize..hi as isize)
        };
        let src = a.slice_each_axis(|d| part(d.axis.index(), true));
        out.slice_each_axis_mut(|d| part(d.axis.index(), false))
            .assign(&src);
    }
    out
}

/// Fourier cropping: the half spectrum (as [`rfft2`](super::rfft2) gives it) of a `(rows,
/// cols)` image made of the frequencies that it holds of a larger image's half `spectrum`.
/// Each axis keeps its `ceil(n / 2)` non-negative and `floor(n / 2)` negative frequencies, so
/// an even side's Nyquist row is the larger one's row at `-rows / 2`. Amplitudes are not
/// rescaled: [`irfft2`](super::irfft2) of the result is the band-limited image times
/// `rows * cols` over the larger image's size.
///
/// An error if `shape` is larger than the spectrum's image on either axis.
///
/// ```
/// use ndarray::Array2;
/// use ufunc_runtime::fft::{crop_half_spectrum, rfft2};
/// let image = Array2::from_shape_fn((8, 8), |(y, x)| (y * 8 + x) as f64);
/// let cropped = crop_half_spectrum(&rfft2(&image)?, (4, 6))?;
/// assert_eq!(cropped.dim(), (4, 4));
/// # Ok::<(), ufunc_runtime::Error>(())
/// ```
pub fn crop_half_spectrum<A: Clone, S: Data<Elem = A>>(
    spectrum: &ArrayBase<S, Ix2>,
    (rows, cols): (usize, usize),
) -> Result<Array2<A>> {
    let (ny, half) = spectrum.dim();
    let columns = cols / 2 + 1;
    if rows > ny || columns > half || rows == 0 || cols == 0 {
        return Err(Error::InvalidArgument {
            name: "shape",
            message: format!(
                "a {rows}x{cols} image's half spectrum ({rows}x{columns}) cannot be cropped \
                 from a {ny}x{half} one"
            ),
        });
    }
    Ok(Array2::from_shape_fn((rows, columns), |(r, c)| {
        spectrum[[cropped_row_source(r, rows, ny), c]].clone()
    }))
}

/// The row of a spectrum of `from` rows that row `r` of its Fourier crop to `rows` rows holds:
/// row `r < ceil(rows / 2)` is frequency `r`, the others the negative frequencies `r - rows`.
pub(crate) fn cropped_row_source(r: usize, rows: usize, from: usize) -> usize {
    if r < rows.div_ceil(2) {
        r
    } else {
        from - (rows - r)
    }
}

/// The smallest length at least `target` whose complex transform is fast: a product of 2, 3,
/// 5, 7 and 11 (SciPy's `next_fast_len(target, real=False)`). `None` if none fits in `usize`.
///
/// ```
/// use ufunc_runtime::fft::{next_fast_len, next_fast_len_real};
/// assert_eq!(next_fast_len(1021), Some(1024));
/// assert_eq!(next_fast_len(1000), Some(1000));
/// assert_eq!(next_fast_len(97), Some(98));      // 2 * 7^2
/// assert_eq!(next_fast_len_real(97), Some(100)); // 2^2 * 5^2
/// ```
pub fn next_fast_len(target: usize) -> Option<usize> {
    smooth_at_least(target, &[3, 5, 7, 11])
}

/// The smallest length at least `target` whose real transform is fast: a product of 2, 3 and
/// 5 (SciPy's `next_fast_len(target, real=True)`).
pub fn next_fast_len_real(target: usize) -> Option<usize> {
    smooth_at_least(target, &[3, 5])
}

/// The largest length at most `target` whose complex transform is fast: a product of 2, 3,
/// 5, 7 and 11 (SciPy's `prev_fast_len(target, real=False)`): the length to crop a signal to
/// that discards the fewest samples. `target` itself for 0, 1 and 2.
///
/// ```
/// use ufunc_runtime::fft::{prev_fast_len, prev_fast_len_real};
/// assert_eq!(prev_fast_len(3710), 3696);      // 2^4 * 3 * 7 * 11
/// assert_eq!(prev_fast_len_real(3710), 3645); // 3^6 * 5
/// ```
pub fn prev_fast_len(target: usize) -> usize {
    smooth_at_most(target, &[3, 5, 7, 11])
}

/// The largest length at most `target` whose real transform is fast: a product of 2, 3 and
/// 5 (SciPy's `prev_fast_len(target, real=True)`).
pub fn prev_fast_len_real(target: usize) -> usize {
    smooth_at_most(target, &[3, 5])
}

/// The largest `2^a p1^b p2^c ... <= target` over the odd `primes` (`target` below 3).
fn smooth_at_most(target: usize, primes: &[usize]) -> usize {
    if target <= 2 {
        return target;
    }
    // Every odd part `m <= target` (made once, as in `smooth_at_least`) is lifted by the
    // largest power of two that keeps it within `target`.
    fn walk(m: usize, primes: &[usize], target: usize, best: &mut usize) {
        let mut c = m;
        while c <= target / 2 {
            c *= 2;
        }
        *best = (*best).max(c);
        for (i, &p) in primes.iter().enumerate() {
            match m.checked_mul(p) {
                Some(next) if next <= target => walk(next, &primes[i..], target, best),
                _ => {}
            }
        }
    }
    let mut best = 1;
    walk(1, primes, target, &mut best);
    best
}

/// The smallest `2^a p1^b p2^c ... >= target` over the odd `primes`.
fn smooth_at_least(target: usize, primes: &[usize]) -> Option<usize> {
    if target <= 2 {
        return Some(target);
    }
    let mut best: Option<usize> = target.checked_next_power_of_two();
    // Every odd part `m` (a product of `primes`, each prime from index `i` on, so each `m` is
    // made once) is completed by the smallest power of two that lifts it to `target`.
    fn walk(m: usize, primes: &[usize], target: usize, best: &mut Option<usize>) {
        let mut c = m;
        while c < target {
            match c.checked_mul(2) {
                Some(v) => c = v,
                None => return,
            }
        }
        if best.is_none_or(|b| c < b) {
            *best = Some(c);
        }
        for (i, &p) in primes.iter().enumerate() {
            match m.checked_mul(p) {
                Some(next) if best.is_none_or(|b| next < b) => {
                    walk(next, &primes[i..], target, best)
                }
                _ => {}
            }
        }
    }
    walk(1, primes, target, &mut best);
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fft::rfft2;
    use num_complex::Complex64;
    use std::f64::consts::TAU;

    /// A band-limited image's cropped spectrum is the spectrum of the same waves sampled on the
    /// smaller grid, scaled by the ratio of sizes; odd and even sides, square or not.
    #[test]
    fn a_cropped_spectrum_is_the_smaller_grids_spectrum() {
        let waves = [
            (0.0, 0.0, 2.0),
            (1.0, 2.0, 1.0),
            (-2.0, 1.0, 0.5),
            (2.0, -3.0, 0.25),
        ];
        let image = |(ny, nx): (usize, usize)| {
            Array2::from_shape_fn((ny, nx), |(y, x)| {
                waves
                    .iter()
                    .map(|&(ky, kx, a)| {
                        a * (TAU * (ky * y as f64 / ny as f64 + kx * x as f64 / nx as f64)).cos()
                    })
                    .sum::<f64>()
            })
        };
        for (big, small) in [((16, 12), (8, 8)), ((15, 17), (7, 9)), ((10, 9), (10, 8))] {
            let cropped = crop_half_spectrum(&rfft2(&image(big)).unwrap(), small).unwrap();
            let scale = (small.0 * small.1) as f64 / (big.0 * big.1) as f64;
            let want = rfft2(&image(small)).unwrap();
            assert_eq!(cropped.dim(), want.dim());
            for (got, want) in cropped.iter().zip(&want) {
                assert!((got * scale - want).norm() < 1e-9, "{big:?} -> {small:?}");
            }
        }
    }

    /// Which rows and columns are kept: an even side's Nyquist row is the negative one.
    #[test]
    fn the_kept_frequencies_are_numpys() {
        let spectrum = Array2::from_shape_fn((6, 4), |(r, c)| Complex64::new(r as f64, c as f64));
        let cropped = crop_half_spectrum(&spectrum, (4, 4)).unwrap();
        let rows: Vec<f64> = cropped.column(0).iter().map(|v| v.re).collect();
        assert_eq!(rows, [0.0, 1.0, 4.0, 5.0]);
        let cropped = crop_half_spectrum(&spectrum, (3, 2)).unwrap();
        assert_eq!(cropped.dim(), (3, 2));
        assert_eq!(cropped[[2, 1]], Complex64::new(5.0, 1.0));
    }

    #[test]
    fn a_larger_shape_is_refused_naming_both() {
        let spectrum = Array2::<Complex64>::zeros((6, 4));
        for shape in [(7, 6), (6, 8), (0, 4)] {
            let message = crop_half_spectrum(&spectrum, shape)
                .unwrap_err()
                .to_string();
            assert!(message.contains("6x4"), "{message}");
            assert!(
                message.contains(&format!("{}x{}", shape.0, shape.1)),
                "{message}"
            );
        }
    }
}
