//! `ufunc::fft` against a naive O(n²) DFT: every length 1..=64, large primes and smooth sizes,
//! all four transforms and three norms, NumPy's shape rules (cropping, padding, odd and even
//! lengths, irfft's default length), strided, negative-stride and non-contiguous inputs, 1-d to
//! n-d with chosen axes, f32 and f64, plans and their errors.

mod common;
use common::Lcg;
use ndarray::{s, Array, Array1, Array2, Array3, ArrayD, Axis, Dimension, IxDyn};
use num_complex::Complex;
use std::f64::consts::PI;
use ufunc::fft::{self, FftOptions, FftPlan, Norm};
use ufunc::{Error, Target};

type C64 = Complex<f64>;

fn random(n: usize, seed: u64) -> Array1<C64> {
    let mut r = Lcg(seed);
    Array1::from_shape_fn(n, |_| C64::new(r.next() - 0.5, r.next() - 0.5))
}

fn random_nd(shape: &[usize], seed: u64) -> ArrayD<C64> {
    let mut r = Lcg(seed);
    ArrayD::from_shape_fn(IxDyn(shape), |_| C64::new(r.next() - 0.5, r.next() - 0.5))
}

/// The naive DFT of `x` at `n` points (cropped or zero-padded), `sign` -1 forward.
fn dft(x: &[C64], n: usize, sign: f64) -> Vec<C64> {
    (0..n)
        .map(|k| {
            x.iter()
                .take(n)
                .enumerate()
                .map(|(j, v)| {
                    v * C64::from_polar(1.0, sign * 2.0 * PI * ((j * k) % n) as f64 / n as f64)
                })
                .sum()
        })
        .collect()
}

/// The naive n-d DFT along `axes` with lengths `s` (NumPy's fftn semantics).
fn dftn(a: &ArrayD<C64>, axes: &[usize], s: &[usize], sign: f64) -> ArrayD<C64> {
    let mut a = a.clone();
    for (&axis, &n) in axes.iter().zip(s).rev() {
        let mut shape = a.shape().to_vec();
        shape[axis] = n;
        let mut out = ArrayD::zeros(IxDyn(&shape));
        for (src, mut dst) in a
            .lanes(Axis(axis))
            .into_iter()
            .zip(out.lanes_mut(Axis(axis)))
        {
            let v = dft(&src.to_vec(), n, sign);
            dst.iter_mut().zip(v).for_each(|(d, x)| *d = x);
        }
        a = out;
    }
    a
}

fn max_err<D: Dimension>(a: &Array<C64, D>, b: &Array<C64, D>) -> f64 {
    assert_eq!(a.shape(), b.shape());
    let scale = b.iter().map(|v| v.norm()).fold(1.0, f64::max);
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).norm())
        .fold(0.0, f64::max)
        / scale
}

fn to_f32(a: &ArrayD<C64>) -> ArrayD<Complex<f32>> {
    a.mapv(|v| Complex::new(v.re as f32, v.im as f32))
}

fn to_f64(a: &ArrayD<Complex<f32>>) -> ArrayD<C64> {
    a.mapv(|v| C64::new(v.re as f64, v.im as f64))
}

#[test]
fn every_length_to_64_and_large_primes_and_smooth_sizes() -> Result<(), Error> {
    let lengths = (1..=64).chain([
        97,
        1009,
        4099,
        2 * 3 * 5 * 7 * 4,
        1 << 12,
        3 * 3 * 5 * 5 * 7,
    ]);
    for n in lengths {
        let x = random(n, n as u64);
        let want = Array1::from(dft(x.as_slice().unwrap(), n, -1.0));
        let got = fft::fft(&x)?;
        let tol = 1e-12 * (n as f64).log2().max(1.0);
        assert!(
            max_err(&got, &want) < tol,
            "fft n={n}: {}",
            max_err(&got, &want)
        );
        let back = fft::ifft(&got)?;
        assert!(max_err(&back, &x) < tol, "ifft n={n}");
        // float32 stays float32.
        let x32 = x.mapv(|v| Complex::new(v.re as f32, v.im as f32));
        let got32: Array1<Complex<f32>> = fft::fft(&x32)?;
        let got32 = got32.mapv(|v| C64::new(v.re as f64, v.im as f64));
        assert!(
            max_err(&got32, &want) < 2e-6 * (n as f64).log2().max(1.0),
            "f32 n={n}"
        );
        // Real input: fft of the real part, rfft its first half, irfft back.
        let re = x.mapv(|v| v.re);
        let want = Array1::from(dft(
            re.mapv(|v| C64::new(v, 0.0)).as_slice().unwrap(),
            n,
            -1.0,
        ));
        assert!(max_err(&fft::fft(&re)?, &want) < tol, "real fft n={n}");
        let half = fft::rfft(&re)?;
        assert_eq!(half.len(), n / 2 + 1);
        assert!(
            max_err(&half, &want.slice(s![..n / 2 + 1]).to_owned()) < tol,
            "rfft n={n}"
        );
        let back = fft::irfft_with(&half, &FftOptions::new().n(n))?;
        let err = back
            .iter()
            .zip(&re)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(err < tol, "irfft n={n}: {err}");
    }
    Ok(())
}

