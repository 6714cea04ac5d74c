//! SciPy parity of `ufunc::signal`: every case of `tests/fixtures/conv/cases.json` (made by
//! `scripts/fixtures/conv_fixtures.py`: all modes, 1-d to 3-d, axes with broadcasting, kernels
//! longer than the input, complex and mixed inputs, empty inputs and the error cases) through
//! the FFT, overlap-add and direct methods, within 1e-5 of the largest value for float32.

mod common;
use ndarray::{ArrayD, IxDyn};
use num_complex::Complex;
use serde_json::Value;
use ufunc::fft::FftElement;
use ufunc::signal::{self, ConvElement, ConvOptions, Method, Mode};
use ufunc::Target;

type C64 = Complex<f64>;

use common::fixture_values as values;

trait FromC64: FftElement {
    fn from_c64(v: C64) -> Self;
    fn to_c64(self) -> C64;
}
impl FromC64 for f32 {
    fn from_c64(v: C64) -> Self {
        v.re as f32
    }
    fn to_c64(self) -> C64 {
        C64::new(self as f64, 0.0)
    }
}
impl FromC64 for f64 {
    fn from_c64(v: C64) -> Self {
        v.re
    }
    fn to_c64(self) -> C64 {
        C64::new(self, 0.0)
    }
}
impl FromC64 for Complex<f32> {
    fn from_c64(v: C64) -> Self {
        Complex::new(v.re as f32, v.im as f32)
    }
    fn to_c64(self) -> C64 {
        C64::new(self.re as f64, self.im as f64)
    }
}
impl FromC64 for Complex<f64> {
    fn from_c64(v: C64) -> Self {
        v
    }
    fn to_c64(self) -> C64 {
        self
    }
}

fn array<T: FromC64>(v: &Value) -> ArrayD<T> {
    let (shape, vals) = values(v);
    ArrayD::from_shape_vec(IxDyn(&shape), vals.into_iter().map(T::from_c64).collect()).unwrap()
}

/// Our result of one case, one mode, one method: shape and values, or the error's text.
fn ours<A, B>(
    case: &Value,
    mode: Mode,
    method: Method,
    target: Target,
) -> Result<(Vec<usize>, Vec<C64>), String>
where
    A: ConvElement<B> + FromC64,
    B: FftElement<Real = A::Real> + FromC64,
    A::Output: FromC64,
{
    let (a, b) = (array::<A>(&case["in1"]), array::<B>(&case["in2"]));
    let mut o = ConvOptions::new(mode).method(method).target(target);
    if let Some(axes) = case["axes"].as_array() {
        let axes: Vec<usize> = axes.iter().map(|n| n.as_u64().unwrap() as usize).collect();
        o = o.axes(&axes);
    }
    let r = signal::convolve_with(&a, &b, &o).map_err(|e| e.to_string())?;
    Ok((r.shape().to_vec(), r.iter().map(|v| v.to_c64()).collect()))
}

