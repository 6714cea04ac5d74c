//! The direct convolution (one kernel point at a time, each a broadcast multiply-add over the
//! whole of `in1`), and SciPy's rule for choosing between it and the FFT.

use super::{ConvElement, Method, Mode};
use crate::alloc::try_zeroed_fft;
use crate::error::Result;
use crate::fft::FftElement;
use ndarray::{ArrayD, ArrayViewD, IxDyn, Slice, Zip};

/// The part `window` (start and length per axis, in the full result) of the convolution of
/// `a` and `b` along `axes`, summed directly: for every point `j` of `b` along the axes, `a`
/// times `b[j]` added at offset `j`, where that lands in the window. The other axes
/// broadcast. Only the window is computed (SciPy's direct path computes only the points it
/// returns: a `valid` result of two equal inputs is one point, not the full `2n - 1`), and
/// each point sums the kernel's points in the same order whatever the window.
pub(crate) fn direct<A, B>(
    a: ArrayViewD<'_, A>,
    b: ArrayViewD<'_, B>,
    axes: &[usize],
    window: &[(usize, usize)],
) -> Result<ArrayD<A::Output>>
where
    A: ConvElement<B>,
    B: FftElement<Real = A::Real>,
{
    let shape: Vec<usize> = window.iter().map(|&(_, len)| len).collect();
    let mut out = try_zeroed_fft::<A::Output, IxDyn>(&IxDyn(&shape))?;
    // Per convolved axis, the kernel points that reach the window: point `j` reaches the full
    // result's `j..j + na`. Walked in C order, as the full sum would: each output point adds
    // its terms in the same order whatever the window.
    let reach: Vec<std::ops::Range<usize>> = axes
        .iter()
        .map(|&ax| {
            let (start, len) = window[ax];
            let na = a.shape()[ax];
            start.saturating_sub(na - 1)..b.shape()[ax].min(start + len)
        })
        .collect();
    let points: usize = reach.iter().map(|r| r.len()).product();
    let mut j = vec![0usize; axes.len()];
    // Per convolved axis, the span of the full result that kernel point `j` reaches, cut to
    // the window: `a`'s points `lo - j..hi - j` land on the window's `lo - start..hi - start`.
    let mut spans = vec![(0usize, 0usize); axes.len()];
    for p in 0..points {
        let mut rest = p;
        for i in (0..axes.len()).rev() {
            j[i] = reach[i].start + rest % reach[i].len();
            rest /= reach[i].len();
        }
        for (i, &ax) in axes.iter().enumerate() {
            let (start, len) = window[ax];
            spans[i] = (j[i].max(start), (j[i] + a.shape()[ax]).min(start + len));
        }
        let at = |ax: usize| axes.iter().position(|&x| x == ax);
        // A broadcast axis: the window's part of an input as long as the result, all of a
        // length-1 one.
        let broadcast = |d: ndarray::AxisDescription| match d.len {
            1 => Slice::from(..),
            _ => {
                let (start, len) = window[d.axis.index()];
                Slice::from(start..start + len)
            }
        };
        let kernel = b.slice_each_axis(|d| match at(d.axis.index()) {
            Some(i) => Slice::from(j[i]..j[i] + 1),
            None => broadcast(d),
        });
        let x = a.slice_each_axis(|d| match at(d.axis.index()) {
            Some(i) => Slice::from(spans[i].0 - j[i]..spans[i].1 - j[i]),
            None => broadcast(d),
        });
        let mut region = out.slice_each_axis_mut(|d| match at(d.axis.index()) {
            Some(i) => {
                let start = window[d.axis.index()].0;
                Slice::from(spans[i].0 - start..spans[i].1 - start)
            }
            None => Slice::from(..),
        });
        let shape = region.raw_dim();
        // The shapes were checked: `a` and the kernel point broadcast to the region.
        if let (Some(x), Some(k)) = (x.broadcast(shape.clone()), kernel.broadcast(shape)) {
            Zip::from(&mut region)
                .and(&x)
                .and(&k)
                .for_each(|o, &x, &k| *o = *o + A::multiply(x, k));
        }
    }
    Ok(out)
}

/// Whether SciPy's `choose_conv_method` picks the FFT ([`Method::Fft`]) or the direct sum
/// ([`Method::Direct`]) for inputs of shapes `s1` and `s2` in `mode`: its operation counts
/// (`_conv_ops`) weighted by its measured constants (`_fftconv_faster`).
///
/// ```
/// use ufunc_runtime::signal::{choose_conv_method, Method, Mode};
/// assert_eq!(choose_conv_method(&[2048, 2048], &[31, 31], Mode::Same), Method::Fft);
/// assert_eq!(choose_conv_method(&[100], &[3], Mode::Full), Method::Direct);
/// ```
pub fn choose_conv_method(s1: &[usize], s2: &[usize], mode: Mode) -> Method {
    let prod = |s: &[usize]| s.iter().map(|&n| n as f64).product::<f64>();
    let out: Vec<f64> = s1
        .iter()
        .zip(s2)
        .map(|(&n, &k)| match mode {
            Mode::Full => (n + k - 1) as f64,
            Mode::Valid => (n.abs_diff(k) + 1) as f64,
            Mode::Same => n as f64,
        })
        .collect();
    let direct_ops = if let ([n1], [n2]) = (s1, s2) {
        let (n1, n2) = (*n1 as f64, *n2 as f64);
        match mode {
            Mode::Full => n1 * n2,
            Mode::Valid if n2 >= n1 => (n2 - n1 + 1.0) * n1,
            Mode::Valid => (n1 - n2 + 1.0) * n2,
            Mode::Same if n1 < n2 => n1 * n2,
            Mode::Same => n1 * n2 - (n2 / 2.0).floor() * ((n2 + 1.0) / 2.0).floor(),
        }
    } else {
        match mode {
            Mode::Full | Mode::Valid => prod(s1).min(prod(s2)) * out.iter().product::<f64>(),
            Mode::Same => prod(s1) * prod(s2),
        }
    };
    let n: f64 = s1
        .iter()
        .zip(s2)
        .map(|(&n, &k)| (n + k - 1) as f64)
        .product();
    let fft_ops = 3.0 * n * n.ln();
    let one_d = s1.len() == 1;
    let offset = if one_d { -1e-3 } else { -1e-4 };
    let (o_fft, o_direct, o_offset) = match (one_d, mode) {
        (true, Mode::Valid) => (1.89095737e-9, 2.1364985e-10, offset),
        (true, Mode::Full) => (1.7649070e-9, 2.1414831e-10, offset),
        (true, Mode::Same) if prod(s2) <= prod(s1) => (3.2646654e-9, 2.8478277e-10, offset),
        (true, Mode::Same) => (3.21635404e-9, 1.1773253e-8, -1e-5),
        (false, Mode::Valid) => (1.85927e-9, 2.11242e-8, offset),
        (false, Mode::Full) => (1.99817e-9, 1.66174e-8, offset),
        (false, Mode::Same) => (2.04735e-9, 1.55367e-8, offset),
    };
    if o_fft * fft_ops < o_direct * direct_ops + o_offset {
        Method::Fft
    } else {
        Method::Direct
    }
}