#[test]
fn norms_and_parseval() -> Result<(), Error> {
    let x = random(48, 7);
    let n = 48.0f64;
    let plain = fft::fft(&x)?;
    let energy = |a: &Array1<C64>| a.iter().map(|v| v.norm_sqr()).sum::<f64>();
    assert!((energy(&plain) / n - energy(&x)).abs() < 1e-12, "Parseval");
    let ortho = fft::fft_with(&x, &FftOptions::new().norm(Norm::Ortho))?;
    assert!(max_err(&ortho, &plain.mapv(|v| v / n.sqrt())) < 1e-14);
    assert!((energy(&ortho) - energy(&x)).abs() < 1e-12, "unitary");
    let forward = fft::fft_with(&x, &FftOptions::new().norm(Norm::Forward))?;
    assert!(max_err(&forward, &plain.mapv(|v| v / n)) < 1e-14);
    for norm in [Norm::Backward, Norm::Ortho, Norm::Forward] {
        let o = FftOptions::new().norm(norm);
        let back = fft::ifft_with(&fft::fft_with(&x, &o)?, &o)?;
        assert!(max_err(&back, &x) < 1e-14, "{norm:?} round trip");
        let re = x.mapv(|v| v.re);
        let back = fft::irfft_with(&fft::rfft_with(&re, &o)?, &o)?;
        assert!(
            back.iter().zip(&re).all(|(a, b)| (a - b).abs() < 1e-14),
            "{norm:?} real"
        );
        let nd = random_nd(&[6, 10], 3);
        let back = fft::ifft2_with(&fft::fft2_with(&nd, &o)?, &o)?;
        assert!(max_err(&back, &nd) < 1e-14);
    }
    Ok(())
}

#[test]
fn numpy_shape_rules() -> Result<(), Error> {
    let x = random(10, 1);
    // Cropping and padding.
    for n in [1, 3, 10, 16, 17] {
        let want = Array1::from(dft(x.as_slice().unwrap(), n, -1.0));
        let got = fft::fft_with(&x, &FftOptions::new().n(n))?;
        assert!(max_err(&got, &want) < 1e-13, "n={n}");
    }
    let re = x.mapv(|v| v.re);
    assert_eq!(fft::rfft(&re)?.len(), 6);
    assert_eq!(fft::rfft(&re.slice(s![..9]))?.len(), 5);
    assert_eq!(fft::rfft_with(&re, &FftOptions::new().n(15))?.len(), 8);
    // irfft: default 2 (m - 1); n crops or pads the spectrum to n/2+1 first.
    let spec = fft::rfft(&re)?;
    assert_eq!(fft::irfft(&spec)?.len(), 10);
    assert_eq!(fft::irfft(&spec.slice(s![..5]))?.len(), 8);
    for n in [1, 2, 5, 9, 10, 11, 30] {
        let got = fft::irfft_with(&spec, &FftOptions::new().n(n))?;
        // Naive: Hermitian extension of the first n/2+1 terms (zero padded), real part.
        let m = n / 2 + 1;
        let mut half: Vec<C64> = spec.iter().copied().take(m).collect();
        half.resize(m, C64::new(0.0, 0.0));
        half[0].im = 0.0;
        if n % 2 == 0 {
            half[m - 1].im = 0.0;
        }
        let full: Vec<C64> = (0..n)
            .map(|k| if k < m { half[k] } else { half[n - k].conj() })
            .collect();
        let want: Vec<f64> = dft(&full, n, 1.0).iter().map(|v| v.re / n as f64).collect();
        let err = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(err < 1e-13, "irfft n={n}: {err}");
    }
    // n-d: s without axes means the last len(s) axes.
    let a = random_nd(&[3, 4, 5], 2);
    let got = fft::fftn_with(&a, &FftOptions::new().s(&[6, 2]))?;
    assert_eq!(got.shape(), &[3, 6, 2]);
    assert!(max_err(&got, &dftn(&a, &[1, 2], &[6, 2], -1.0)) < 1e-13);
    let re = a.mapv(|v| v.re);
    assert_eq!(fft::rfftn(&re)?.shape(), &[3, 4, 3]);
    assert_eq!(fft::rfft2(&re)?.shape(), &[3, 4, 3]);
    assert_eq!(fft::irfftn(&fft::rfftn(&re)?)?.shape(), &[3, 4, 4]);
    assert_eq!(
        fft::irfft2_with(&fft::rfft2(&re)?, &FftOptions::new().s(&[4, 5]))?.shape(),
        &[3, 4, 5]
    );
    Ok(())
}