fn check_case(case: &Value, index: usize) {
    let dtypes = (
        case["in1"]["dtype"].as_str().unwrap(),
        case["in2"]["dtype"].as_str().unwrap(),
    );
    let single = dtypes.0.ends_with("32") || dtypes.0 == "complex64";
    let tol = if single { 1e-5 } else { 1e-9 };
    let empty = [&case["in1"], &case["in2"]]
        .iter()
        .any(|v| v["values"].as_array().unwrap().is_empty());
    for (mode_name, mode) in [
        ("full", Mode::Full),
        ("same", Mode::Same),
        ("valid", Mode::Valid),
    ] {
        let expected = &case["modes"][mode_name];
        let fft_expected = &expected["fftconvolve"];
        // SciPy's choose_conv_method for these inputs, as `Method::Auto` chooses.
        if let Some(choice) = expected["choice"].as_str() {
            let shape = |v: &Value| -> Vec<usize> {
                let dims = v["shape"].as_array().unwrap();
                dims.iter().map(|n| n.as_u64().unwrap() as usize).collect()
            };
            let want = if choice == "fft" {
                Method::Fft
            } else {
                Method::Direct
            };
            let got = signal::choose_conv_method(&shape(&case["in1"]), &shape(&case["in2"]), mode);
            assert_eq!(got, want, "case {index} {mode_name}: choose_conv_method");
        }
        for (name, method, target) in [
            ("fftconvolve", Method::Fft, Target::Parallel),
            ("fftconvolve", Method::Fft, Target::Cpu),
            ("oaconvolve", Method::OverlapAdd, Target::Parallel),
            ("direct", Method::Direct, Target::Cpu),
            ("auto", Method::Auto, Target::Parallel),
        ] {
            let want = match name {
                "auto" if case["axes"].is_null() => &expected["direct"],
                "auto" => continue,
                _ => &expected[name],
            };
            if want.is_null() {
                continue;
            }
            let want = if want.get("matches_fftconvolve").is_some() {
                fft_expected
            } else {
                want
            };
            let got = match dtypes {
                ("float64", "float64") => ours::<f64, f64>(case, mode, method, target),
                ("float32", "float32") => ours::<f32, f32>(case, mode, method, target),
                ("complex128", "complex128") => ours::<C64, C64>(case, mode, method, target),
                ("float64", "complex128") => ours::<f64, C64>(case, mode, method, target),
                ("complex64", "float32") => ours::<Complex<f32>, f32>(case, mode, method, target),
                other => panic!("case {index}: dtypes {other:?} not covered"),
            };
            let what = format!(
                "case {index} {:?} {:?} {mode_name} {name} {target}",
                case["in1"]["shape"], case["in2"]["shape"]
            );
            match (want.get("error"), got) {
                (Some(_), Err(_)) => {}
                // SciPy's direct method refuses some empty inputs; ours gives the empty result
                // fftconvolve gives.
                (Some(_), Ok((_, v))) if empty && v.is_empty() => {}
                (Some(e), Ok((shape, _))) => {
                    panic!("{what}: SciPy raised {e} but we gave shape {shape:?}")
                }
                (None, Err(e)) => panic!("{what}: {e}"),
                (None, Ok((shape, v))) => {
                    let (want_shape, want_v) = values(&want["result"]);
                    if want_v.is_empty() {
                        assert!(
                            v.is_empty(),
                            "{what}: expected an empty result, got {shape:?}"
                        );
                        continue;
                    }
                    assert_eq!(shape, want_shape, "{what}");
                    let scale = want_v.iter().map(|z| z.norm()).fold(1e-30, f64::max);
                    let err = v
                        .iter()
                        .zip(&want_v)
                        .map(|(a, b)| (a - b).norm())
                        .fold(0.0, f64::max)
                        / scale;
                    assert!(err <= tol, "{what}: relative error {err:e}");
                }
            }
        }
    }
}

#[test]
fn scipy_parity_on_every_fixture() {
    let text = include_str!("fixtures/conv/cases.json");
    let fixtures: Value = serde_json::from_str(text).unwrap();
    for (i, case) in fixtures["cases"].as_array().unwrap().iter().enumerate() {
        check_case(case, i);
    }
}

#[test]
fn errors_name_the_shapes_and_axes() {
    use ndarray::{array, Array2};
    let a = Array2::<f64>::zeros((6, 8));
    let b = Array2::<f64>::zeros((8, 6));
    let e = signal::fftconvolve(&a, &b, Mode::Valid).unwrap_err();
    assert_eq!(
        e.to_string(),
        "convolution inputs of shapes (6,8) and (8,6) (convolved axes [0, 1]) do not fit mode `valid`: \
         one must be at least as large as the other on every convolved axis"
    );
    let e =
        signal::fftconvolve_axes(&a, &Array2::<f64>::zeros((2, 3)), Mode::Full, &[1]).unwrap_err();
    assert!(e.to_string().contains("must be equal or 1"), "{e}");
    let e = signal::fftconvolve_axes(&a, &b, Mode::Full, &[2]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "convolution inputs of shapes (6,8) and (8,6) (convolved axes [2]) cannot be convolved \
         along an axis they do not have"
    );
    let e = signal::fftconvolve_axes(&a, &b, Mode::Full, &[0, 0]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "convolution inputs of shapes (6,8) and (8,6) (convolved axes [0, 0]) cannot be convolved \
         twice along one axis"
    );
    let one = ndarray::arr0(2.0f32);
    assert_eq!(
        signal::fftconvolve(&one, &ndarray::arr0(3.0f32), Mode::Same).unwrap()[[]],
        6.0
    );
    let x = array![1.0f32, 2.0, 3.0];
    let y: ndarray::Array1<f32> = signal::oaconvolve(&x, &array![1.0f32], Mode::Full).unwrap();
    assert_eq!(y, x);
    // The trait's own method checks what it is given rather than reading out of bounds.
    let (a, b) = (
        ArrayD::<f64>::zeros(IxDyn(&[4, 4])),
        ArrayD::<f64>::zeros(IxDyn(&[3, 3])),
    );
    let o = ufunc::fft::FftOptions::new();
    for (axes, fshape, window) in [
        (vec![0, 0], vec![8, 8], vec![(0, 6), (0, 6)]),
        (vec![0, 1], vec![8, 8], vec![(4, 6), (0, 6)]),
        (vec![0, 1], vec![2, 8], vec![(0, 2), (0, 6)]),
        (vec![0, 2], vec![8, 8], vec![(0, 6), (0, 6)]),
        (vec![0, 1], vec![8, 8], vec![(0, 6)]),
    ] {
        let e = f64::spectrum_product(a.view(), b.view(), &axes, &fshape, &window, &o);
        assert!(
            matches!(e, Err(ufunc::Error::InvalidArgument { name: "window", .. })),
            "{axes:?} {fshape:?} {window:?}"
        );
    }
}

