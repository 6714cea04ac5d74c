//! NumPy parity of `ufunc::fft`: every case of `tests/fixtures/fft/cases.json` (made by
//! `scripts/fixtures/fft_fixtures.py`): each function with NumPy's `n`/`s`, `axis`/`axes` and
//! `norm`, float32 and float64, real and complex, 1-d to 3-d.

mod common;
use ndarray::{ArrayD, IxDyn};
use num_complex::Complex;
use serde_json::Value;
use ufunc::fft::{self, FftOptions, Norm};

type C64 = Complex<f64>;

use common::fixture_values as values;

fn usizes(v: &Value) -> Option<Vec<usize>> {
    v.as_array()
        .map(|a| a.iter().map(|n| n.as_u64().unwrap() as usize).collect())
}

fn options(kwargs: &Value) -> FftOptions {
    let mut o = FftOptions::new();
    if let Some(n) = kwargs["n"].as_u64() {
        o = o.n(n as usize);
    }
    if let Some(axis) = kwargs["axis"].as_u64() {
        o = o.axis(axis as usize);
    }
    if let Some(s) = usizes(&kwargs["s"]) {
        o = o.s(&s);
    }
    if let Some(axes) = usizes(&kwargs["axes"]) {
        o = o.axes(&axes);
    }
    match kwargs["norm"].as_str() {
        Some("ortho") => o.norm(Norm::Ortho),
        Some("forward") => o.norm(Norm::Forward),
        _ => o,
    }
}

macro_rules! run_typed {
    ($f:expr, $x:expr, $o:expr, $real:ty) => {{
        let (shape, vals) = $x;
        let real = || {
            ArrayD::from_shape_vec(IxDyn(&shape), vals.iter().map(|v| v.re as $real).collect())
                .unwrap()
        };
        let cplx = || {
            ArrayD::from_shape_vec(
                IxDyn(&shape),
                vals.iter()
                    .map(|v| Complex::new(v.re as $real, v.im as $real))
                    .collect(),
            )
            .unwrap()
        };
        let c = |a: ArrayD<Complex<$real>>| {
            (
                a.shape().to_vec(),
                a.iter()
                    .map(|v| C64::new(v.re as f64, v.im as f64))
                    .collect::<Vec<_>>(),
            )
        };
        let r = |a: ArrayD<$real>| {
            (
                a.shape().to_vec(),
                a.iter()
                    .map(|v| C64::new(*v as f64, 0.0))
                    .collect::<Vec<_>>(),
            )
        };
        let complex_input = vals.iter().any(|v| v.im != 0.0);
        match ($f, complex_input) {
            ("fft", false) => c(fft::fft_with(&real(), $o).unwrap()),
            ("fft", true) => c(fft::fft_with(&cplx(), $o).unwrap()),
            ("ifft", _) => c(fft::ifft_with(&cplx(), $o).unwrap()),
            ("rfft", _) => c(fft::rfft_with(&real(), $o).unwrap()),
            ("irfft", _) => r(fft::irfft_with(&cplx(), $o).unwrap()),
            ("fft2", false) => c(fft::fft2_with(&real(), $o).unwrap()),
            ("fft2", true) => c(fft::fft2_with(&cplx(), $o).unwrap()),
            ("ifft2", _) => c(fft::ifft2_with(&cplx(), $o).unwrap()),
            ("rfft2", _) => c(fft::rfft2_with(&real(), $o).unwrap()),
            ("irfft2", _) => r(fft::irfft2_with(&cplx(), $o).unwrap()),
            ("fftn", false) => c(fft::fftn_with(&real(), $o).unwrap()),
            ("fftn", true) => c(fft::fftn_with(&cplx(), $o).unwrap()),
            ("ifftn", _) => c(fft::ifftn_with(&cplx(), $o).unwrap()),
            ("rfftn", _) => c(fft::rfftn_with(&real(), $o).unwrap()),
            ("irfftn", _) => r(fft::irfftn_with(&cplx(), $o).unwrap()),
            (other, _) => panic!("unknown function {other}"),
        }
    }};
}