#[test]
fn n_d_axes_choices_against_the_naive_dft() -> Result<(), Error> {
    let a = random_nd(&[4, 5, 6], 9);
    let cases: &[(&[usize], &[usize])] = &[
        (&[0], &[4]),
        (&[1], &[7]),
        (&[2, 0], &[6, 3]),
        (&[0, 1, 2], &[4, 5, 6]),
        (&[1, 2], &[2, 9]),
        (&[2, 1, 0], &[5, 5, 5]),
    ];
    for &(axes, s) in cases {
        let o = FftOptions::new().axes(axes).s(s);
        let want = dftn(&a, axes, s, -1.0);
        assert!(
            max_err(&fft::fftn_with(&a, &o)?, &want) < 1e-13,
            "{axes:?} {s:?}"
        );
        let want_inv = dftn(&a, axes, s, 1.0).mapv(|v| v / s.iter().product::<usize>() as f64);
        assert!(
            max_err(&fft::ifftn_with(&a, &o)?, &want_inv) < 1e-13,
            "inverse {axes:?}"
        );
        let f32_got = to_f64(&fft::fftn_with(
            &to_f32(&a),
            &o.clone().target(Target::Cpu),
        )?);
        assert!(max_err(&f32_got, &want) < 1e-5, "f32 {axes:?}");
        // Real: rfftn is the first half of fftn along the last axis of `axes`.
        let re = a.mapv(|v| v.re);
        let full = dftn(&re.mapv(|v| C64::new(v, 0.0)), axes, s, -1.0);
        let last = *axes.last().unwrap();
        let m = s.last().unwrap() / 2 + 1;
        let got = fft::rfftn_with(&re, &o)?;
        let want = full.slice_axis(Axis(last), (..m).into()).to_owned();
        assert!(max_err(&got, &want) < 1e-13, "rfftn {axes:?}");
        let back = fft::irfftn_with(&got, &o)?;
        let mut cropped = re.clone();
        for (&ax, &n) in axes.iter().zip(s) {
            let keep = n.min(cropped.shape()[ax]);
            let mut shape = cropped.shape().to_vec();
            shape[ax] = n;
            let mut padded = ArrayD::zeros(IxDyn(&shape));
            padded
                .slice_axis_mut(Axis(ax), (..keep).into())
                .assign(&cropped.slice_axis(Axis(ax), (..keep).into()));
            cropped = padded;
        }
        let err = back
            .iter()
            .zip(&cropped)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(err < 1e-13, "irfftn round trip {axes:?}: {err}");
    }
    Ok(())
}

/// The same four views of a 2-d array: every other row, every third column backwards,
/// reversed rows with every other column, and the transpose.
macro_rules! strided_views {
    ($a:expr) => {
        [
            $a.slice(s![..;2, ..]),
            $a.slice(s![.., ..;-3]),
            $a.slice(s![..;-1, 1..;2]),
            $a.t(),
        ]
    };
}

/// Each named transform of `view` with its options equals the same of `owned`.
macro_rules! same {
    ($view:expr, $owned:expr, $($f:ident($o:expr)),+) => {
        $(assert_eq!(fft::$f(&$view, $o)?, fft::$f(&$owned, $o)?, stringify!($f));)+
    };
}