#[test]
fn large_overlap_add_matches_fft_in_f32() {
    let mut s = 7u64;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 40) as f32 / (1u64 << 24) as f32
    };
    let img = ndarray::Array2::from_shape_simple_fn((300, 257), &mut next);
    let k = ndarray::Array2::from_shape_simple_fn((9, 13), &mut next);
    for mode in [Mode::Full, Mode::Same, Mode::Valid] {
        let f = signal::fftconvolve(&img, &k, mode).unwrap();
        let o = signal::oaconvolve(&img, &k, mode).unwrap();
        let d = signal::convolve(
            &img.slice(ndarray::s![..40, ..50]),
            &k,
            mode,
            Method::Direct,
        )
        .unwrap();
        let f_crop = signal::fftconvolve(&img.slice(ndarray::s![..40, ..50]), &k, mode).unwrap();
        let max = f.iter().fold(0f32, |m, v| m.max(v.abs()));
        assert_eq!(f.shape(), o.shape());
        assert!(
            f.iter().zip(&o).all(|(a, b)| (a - b).abs() <= 1e-5 * max),
            "{mode:?}"
        );
        assert!(
            d.iter()
                .zip(&f_crop)
                .all(|(a, b)| (a - b).abs() <= 1e-5 * max),
            "{mode:?} direct"
        );
    }
}