#[test]
fn numpy_parity_on_every_fixture() {
    let fixtures: Value = serde_json::from_str(include_str!("fixtures/fft/cases.json")).unwrap();
    for (i, case) in fixtures["cases"].as_array().unwrap().iter().enumerate() {
        let f = case["function"].as_str().unwrap();
        let dtype = case["input"]["dtype"].as_str().unwrap();
        let o = options(&case["kwargs"]);
        let single = dtype == "float32" || dtype == "complex64";
        let (shape, got) = if single {
            run_typed!(f, values(&case["input"]), &o, f32)
        } else {
            run_typed!(f, values(&case["input"]), &o, f64)
        };
        let (want_shape, want) = values(&case["result"]);
        assert_eq!(shape, want_shape, "case {i} {f} {}", case["kwargs"]);
        let scale = want.iter().map(|z| z.norm()).fold(1e-30, f64::max);
        let err = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).norm())
            .fold(0.0, f64::max)
            / scale;
        let tol = if single { 2e-6 } else { 1e-9 };
        assert!(
            err <= tol,
            "case {i} {f} {}: relative error {err:e}",
            case["kwargs"]
        );
    }
}

/// The helpers against NumPy and SciPy (`tests/fixtures/fft/helpers.json`, made by the same
/// script): `fftfreq` and `rfftfreq` for odd and even lengths and two spacings, `fftshift` and
/// `ifftshift` over all axes or some of 1-d to 3-d arrays, and `next_fast_len` and
/// `prev_fast_len` (complex and real) for every target up to 2000 and a few large ones.
#[test]
fn helpers_match_numpy_and_scipy() {
    let fixtures: Value = serde_json::from_str(include_str!("fixtures/fft/helpers.json")).unwrap();
    let floats = |v: &Value| -> Vec<f64> {
        let values = v["values"].as_array().unwrap();
        values.iter().map(|x| x.as_f64().unwrap()).collect()
    };
    for f in fixtures["freqs"].as_array().unwrap() {
        let (n, d) = (f["n"].as_u64().unwrap() as usize, f["d"].as_f64().unwrap());
        // The fixture keeps ten significant digits.
        let close = |got: &[f64], want: &[f64], tol: f64| {
            got.len() == want.len()
                && got
                    .iter()
                    .zip(want)
                    .all(|(a, b)| (a - b).abs() <= tol * b.abs().max(1.0))
        };
        let got = fft::fftfreq(n, d).unwrap();
        let ok = close(got.as_slice().unwrap(), &floats(&f["fftfreq"]), 1e-9);
        assert!(ok, "fftfreq({n}, {d}): {got}");
        let got = fft::rfftfreq(n, d).unwrap();
        let ok = close(got.as_slice().unwrap(), &floats(&f["rfftfreq"]), 1e-9);
        assert!(ok, "rfftfreq({n}, {d}): {got}");
        let got32 = fft::fftfreq(n, d as f32).unwrap().mapv(f64::from);
        let ok = close(got32.as_slice().unwrap(), &floats(&f["fftfreq"]), 1e-6);
        assert!(ok, "fftfreq::<f32>({n}, {d}): {got32}");
    }
    for case in fixtures["shifts"].as_array().unwrap() {
        let shape = usizes(&case["shape"]).unwrap();
        let x = ndarray::ArrayD::from_shape_vec(
            IxDyn(&shape),
            (0..shape.iter().product::<usize>() as i64).collect(),
        )
        .unwrap();
        let ints = |v: &Value| -> Vec<i64> {
            let values = v["values"].as_array().unwrap();
            values.iter().map(|x| x.as_f64().unwrap() as i64).collect()
        };
        let (shifted, unshifted) = match usizes(&case["axes"]) {
            None => (fft::fftshift(&x), fft::ifftshift(&x)),
            Some(axes) => (
                fft::fftshift_axes(&x, &axes).unwrap(),
                fft::ifftshift_axes(&x, &axes).unwrap(),
            ),
        };
        let what = format!("shape {shape:?} axes {}", case["axes"]);
        assert_eq!(
            shifted.iter().copied().collect::<Vec<_>>(),
            ints(&case["fftshift"]),
            "fftshift {what}"
        );
        assert_eq!(
            unshifted.iter().copied().collect::<Vec<_>>(),
            ints(&case["ifftshift"]),
            "ifftshift {what}"
        );
    }
    let fast = &fixtures["next_fast_len"];
    let column = |name: &str| usizes(&fast[name]).unwrap();
    for ((t, c), r) in column("targets")
        .into_iter()
        .zip(column("complex"))
        .zip(column("real"))
    {
        assert_eq!(fft::next_fast_len(t), Some(c), "next_fast_len({t})");
        assert_eq!(
            fft::next_fast_len_real(t),
            Some(r),
            "next_fast_len({t}, real=True)"
        );
    }
    for ((t, c), r) in column("targets")
        .into_iter()
        .zip(column("prev_complex"))
        .zip(column("prev_real"))
    {
        assert_eq!(fft::prev_fast_len(t), c, "prev_fast_len({t})");
        assert_eq!(
            fft::prev_fast_len_real(t),
            r,
            "prev_fast_len({t}, real=True)"
        );
    }
}