#[test]
fn strided_negative_and_transposed_inputs() -> Result<(), Error> {
    let base = random_nd(&[9, 14], 4)
        .into_dimensionality::<ndarray::Ix2>()
        .unwrap();
    let base32 = base.mapv(|v| Complex::new(v.re as f32, v.im as f32));
    let re = base.mapv(|v| v.re);
    let re32 = re.mapv(|v| v as f32);
    // Every transform of a view equals the same transform of its owned copy, forward and
    // inverse, complex and real, f64 and f32, along every axis choice, on both targets.
    for target in [Target::Cpu, Target::Parallel] {
        let o = FftOptions::new().target(target);
        let (rows, cols) = (o.clone().axis(0), o.clone().axes(&[0]));
        for view in strided_views!(base) {
            let owned = view.to_owned();
            same!(view, owned, fft2_with(&o), ifft2_with(&o), irfft2_with(&o));
            same!(
                view,
                owned,
                fft_with(&rows),
                ifft_with(&rows),
                irfft_with(&rows)
            );
            same!(view, owned, irfftn_with(&cols));
        }
        for view in strided_views!(base32) {
            let owned = view.to_owned();
            same!(
                view,
                owned,
                fft2_with(&o),
                ifft_with(&rows),
                irfft2_with(&o)
            );
        }
        for view in strided_views!(re) {
            let owned = view.to_owned();
            same!(
                view,
                owned,
                rfft2_with(&o),
                rfft_with(&rows),
                rfftn_with(&cols)
            );
        }
        for view in strided_views!(re32) {
            let owned = view.to_owned();
            same!(view, owned, rfft2_with(&o), rfft_with(&rows));
        }
    }
    Ok(())
}

#[test]
fn dimension_types_are_kept() -> Result<(), Error> {
    let a1: Array1<f32> = Array1::zeros(8);
    let _: Array1<Complex<f32>> = fft::rfft(&a1)?;
    let a2: Array2<f64> = Array2::zeros((4, 8));
    let _: Array2<Complex<f64>> = fft::fft2(&a2)?;
    let a3: Array3<Complex<f32>> = Array3::zeros((2, 4, 8));
    let _: Array3<f32> = fft::irfftn(&a3)?;
    let ad: ArrayD<f64> = ArrayD::zeros(IxDyn(&[3, 4]));
    let _: ArrayD<Complex<f64>> = fft::rfftn(&ad.view())?;
    Ok(())
}

#[test]
fn large_2d_real_parallel_matches_serial_and_round_trips() -> Result<(), Error> {
    let mut r = Lcg(5);
    let img = Array2::from_shape_fn((256, 384), |_| r.next() as f32);
    let par = fft::rfft2(&img)?;
    let ser = fft::rfft2_with(&img, &FftOptions::new().target(Target::Cpu))?;
    assert_eq!(par, ser, "parallel and serial give the same bits");
    let back = fft::irfft2_with(&par, &FftOptions::new().s(&[256, 384]))?;
    assert!(back.iter().zip(&img).all(|(a, b)| (a - b).abs() < 1e-5));
    let full = fft::fft2(&img)?;
    assert!(par
        .iter()
        .zip(full.slice(s![.., ..193]))
        .all(|(a, b)| (a - b).norm() < 1e-2));
    Ok(())
}

#[test]
fn errors_name_the_axis_and_shape() {
    let a = Array2::<f64>::zeros((3, 4));
    let e = fft::fft_with(&a, &FftOptions::new().axis(2)).unwrap_err();
    assert_eq!(e, Error::AxisOutOfRange { axis: 2, ndim: 2 });
    let e = fft::fftn_with(&a, &FftOptions::new().axes(&[1, 1, 3])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "axis 3 is out of bounds for an array of dimension 2"
    );
    let e = fft::fft_with(&a, &FftOptions::new().n(0)).unwrap_err();
    assert_eq!(
        e,
        Error::FftLength {
            axis: 1,
            shape: vec![3, 4]
        }
    );
    let empty = Array2::<Complex<f64>>::zeros((3, 0));
    let e = fft::irfft(&empty).unwrap_err();
    assert!(matches!(e, Error::FftLength { axis: 1, .. }), "{e}");
    let one = Array2::<Complex<f64>>::zeros((3, 1));
    assert!(fft::irfft(&one).is_err(), "irfft of one point needs n");
    assert_eq!(
        fft::irfft_with(&one, &FftOptions::new().n(1))
            .unwrap()
            .shape(),
        &[3, 1]
    );
    let e = fft::fftn_with(&a, &FftOptions::new().axes(&[0]).s(&[2, 2])).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { name: "s", .. }));
    assert!(fft::fft2(&Array1::<f64>::zeros(4)).is_err());
    let e = fft::fft_with(&a, &FftOptions::new().target(Target::Cuda)).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { name: "target", .. }));
    // Empty batches and zero-padded empty axes are fine.
    assert_eq!(
        fft::fft(&Array2::<f64>::zeros((0, 4))).unwrap().shape(),
        &[0, 4]
    );
    let padded = fft::fft_with(&empty, &FftOptions::new().n(4)).unwrap();
    assert!(padded.iter().all(|v| v.norm() == 0.0) && padded.shape() == [3, 4]);
}