/// The real FFT path transforms the inputs' first convolved axis, the product and its inverse
/// together, and writes only the kept window: checked against the direct sum on views (any
/// strides, reversed), every order of the axes (the fused axis contiguous or not, a middle
/// axis inverted in place), broadcast axes on either side, and every mode.
#[test]
fn fused_real_path_matches_the_direct_sum_on_views_and_axis_orders() {
    use ndarray::{s, Array3, Axis};
    let mut seed = 11u64;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let a = Array3::from_shape_simple_fn((9, 14, 11), &mut next);
    let b = Array3::from_shape_simple_fn((4, 5, 3), &mut next);
    let b_one = Array3::from_shape_simple_fn((1, 5, 3), &mut next);
    let a_view = a
        .slice(s![.., ..;-1, ..])
        .permuted_axes([2, 0, 1])
        .into_dyn(); // (11, 9, 14)
    let b_view = b.view().permuted_axes([2, 0, 1]).into_dyn(); // (3, 4, 5)
    let b_one = b_one.view().permuted_axes([2, 0, 1]).into_dyn(); // (3, 1, 5)
    let a_one = a_view.slice(s![.., ..1, ..]).into_dyn(); // (11, 1, 14)
    let cases = [
        (vec![0, 1, 2], a_view.view(), b_view.view()),
        (vec![2, 1, 0], a_view.view(), b_view.view()),
        (vec![1, 0, 2], a_view.view(), b_view.view()),
        (vec![2, 0], a_view.view(), b_one.view()),
        (
            vec![1],
            a_view.view(),
            b_view.clone().slice_move(s![..1, .., ..1]).into_dyn(),
        ),
        (vec![0, 2], a_view.view(), b_one.view()),
        (
            vec![2],
            a_view.view(),
            b_one.clone().slice_move(s![..1, .., ..]).into_dyn(),
        ),
        (vec![2, 0], a_one.view(), b_view.view()),
        // The first axis outermost but the first input broadcast: its spectrum cannot share
        // the product's buffer.
        (vec![0, 2], a_one.clone(), b_view.view()),
    ];
    for (axes, a, kernel) in cases {
        for mode in [Mode::Full, Mode::Same, Mode::Valid] {
            let direct = ConvOptions::new(mode).method(Method::Direct).axes(&axes);
            let fft = ConvOptions::new(mode).method(Method::Fft).axes(&axes);
            let want = signal::convolve_with(&a, &kernel, &direct).unwrap();
            for target in [Target::Cpu, Target::Parallel] {
                let got = signal::convolve_with(&a, &kernel, &fft.clone().target(target)).unwrap();
                assert_eq!(got.shape(), want.shape(), "{axes:?} {mode:?}");
                let err = got
                    .iter()
                    .zip(&want)
                    .fold(0f64, |m, (g, w)| m.max((g - w).abs()));
                assert!(err < 1e-12, "{axes:?} {mode:?} {target}: error {err}");
                // f32 through the same path.
                let a32 = a.mapv(|v| v as f32);
                let k32 = kernel.mapv(|v| v as f32);
                let got32 = signal::convolve_with(&a32, &k32, &fft.clone().target(target)).unwrap();
                let err = got32
                    .iter()
                    .zip(&want)
                    .fold(0f64, |m, (g, w)| m.max((*g as f64 - w).abs()));
                assert!(err < 1e-5, "{axes:?} {mode:?} {target} f32: error {err}");
            }
        }
    }
    // Four axes in a scrambled order (two middle axes inverted in place).
    let a4 = ndarray::Array4::from_shape_simple_fn((5, 6, 4, 7), &mut next).into_dyn();
    let b4 = ndarray::Array4::from_shape_simple_fn((2, 3, 3, 2), &mut next).into_dyn();
    for mode in [Mode::Full, Mode::Same, Mode::Valid] {
        let o = ConvOptions::new(mode).axes(&[3, 0, 2, 1]);
        let want = signal::convolve_with(&a4, &b4, &o.clone().method(Method::Direct)).unwrap();
        let got = signal::convolve_with(&a4, &b4, &o.method(Method::Fft)).unwrap();
        let err = got
            .iter()
            .zip(&want)
            .fold(0f64, |m, (g, w)| m.max((g - w).abs()));
        assert!(err < 1e-12, "4-d {mode:?}: error {err}");
    }
    // Large enough to be split over the threads: one axis (each lane's convolution in cache)
    // and two (the fused column pass and the cropped rows), odd lengths.
    let rows = ndarray::Array2::from_shape_simple_fn((3001, 65), &mut next);
    let row_kernel = ndarray::Array2::from_shape_simple_fn((1, 9), &mut next);
    let image = ndarray::Array2::from_shape_simple_fn((301, 257), &mut next);
    let kernel = ndarray::Array2::from_shape_simple_fn((15, 4), &mut next);
    for mode in [Mode::Full, Mode::Same, Mode::Valid] {
        for (x, k, axes) in [(&rows, &row_kernel, vec![1]), (&image, &kernel, vec![0, 1])] {
            let o = ConvOptions::new(mode).axes(&axes);
            let want = signal::convolve_with(x, k, &o.clone().method(Method::Direct)).unwrap();
            let got = signal::convolve_with(x, k, &o.method(Method::Fft)).unwrap();
            let err = got
                .iter()
                .zip(&want)
                .fold(0f64, |m, (g, w)| m.max((g - w).abs()));
            assert!(err < 1e-11, "{axes:?} {mode:?}: error {err}");
        }
    }
    // One axis, strided lanes (axis 0 of a 2-d view) and a long kernel swapped in `valid`.
    let x = a.index_axis(Axis(2), 3);
    let long = Array3::from_shape_simple_fn((20, 1, 1), &mut next)
        .into_shape_with_order((20, 1))
        .unwrap();
    for mode in [Mode::Full, Mode::Same, Mode::Valid] {
        let direct = ConvOptions::new(mode).method(Method::Direct).axes(&[0]);
        let want = signal::convolve_with(&x, &long, &direct).unwrap();
        let got = signal::fftconvolve_axes(&x, &long, mode, &[0]).unwrap();
        let err = got
            .iter()
            .zip(&want)
            .fold(0f64, |m, (g, w)| m.max((g - w).abs()));
        assert!(err < 1e-12, "{mode:?}: error {err}");
    }
}

