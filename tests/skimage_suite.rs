//! scikit-image's own tests of `phase_cross_correlation`
//! (`skimage/registration/tests/test_phase_cross_correlation.py`, 0.26), ported with the same
//! images, shifts and options: the fixtures of `scripts/fixtures/skimage_suite_fixtures.py` hold
//! the images (the camera, and the binary blobs drawn once with a seed) and scikit-image's own
//! result for each case. Each case is checked two ways: the known shift within the suite's
//! tolerance, and scikit-image's shift, error and phasediff on the same inputs.
//!
//! Not ported: the tests of invalid `space` and `normalization` strings (enums here), of the
//! private `_upsampled_dft`, of `disambiguate` (not an option of ours), of the deprecated
//! `return_error`, and float16 images in `test_real_input` (images are f32 or f64).

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