/// Over no axes NumPy 2's `fftn` and `ifftn` return their input (`axes=()`, `s=()`, a 0-d
/// array; `fft2(a, axes=())` too), whatever the norm; here it comes back as complex numbers
/// of its precision, the result type. NumPy's `rfftn` and `irfftn` raise there: errors here.
#[test]
fn no_axes_give_the_input_as_complex() -> Result<(), Error> {
    let a = ndarray::array![[0.0f32, 1.0, 2.0], [3.0, 4.0, 5.0]];
    let want = a.mapv(|v| Complex::new(v, 0.0));
    let none = FftOptions::new().axes(&[]);
    for norm in [Norm::Backward, Norm::Ortho, Norm::Forward] {
        let o = none.clone().norm(norm);
        assert_eq!(fft::fftn_with(&a, &o)?, want, "{norm:?}");
        assert_eq!(fft::ifftn_with(&a, &o)?, want, "{norm:?}");
        assert_eq!(fft::fft2_with(&a, &o)?, want, "{norm:?}");
        assert_eq!(fft::ifft2_with(&a, &o)?, want, "{norm:?}");
    }
    assert_eq!(fft::fftn_with(&a, &FftOptions::new().s(&[]))?, want);
    // Complex, strided and reversed, in and out; in place.
    let z = random_nd(&[4, 5], 3);
    let view = z.slice(s![..;-1, ..;2]);
    assert_eq!(fft::ifftn_with(&view, &none)?, view);
    let plan = FftPlan::fftn(&[4, 3], &none)?;
    let mut t = Array2::zeros((3, 4));
    plan.execute_into(&view, &mut t.view_mut().reversed_axes())?;
    assert_eq!(t.view().reversed_axes(), view);
    let mut same = view.to_owned();
    plan.execute_inplace(&mut same)?;
    assert_eq!(same, view);
    // A 0-d array.
    let scalar = ndarray::arr0(3.0f32);
    let three = ndarray::arr0(Complex::new(3.0f32, 0.0));
    assert_eq!(fft::fftn(&scalar)?, three);
    assert_eq!(fft::ifftn(&three)?, three);
    // The real transforms have no axis to halve; fft2 of a 0-d array has no two axes.
    let errors = [
        fft::rfftn_with(&a, &none).unwrap_err(),
        fft::irfftn_with(&want, &none).unwrap_err(),
        fft::rfft2_with(&a, &none).unwrap_err(),
        fft::rfftn(&scalar).unwrap_err(),
        fft::irfftn(&three).unwrap_err(),
        fft::fft2(&scalar).unwrap_err(),
    ];
    for e in errors {
        assert!(
            matches!(e, Error::InvalidArgument { name: "axes", .. }),
            "{e}"
        );
    }
    Ok(())
}

