//! scikit-image parity: `phase_cross_correlation` on the fixtures that
//! `scripts/fixtures/registration_fixtures.py` generated with scikit-image (2-d and 3-d, odd and
//! even sizes, float32 and float64, noise, upsample 1, 10 and 20, phase and plain
//! normalization).

mod common;
use common::numbers;
use ndarray::{ArrayD, IxDyn};
use serde_json::Value;
use std::f64::consts::PI;
use ufunc::registration::{phase_cross_correlation, Normalization, Pcc, PccOptions};

fn run(case: &Value, options: &PccOptions) -> Pcc {
    let shape: Vec<usize> = numbers(&case["shape"])
        .iter()
        .map(|&n| n as usize)
        .collect();
    let image = |key: &str| ArrayD::from_shape_vec(IxDyn(&shape), numbers(&case[key])).unwrap();
    let (reference, moving) = (image("reference"), image("moving"));
    match case["dtype"].as_str() {
        Some("float32") => phase_cross_correlation(
            &reference.mapv(|v| v as f32),
            &moving.mapv(|v| v as f32),
            options,
        ),
        _ => phase_cross_correlation(&reference, &moving, options),
    }
    .unwrap()
}

#[test]
fn matches_scikit_image() {
    let text = include_str!("fixtures/registration/cases.json");
    let fixtures: Value = serde_json::from_str(text).unwrap();
    let mut checked = 0;
    for case in fixtures["cases"].as_array().unwrap() {
        for want in case["results"].as_array().unwrap() {
            let upsample = want["upsample"].as_u64().unwrap() as u32;
            let normalization = match want["normalization"].as_str().unwrap() {
                "phase" => Normalization::Phase,
                _ => Normalization::Off,
            };
            let what = format!(
                "shape {} {} U={upsample} {normalization:?}",
                case["shape"], case["dtype"]
            );
            let got = run(
                case,
                &PccOptions {
                    upsample_factor: upsample,
                    normalization,
                    ..Default::default()
                },
            );
            let shift = numbers(&want["shift"]);
            let tol = if upsample == 1 {
                0.0
            } else {
                1.0 / upsample as f64 + 0.01
            };
            for (g, w) in got.shift.iter().zip(&shift) {
                assert!(
                    (g - w).abs() <= tol,
                    "{what}: shift {:?}, scikit-image {shift:?}",
                    got.shift
                );
            }
            let (error, phasediff) = (
                want["error"].as_f64().unwrap(),
                want["phasediff"].as_f64().unwrap(),
            );
            if normalization == Normalization::Off {
                // error = sqrt(|1 - ratio|): near 0 the square root magnifies float32 rounding
                // of the ratio (scikit-image works in complex64 there), so float32 cases compare
                // the ratio, float64 ones the error itself.
                let close = match case["dtype"].as_str() {
                    Some("float32") => (got.error.powi(2) - error.powi(2)).abs() < 1e-5,
                    _ => (got.error - error).abs() < 1e-4,
                };
                assert!(close, "{what}: error {} vs {error}", got.error);
                let d = (got.phasediff - phasediff).rem_euclid(2.0 * PI);
                assert!(
                    d.min(2.0 * PI - d) < 1e-4,
                    "{what}: phasediff {} vs {phasediff}",
                    got.phasediff
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 48);
}
