//! scikit-image's own tests of `phase_cross_correlation`
//! (`skimage/registration/tests/test_phase_cross_correlation.py`, 0.26), ported with the same
//! images, shifts and options: the fixtures of `scripts/fixtures/skimage_suite_fixtures.py` hold
//! the images (the camera, and the binary blobs drawn once with a seed) and scikit-image's own
//! result for each case. Each case is checked two ways: the known shift within the suite's
//! tolerance, and scikit-image's shift, error and phasediff on the same inputs. The
//! `disambiguate` tests run on crops of the camera (against scikit-image) and on a texture of
//! our own with the suite's geometry (the suite's `eagle()` needs a download).
//!
//! Not ported: the tests of invalid `space` and `normalization` strings (enums here), of the
//! private `_upsampled_dft`, of the deprecated `return_error`, and float16 images in
//! `test_real_input` (images are f32 or f64).

mod common;
use common::numbers;
use ndarray::{Array, ArrayD, Ix1, IxDyn};
use ndarray_npy::read_npy;
use num_complex::Complex;
use serde_json::Value;
use std::f64::consts::PI;
use ufunc::fft;
use ufunc::registration::{phase_cross_correlation, Normalization, Pcc, PccOptions, Space};

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/registration/skimage"
);

fn camera() -> ArrayD<f64> {
    let cam: ndarray::Array2<u8> = read_npy(format!("{DIR}/camera.npy")).unwrap();
    cam.mapv(f64::from).into_dyn()
}

/// `binary_blobs(length=32, n_dim)` as the fixture script drew it, 0.0 and 1.0
/// (`img_as_float`), from its `np.packbits` bytes (most significant bit first).
fn blobs(n_dim: usize) -> ArrayD<f64> {
    let bytes: Array<u8, Ix1> = read_npy(format!("{DIR}/blobs{n_dim}.npy")).unwrap();
    let shape = vec![32; n_dim];
    let n: usize = shape.iter().product();
    let bits = (0..n).map(|i| f64::from((bytes[i / 8] >> (7 - i % 8)) & 1));
    ArrayD::from_shape_vec(IxDyn(&shape), bits.collect()).unwrap()
}

fn image(name: &str) -> ArrayD<f64> {
    match name {
        "camera" => camera(),
        // `camera()[:, 15]` as a column, 512x1.
        "camera_column_15" => camera()
            .slice_axis(ndarray::Axis(1), ndarray::Slice::from(15..16))
            .to_owned(),
        "blobs3" => blobs(3),
        "blobs4" => blobs(4),
        other => panic!("unknown image {other}"),
    }
}

/// `scipy.ndimage.fourier_shift(spectrum, shift)`: each point times `exp(-2 pi i Σ f s)`, with
/// `f` NumPy's `fftfreq` of its index along each axis.
fn fourier_shift(spectrum: &ArrayD<Complex<f64>>, shift: &[f64]) -> ArrayD<Complex<f64>> {
    let shape = spectrum.shape().to_vec();
    let mut out = spectrum.clone();
    for (k, z) in out.indexed_iter_mut() {
        let phase: f64 = (0..shape.len())
            .map(|d| {
                let (i, n) = (k[d] as f64, shape[d] as f64);
                let f = if k[d] < shape[d].div_ceil(2) {
                    i
                } else {
                    i - n
                } / n;
                -2.0 * PI * f * shift[d]
            })
            .sum();
        *z *= Complex::from_polar(1.0, phase);
    }
    out
}

fn spectrum(image: &ArrayD<f64>) -> ArrayD<Complex<f64>> {
    fft::fftn(&image.mapv(|v| Complex::new(v, 0.0))).unwrap()
}

/// The real image of a spectrum (`ifftn(..).real`).
fn real_image(spectrum: &ArrayD<Complex<f64>>) -> ArrayD<f64> {
    fft::ifftn(spectrum).unwrap().mapv(|z| z.re)
}

