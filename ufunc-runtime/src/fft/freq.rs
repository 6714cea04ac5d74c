//! Helpers around the transforms: sample frequencies, shifting the zero frequency to the
//! centre and back, and fast transform lengths.

use super::FftReal;
use crate::error::{Error, Result};
use ndarray::{Array, Array1, ArrayBase, Data, Dimension, Slice};

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