#[test]
fn plans_are_reusable_into_and_in_place() -> Result<(), Error> {
    let a = random_nd(&[6, 8, 10], 11);
    let plan = FftPlan::fftn(a.shape(), &FftOptions::new().axes(&[0, 2]))?;
    let want = fft::fftn_with(&a, &FftOptions::new().axes(&[0, 2]))?;
    assert_eq!(plan.execute(&a)?, want);
    let mut out = ArrayD::zeros(IxDyn(&[6, 8, 10]));
    plan.execute_into(&a, &mut out)?;
    assert_eq!(out, want);
    // Into a transposed (non-standard) output.
    let mut t = ArrayD::zeros(IxDyn(&[10, 8, 6]));
    plan.execute_into(&a, &mut t.view_mut().reversed_axes())?;
    assert_eq!(t.view().reversed_axes(), want);
    let mut b = a.clone();
    plan.execute_inplace(&mut b)?;
    assert!(max_err(&b, &want) < 1e-15);
    // A real transform into a transposed output: more rows than one block of the strided
    // scatter (32), and a short last block, on one thread and on all (enough work to split).
    let re = random_nd(&[70, 1000], 12).mapv(|z| z.re as f32);
    for target in [Target::Cpu, Target::Parallel] {
        let o = FftOptions::new().target(target);
        let plan = FftPlan::rfftn(&[70, 1000], &o)?;
        let want = plan.execute(&re)?;
        let mut t = ArrayD::zeros(IxDyn(&[501, 70]));
        plan.execute_into(&re, &mut t.view_mut().reversed_axes())?;
        assert_eq!(t.view().reversed_axes(), want, "{target:?}");
        let rows = FftPlan::rfftn(&[70, 1000], &o.clone().axis(1))?;
        let want = rows.execute(&re)?;
        rows.execute_into(&re, &mut t.view_mut().reversed_axes())?;
        assert_eq!(t.view().reversed_axes(), want, "{target:?} rows");
    }
    let e = plan.execute(&random_nd(&[6, 8], 1)).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    let cropping = FftPlan::fftn(&[6, 8], &FftOptions::new().s(&[4, 4]))?;
    let mut c = random_nd(&[6, 8], 1);
    assert!(cropping.execute_inplace(&mut c).is_err());
    // An axis named twice is transformed twice (NumPy), in place too: twice forward along a
    // length-n axis is n times the input reversed there.
    let twice = FftPlan::fftn(&[6, 8], &FftOptions::new().axes(&[1, 1]))?;
    twice.execute_inplace(&mut c)?;
    let c0 = random_nd(&[6, 8], 1);
    let reversed = Array2::from_shape_fn((6, 8), |(i, j)| c0[[i, (8 - j) % 8]] * 8.0);
    assert!(max_err(&c, &reversed.into_dyn()) < 1e-13);
    Ok(())
}

/// A real-input plan whose output is over 16 MiB writes its rows with non-temporal stores:
/// the same values as the plan of half the rows (whose output is not streamed), also into an
/// output of `Complex<f64>` that starts 8 bytes past 16, inside a cache line's element.
#[test]
fn a_large_real_output_is_streamed_with_the_same_values() -> Result<(), Error> {
    let n = 4096;
    let mut rng = Lcg(41);
    let rows32 = Array2::from_shape_fn((1100, n), |_| rng.next() as f32);
    let plan = FftPlan::rfftn(&[1100, n], &FftOptions::new().axis(1))?;
    let mut out = Array2::<Complex<f32>>::zeros((1100, n / 2 + 1));
    plan.execute_into(&rows32, &mut out)?;
    let half = FftPlan::rfftn(&[550, n], &FftOptions::new().axis(1))?;
    for k in 0..2 {
        let mut part = Array2::<Complex<f32>>::zeros((550, n / 2 + 1));
        half.execute_into(&rows32.slice(s![550 * k..550 * (k + 1), ..]), &mut part)?;
        assert_eq!(
            part,
            out.slice(s![550 * k..550 * (k + 1), ..]),
            "f32, half {k}"
        );
    }

    let rows64 = rows32.slice(s![..600, ..]).mapv(f64::from);
    let plan = FftPlan::rfftn(&[600, n], &FftOptions::new().axis(1))?;
    let len = 600 * (n / 2 + 1);
    let mut storage = vec![0.0f64; 2 * len + 3];
    let start = storage.as_mut_ptr();
    // One f64 in from a 16-byte boundary: aligned for `Complex<f64>` (8), not for 16.
    let skip = if start as usize % 16 == 0 { 1 } else { 0 };
    // SAFETY: `2 * len` f64s from `start + skip` lie inside `storage`, aligned for
    // `Complex<f64>` (a pair of f64), and nothing else uses them while the view lives.
    let mut out = unsafe {
        ndarray::ArrayViewMut2::from_shape_ptr(
            (600, n / 2 + 1),
            start.add(skip) as *mut Complex<f64>,
        )
    };
    plan.execute_into(&rows64, &mut out)?;
    let half = FftPlan::rfftn(&[300, n], &FftOptions::new().axis(1))?;
    for k in 0..2 {
        let mut part = Array2::<Complex<f64>>::zeros((300, n / 2 + 1));
        half.execute_into(&rows64.slice(s![300 * k..300 * (k + 1), ..]), &mut part)?;
        assert_eq!(
            part,
            out.slice(s![300 * k..300 * (k + 1), ..]),
            "f64, half {k}"
        );
    }
    Ok(())
}