fn run(case: &Value) -> Pcc {
    let image = image(case["image"].as_str().unwrap());
    let shift = numbers(&case["applied_shift"]);
    let options = PccOptions {
        upsample_factor: case["upsample"].as_u64().unwrap() as u32,
        normalization: match case["normalization"].as_str().unwrap() {
            "phase" => Normalization::Phase,
            _ => Normalization::Off,
        },
        space: match case["space"].as_str().unwrap() {
            "fourier" => Space::Fourier,
            _ => Space::Real,
        },
        ..Default::default()
    };
    let reference = if case["image"] == "camera_column_15" {
        // The suite transforms the column alone (a 1-d FFT), then makes it 512x1.
        let column = image.index_axis(ndarray::Axis(1), 0).to_owned();
        let f = fft::fftn(&column.mapv(|v| Complex::new(v, 0.0))).unwrap();
        f.insert_axis(ndarray::Axis(1))
    } else {
        spectrum(&image)
    };
    let moving = fourier_shift(&reference, &shift);
    match (options.space, case["dtype"].as_str().unwrap()) {
        (Space::Fourier, _) => phase_cross_correlation(&reference, &moving, &options),
        (Space::Real, "float32") => {
            let moving = real_image(&moving).mapv(|v| v as f32);
            phase_cross_correlation(&image.mapv(|v| v as f32), &moving, &options)
        }
        (Space::Real, _) => phase_cross_correlation(&image, &real_image(&moving), &options),
    }
    .unwrap()
}