/// SciPy's `convolve` wants, in `valid`, one input at least as large as the other on every
/// axis whatever the method; its `fftconvolve` and `oaconvolve` leave out the axes on which
/// either input has length 1 (a broadcast). `scipy.signal.convolve(ones((1, 5)), ones((4, 3)),
/// 'valid', method=m)` raises for every `m`; `fftconvolve` gives shape (4, 3).
#[test]
fn convolve_keeps_scipys_valid_rule_for_every_method() {
    use ndarray::Array2;
    let (a, b) = (Array2::<f64>::ones((1, 5)), Array2::<f64>::ones((4, 3)));
    for method in [
        Method::Auto,
        Method::Direct,
        Method::Fft,
        Method::OverlapAdd,
    ] {
        let e = signal::convolve(&a, &b, Mode::Valid, method).unwrap_err();
        assert!(
            e.to_string().contains("do not fit mode `valid`"),
            "{method:?}: {e}"
        );
        assert!(signal::convolve(&a, &b, Mode::Full, method).is_ok());
    }
    let want = Array2::<f64>::from_elem((4, 3), 3.0);
    let close = |x: &Array2<f64>| x.iter().zip(&want).all(|(x, w)| (x - w).abs() < 1e-12);
    assert!(close(&signal::fftconvolve(&a, &b, Mode::Valid).unwrap()));
    assert!(close(&signal::oaconvolve(&a, &b, Mode::Valid).unwrap()));
    let fft = ConvOptions::new(Mode::Valid).method(Method::Fft);
    assert!(close(&signal::convolve_with(&a, &b, &fft).unwrap()));
}

/// The direct sum computes only the points the mode keeps (a `valid` result of two equal
/// inputs is one point), the same values as the FFT's in every mode, with broadcast axes.
#[test]
fn the_direct_sum_computes_only_the_window() {
    use ndarray::{Array1, Array3};
    let mut rng = common::Lcg(41);
    let x = Array1::from_shape_simple_fn(3000, || rng.next() - 0.5);
    let y = Array1::from_shape_simple_fn(3000, || rng.next() - 0.5);
    let one = signal::convolve(&x, &y, Mode::Valid, Method::Direct).unwrap();
    let want: f64 = x.iter().zip(y.iter().rev()).map(|(a, b)| a * b).sum();
    assert_eq!(one.len(), 1);
    assert!((one[0] - want).abs() < 1e-9, "{} vs {want}", one[0]);
    let a = Array3::from_shape_simple_fn((3, 1, 17), || rng.next());
    let b = Array3::from_shape_simple_fn((1, 4, 6), || rng.next());
    for mode in [Mode::Full, Mode::Same, Mode::Valid] {
        for axes in [&[2][..], &[0, 2], &[1, 2]] {
            let o = ConvOptions::new(mode).axes(axes);
            let direct = signal::convolve_with(&a, &b, &o.clone().method(Method::Direct));
            let fft = signal::convolve_with(&a, &b, &o.method(Method::Fft));
            match (direct, fft) {
                (Ok(d), Ok(f)) => {
                    assert_eq!(d.shape(), f.shape(), "{mode:?} {axes:?}");
                    for (d, f) in d.iter().zip(&f) {
                        assert!((d - f).abs() < 1e-9, "{mode:?} {axes:?}: {d} vs {f}");
                    }
                }
                (d, f) => assert_eq!(d.is_ok(), f.is_ok(), "{mode:?} {axes:?}"),
            }
        }
    }
}

/// A transform, an overlap-add block list or a direct sum too large to allocate is an error,
/// not an abort, even where the result itself is small (a `same` or `valid` result over a
/// length of 2^44: its plan's twiddles alone would fill more than the address space).
#[test]
fn convolutions_too_large_to_plan_are_errors_not_aborts() {
    use ndarray::{array, Array1};
    use ufunc::Error;
    let one = Array1::from_elem(1, 1.0f64);
    let long = one.broadcast(1usize << 44).unwrap();
    let small = array![1.0f64, 2.0, 3.0];
    let too_large = |e: Error| {
        assert!(
            matches!(e, Error::OutOfMemory { .. } | Error::TooLarge { .. }),
            "{e}"
        )
    };
    too_large(signal::fftconvolve(&long, &long, Mode::Valid).unwrap_err());
    too_large(signal::fftconvolve(&small, &long, Mode::Same).unwrap_err());
    too_large(signal::oaconvolve(&long, &small, Mode::Valid).unwrap_err());
    too_large(signal::convolve(&long, &small, Mode::Full, Method::Direct).unwrap_err());
    // SciPy's choice here is the direct sum, which reaches the three points kept from five
    // kernel points only.
    assert_eq!(
        signal::choose_conv_method(&[3], &[1 << 44], Mode::Same),
        Method::Direct
    );
    let same = signal::convolve(&small, &long, Mode::Same, Method::Auto).unwrap();
    assert_eq!(same, array![6.0, 6.0, 6.0]);
}