#[test]
fn scikit_image_suite_cases() {
    let text = std::fs::read_to_string(format!("{DIR}/cases.json")).unwrap();
    let fixtures: Value = serde_json::from_str(&text).unwrap();
    let cases = fixtures["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 11);
    for case in cases {
        let what = format!(
            "{} ({}, U={}, {}, {})",
            case["test"], case["image"], case["upsample"], case["normalization"], case["dtype"]
        );
        let got = run(case);
        let expected = numbers(&case["expected"]);
        let atol = case["atol"].as_f64().unwrap();
        for (g, e) in got.shift.iter().zip(&expected) {
            assert!(
                (g - e).abs() <= atol,
                "{what}: shift {:?}, expected {expected:?}",
                got.shift
            );
        }
        // scikit-image on the same inputs (made with scipy.fft there): the same shift to well
        // within a step of the upsampled grid, the same error and phasediff.
        let theirs = &case["skimage"];
        let step = 1.0 / case["upsample"].as_f64().unwrap();
        for (g, t) in got.shift.iter().zip(numbers(&theirs["shift"])) {
            assert!(
                (g - t).abs() < step / 10.0,
                "{what}: shift {:?}, scikit-image {}",
                got.shift,
                theirs["shift"]
            );
        }
        for (name, ours) in [("error", got.error), ("phasediff", got.phasediff)] {
            let t = theirs[name].as_f64().unwrap();
            assert!(
                (ours - t).abs() < 1e-6,
                "{what}: {name} {ours}, scikit-image {t}"
            );
        }
    }
}

/// `test_wrong_input`: shapes that differ in dimensionality or size, and NaN, are errors.
#[test]
fn scikit_image_wrong_input() {
    let ones = |shape: &[usize]| ArrayD::<f64>::ones(IxDyn(shape));
    let options = PccOptions::default();
    assert!(phase_cross_correlation(&ones(&[5, 5]), &ones(&[5, 5, 1]), &options).is_err());
    assert!(phase_cross_correlation(&ones(&[4, 4]), &ones(&[5, 5]), &options).is_err());
    let mut nan = ones(&[5, 5]);
    nan[[0, 0]] = f64::NAN;
    let e = phase_cross_correlation(&ones(&[5, 5]), &nan, &options).unwrap_err();
    assert!(e.to_string().contains("NaN"), "{e}");
}

fn disambiguating() -> PccOptions {
    PccOptions {
        disambiguate: true,
        ..Default::default()
    }
}

/// `test_disambiguate_2d`'s geometry on crops of the camera (the suite's `eagle()` needs a
/// download): 300x300 crops 60 or 180 pixels apart along each axis. A shift of 180 is past half
/// the crop, where the periodic peak says -120 (or 120): only the disambiguation finds it.
#[test]
fn scikit_image_disambiguate_2d_on_the_camera() {
    let text = std::fs::read_to_string(format!("{DIR}/cases.json")).unwrap();
    let fixtures: Value = serde_json::from_str(&text).unwrap();
    let cam = camera();
    let crop = |origin: &[f64]| {
        let (y, x) = (origin[0] as usize, origin[1] as usize);
        cam.slice(ndarray::s![y..y + 300, x..x + 300]).to_owned()
    };
    let cases = fixtures["disambiguate_2d"].as_array().unwrap();
    assert_eq!(cases.len(), 16);
    for case in cases {
        let (reference, moving) = (
            crop(&numbers(&case["origin0"])),
            crop(&numbers(&case["origin1"])),
        );
        let truth = numbers(&case["shift"]);
        let got = phase_cross_correlation(&reference, &moving, &disambiguating()).unwrap();
        assert_eq!(got.shift, truth, "disambiguated, shift {truth:?}");
        assert_eq!(got.shift, numbers(&case["skimage"]["shift"]));
        // Without it, the periodic answer: the same modulo 300, within (-150, 150].
        let plain = phase_cross_correlation(&reference, &moving, &PccOptions::default()).unwrap();
        for (p, t) in plain.shift.iter().zip(&truth) {
            assert!(
                (p - t).rem_euclid(300.0) == 0.0 && *p > -150.0 && *p <= 150.0,
                "{plain:?}"
            );
        }
    }
}

/// `test_disambiguate_2d` as the suite writes it (450x450 crops, shifts of 100 and 350 pixels),
/// on a textured image of our own in place of `eagle()`: the known shift, exactly.
#[test]
fn scikit_image_disambiguate_2d_geometry() {
    let mut rng = common::Lcg(7);
    let noise = ndarray::Array2::from_shape_simple_fn((801, 801), || rng.next());
    // A little smoothing, as a photograph's texture.
    let texture = ndarray::Array2::from_shape_fn((800, 800), |(y, x)| {
        noise[[y, x]] + noise[[y + 1, x]] + noise[[y, x + 1]] + noise[[y + 1, x + 1]]
    });
    for s0 in [100i64, -100, 350, -350] {
        for s1 in [100i64, -100, 350, -350] {
            let shift = [s0, s1];
            let origin0: Vec<usize> = shift
                .iter()
                .map(|&s| if s > 0 { 0 } else { -s as usize })
                .collect();
            let origin1: Vec<usize> = origin0
                .iter()
                .zip(shift)
                .map(|(&o, s)| (o as i64 + s) as usize)
                .collect();
            let crop = |o: &[usize]| texture.slice(ndarray::s![o[0]..o[0] + 450, o[1]..o[1] + 450]);
            let got = phase_cross_correlation(&crop(&origin0), &crop(&origin1), &disambiguating())
                .unwrap();
            assert_eq!(got.shift, vec![s0 as f64, s1 as f64]);
        }
    }
}

/// `test_disambiguate_zero_shift`, `test_disambiguate_empty_image` and
/// `test_invalid_value_in_division_warnings`: overlaps that cannot decide leave the shift as
/// found (scikit-image warns), as scikit-image does.
#[test]
fn scikit_image_disambiguate_degenerate_cases() {
    let text = std::fs::read_to_string(format!("{DIR}/cases.json")).unwrap();
    let fixtures: Value = serde_json::from_str(&text).unwrap();
    let want = &fixtures["degenerate"];
    let cam = camera();
    for (k, disambiguate) in [true, false].into_iter().enumerate() {
        let options = PccOptions {
            disambiguate,
            ..Default::default()
        };
        let got = phase_cross_correlation(&cam, &cam, &options).unwrap();
        assert_eq!(got.shift, numbers(&want["zero_shift"][k]["shift"]));
        assert_eq!(got.shift, vec![0.0, 0.0]);
    }
    // An empty moving image: no overlap correlates; scikit-image's error is NaN (null).
    let got = phase_cross_correlation(&cam, &(&cam * 0.0), &disambiguating()).unwrap();
    assert_eq!(got.shift, numbers(&want["empty_image"]["shift"]));
    assert!(
        want["empty_image"]["error"].is_null() && got.error.is_nan(),
        "{got:?}"
    );
    assert_eq!(
        got.phasediff,
        want["empty_image"]["phasediff"].as_f64().unwrap()
    );
    // Two images of one bright pixel each.
    let delta = |at: usize| {
        let mut a = ndarray::Array2::<f64>::zeros((100, 100));
        a[[at, at]] = 1.0;
        a
    };
    let got = phase_cross_correlation(&delta(50), &delta(60), &disambiguating()).unwrap();
    let theirs = &want["deltas"];
    assert_eq!(got.shift, numbers(&theirs["shift"]));
    assert!(
        (got.error - theirs["error"].as_f64().unwrap()).abs() < 1e-6,
        "{got:?}"
    );
    assert!(
        (got.phasediff - theirs["phasediff"].as_f64().unwrap()).abs() < 1e-6,
        "{got:?}"
    );
}
