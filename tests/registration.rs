//! Phase correlation: known shifts on exactly periodic images (2-d and 3-d, odd and even sizes,
//! shifts near half the image), the real 2-d path against the general n-d path, the error and
//! phasediff formulas, and the errors.

mod common;
use common::Lcg;
use ndarray::{Array, Array2, Array3, ArrayD, Dimension, IxDyn};
use num_complex::Complex;
use std::f64::consts::PI;
use ufunc::registration::{
    align_movie, phase_cross_correlation, AlignOptions, Correlator, Normalization, Pcc, PccOptions,
    Space,
};
use ufunc::{Error, Target};

/// A periodic image of `shape` with a full spectrum: a wave of random phase and 1/(1+|k|)
/// amplitude at every integer frequency short of Nyquist, sampled at positions moved by
/// `shift`, so that `image(shape, s)` is exactly `image(shape, 0)` translated by `s` and
/// registering it back needs `-s`.
fn image(shape: &[usize], shift: &[f64], seed: u64) -> ArrayD<f64> {
    let mut rng = Lcg(seed);
    // Frequencies with |k_d| < n_d / 2 on every axis.
    let ranges: Vec<Vec<i64>> = shape
        .iter()
        .map(|&n| {
            let h = (n as i64 - 1) / 2;
            (-h..=h).collect()
        })
        .collect();
    let mut waves: Vec<(Vec<f64>, f64, f64)> = vec![(vec![], 1.0, 0.0)];
    for r in &ranges {
        waves = waves
            .into_iter()
            .flat_map(|(k, _, _)| {
                r.iter().map(move |&v| {
                    let mut k = k.clone();
                    k.push(v as f64);
                    (k, 0.0, 0.0)
                })
            })
            .collect();
    }
    for (k, a, phase) in &mut waves {
        *a = 1.0 / (1.0 + k.iter().map(|v| v * v).sum::<f64>().sqrt());
        *phase = rng.next() * 2.0 * PI;
    }
    ArrayD::from_shape_fn(IxDyn(shape), |ix| {
        let ix = ix.slice();
        10.0 + waves
            .iter()
            .map(|(k, a, phase)| {
                let arg: f64 = (0..shape.len())
                    .map(|d| k[d] * (ix[d] as f64 - shift[d]) / shape[d] as f64)
                    .sum();
                a * (2.0 * PI * arg + phase).cos()
            })
            .sum::<f64>()
    })
}

fn options(u: u32) -> PccOptions {
    PccOptions {
        upsample_factor: u,
        ..Default::default()
    }
}

fn assert_shift(got: &[f64], want: &[f64], tol: f64, what: &str) {
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() <= tol, "{what}: got {got:?}, want {want:?}");
    }
}

#[test]
fn known_subpixel_shifts_in_two_dimensions() {
    for (shape, shift) in [
        ([64, 64], [3.37, -5.81]),
        ([63, 70], [-10.52, 7.26]),
        ([48, 33], [23.4, -16.15]), // near half the image
        ([40, 41], [-19.6, 20.35]),
    ] {
        let reference = image(&shape, &[0.0, 0.0], 7);
        let moving = image(&shape, &shift, 7);
        let want: Vec<f64> = shift.iter().map(|s| -s).collect();
        for target in [Target::Cpu, Target::Parallel] {
            let r = phase_cross_correlation(
                &reference,
                &moving,
                &PccOptions {
                    target,
                    ..options(100)
                },
            )
            .unwrap();
            assert_shift(&r.shift, &want, 0.05, &format!("{shape:?} {target:?}"));
            // Whole pixels: the nearest integer (the peak wraps to (-n/2, n/2]).
            let r = phase_cross_correlation(&reference, &moving, &options(1)).unwrap();
            let rounded: Vec<f64> = want.iter().map(|s| s.round()).collect();
            assert_shift(&r.shift, &rounded, 0.0, &format!("{shape:?} integer"));
        }
        // float32 images register just as well.
        let r = phase_cross_correlation(
            &reference.mapv(|v| v as f32),
            &moving.mapv(|v| v as f32),
            &options(20),
        )
        .unwrap();
        assert_shift(
            &r.shift,
            &want,
            0.05 + 1.0 / 20.0,
            &format!("{shape:?} f32"),
        );
    }
}

#[test]
fn known_subpixel_shifts_in_three_dimensions() {
    // Odd and even sizes, shifts near half the image, at upsample 100 with low noise.
    for (shape, shift, seed) in [
        ([12, 17, 16], [2.3, -4.55, 6.9], 3),
        ([11, 14, 15], [5.32, -6.81, 7.26], 4),
    ] {
        let reference = image(&shape, &[0.0; 3], seed);
        let mut moving = image(&shape, &shift, seed);
        let mut rng = Lcg(seed + 10);
        moving.mapv_inplace(|v| v + 0.02 * (rng.next() - 0.5));
        let want: Vec<f64> = shift.iter().map(|s| -s).collect();
        for target in [Target::Cpu, Target::Parallel] {
            let o = PccOptions {
                target,
                ..options(100)
            };
            let r = phase_cross_correlation(&reference, &moving, &o).unwrap();
            assert_shift(&r.shift, &want, 0.05, &format!("3-d {shape:?} {target:?}"));
        }
    }
    // A 3-d array typed as such works too, and an axis of length 1 carries no shift.
    let flat: Array3<f64> = image(&[1, 20, 24], &[0.0; 3], 5)
        .into_dimensionality()
        .unwrap();
    let moved: Array3<f64> = image(&[1, 20, 24], &[0.4, 3.0, -2.0], 5)
        .into_dimensionality()
        .unwrap();
    let r = phase_cross_correlation(&flat, &moved, &options(10)).unwrap();
    assert_shift(&r.shift, &[0.0, -3.0, 2.0], 0.051, "length-1 axis");
}

#[test]
fn noisy_images_still_register() {
    let shape = [96, 80];
    let reference = image(&shape, &[0.0, 0.0], 11);
    let mut moving = image(&shape, &[-6.3, 2.7], 11);
    let mut rng = Lcg(5);
    moving.mapv_inplace(|v| v + 0.05 * (rng.next() - 0.5));
    let r = phase_cross_correlation(&reference, &moving, &options(100)).unwrap();
    assert_shift(&r.shift, &[6.3, -2.7], 0.05, "noisy");
}

/// The real 2-d path (half spectra) and the general complex path agree on everything.
#[test]
fn the_real_path_agrees_with_the_general_path() {
    let mut cases = Vec::new();
    for shape in [[32, 32], [31, 45], [30, 17]] {
        let a: Array2<f64> = image(&shape, &[0.0, 0.0], 21)
            .into_dimensionality()
            .unwrap();
        let b: Array2<f64> = image(&shape, &[4.2, -3.3], 21)
            .into_dimensionality()
            .unwrap();
        // Make the images different in more than a shift, so that the error is not trivial.
        let other: Array2<f64> = image(&shape, &[0.0, 0.0], 99)
            .into_dimensionality()
            .unwrap();
        cases.push((a, b, other, [-4.2, 3.3]));
    }
    // Large enough for the fused column pass to split over the threads (odd width): noise,
    // and the same moved by a whole (5, -7), quicker to make than band-limited images.
    let mut rng = Lcg(5);
    let a = Array2::from_shape_simple_fn((128, 67), || rng.next());
    let b = Array2::from_shape_fn((128, 67), |(i, j)| a[[(i + 128 - 5) % 128, (j + 7) % 67]]);
    let other = Array2::from_shape_simple_fn((128, 67), || rng.next());
    cases.push((a, b, other, [-5.0, 7.0]));
    for (a, b, other, want) in cases {
        let shape = a.dim();
        let b = b.mapv(|v| 1.3 * v + 2.0) + other.mapv(|v| 0.2 * v);
        for normalization in [Normalization::Phase, Normalization::Off] {
            for u in [1, 7, 20] {
                let o = PccOptions {
                    normalization,
                    ..options(u)
                };
                let what = format!("{shape:?} {normalization:?} U={u}");
                let real = real_path_like_general_path(&a, &b, &o, &what);
                let tol = 0.5 / u as f64 + 0.05;
                assert_shift(&real.shift, &want, tol, &format!("{shape:?} U={u}"));
            }
        }
    }
}

/// The real path searches its correlation image a block of 16 rows at a time: a block of fewer
/// than eight values (an image that small, or a short last block of a narrow one, as 17x6)
/// once read as a peak of +inf at its first value, so the shift came out wrong. scikit-image's
/// values for the 2x2 case; the general path's for the rest.
#[test]
fn tiny_images_and_short_last_blocks_register_like_the_general_path() {
    let reference = ndarray::array![[1.0, 2.0], [3.0, 5.0]];
    let moving = ndarray::array![[5.0, 3.0], [2.0, 1.1]];
    for (normalization, error) in [
        (Normalization::Phase, 0.999672976040021),
        (Normalization::Off, 0.015763805714648516),
    ] {
        let o = PccOptions {
            normalization,
            ..options(1)
        };
        let r = phase_cross_correlation(&reference, &moving, &o).unwrap();
        assert_eq!(r.shift, [1.0, 1.0], "{normalization:?}");
        assert!((r.error - error).abs() < 1e-12, "{normalization:?}: {r:?}");
    }
    let mut rng = Lcg(17);
    for (ny, nx) in [
        (1, 3),
        (1, 7),
        (2, 3),
        (4, 1),
        (7, 1),
        (17, 2),
        (17, 6),
        (33, 4),
        (35, 3),
    ] {
        let a = Array2::from_shape_simple_fn((ny, nx), || rng.next() + 3.0);
        let b = Array2::from_shape_fn((ny, nx), |(i, j)| {
            a[[(i + ny - 1) % ny, (j + 1) % nx]] + 0.3 * rng.next()
        });
        for normalization in [Normalization::Phase, Normalization::Off] {
            for u in [1, 3] {
                let o = PccOptions {
                    normalization,
                    ..options(u)
                };
                real_path_like_general_path(
                    &a,
                    &b,
                    &o,
                    &format!("{ny}x{nx} {normalization:?} U={u}"),
                );
            }
        }
    }
}

/// The real images' registration (the real 2-d path), checked against the same images as
/// complex ones (the general path): the same shift, `error` within 1e-9, `phasediff` within
/// 1e-6 rad.
fn real_path_like_general_path(
    a: &Array2<f64>,
    b: &Array2<f64>,
    o: &PccOptions,
    what: &str,
) -> Pcc {
    let real = phase_cross_correlation(a, b, o).unwrap();
    let general = phase_cross_correlation(
        &a.mapv(|v| Complex::new(v, 0.0)),
        &b.mapv(|v| Complex::new(v, 0.0)),
        o,
    )
    .unwrap();
    let what = format!("{what}: {real:?} {general:?}");
    assert_eq!(real.shift, general.shift, "{what}");
    assert!((real.error - general.error).abs() < 1e-9, "{what}");
    let dphase = (real.phasediff - general.phasediff).rem_euclid(2.0 * PI);
    assert!(dphase.min(2.0 * PI - dphase) < 1e-6, "{what}");
    real
}

/// Spectra in, the same answer as images in.
#[test]
fn fourier_space_inputs() {
    let shape = [24, 30];
    let a = image(&shape, &[0.0, 0.0], 2);
    let b = image(&shape, &[1.5, -2.25], 2);
    let spectrum = |x: &ArrayD<f64>| -> ArrayD<Complex<f64>> {
        // The 2-d DFT by definition (small sizes).
        Array::from_shape_fn(IxDyn(&shape), |k| {
            x.indexed_iter()
                .map(|(p, &v)| {
                    let phase = -2.0
                        * PI
                        * (k[0] as f64 * p[0] as f64 / shape[0] as f64
                            + k[1] as f64 * p[1] as f64 / shape[1] as f64);
                    Complex::from_polar(v, phase)
                })
                .sum()
        })
    };
    let o = PccOptions {
        space: Space::Fourier,
        ..options(4)
    };
    let from_spectra = phase_cross_correlation(&spectrum(&a), &spectrum(&b), &o).unwrap();
    let from_images = phase_cross_correlation(&a, &b, &options(4)).unwrap();
    assert_eq!(from_spectra.shift, from_images.shift);
    assert_shift(&from_spectra.shift, &[-1.5, 2.25], 0.0, "fourier");
    assert!((from_spectra.error - from_images.error).abs() < 1e-9);
}

#[test]
fn identical_images_have_zero_error_and_phase() {
    let a = image(&[20, 22], &[0.0, 0.0], 8);
    for u in [1, 10] {
        for normalization in [Normalization::Phase, Normalization::Off] {
            let r = phase_cross_correlation(
                &a,
                &a,
                &PccOptions {
                    normalization,
                    ..options(u)
                },
            )
            .unwrap();
            assert_eq!(r.shift, vec![0.0, 0.0]);
            assert!(r.phasediff.abs() < 1e-12, "{r:?}");
            if normalization == Normalization::Off {
                assert!(r.error < 1e-6, "{r:?}");
            }
        }
    }
}

#[test]
fn bad_inputs_are_errors() {
    let a = Array2::<f32>::zeros((8, 9));
    let b = Array2::<f32>::zeros((9, 8));
    let e = phase_cross_correlation(&a, &b, &options(1)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "phase_cross_correlation: `reference` has shape (8,9) but `moving` has shape (9,8)"
    );
    let e = phase_cross_correlation(&a, &a, &options(0)).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidArgument {
                name: "upsample_factor",
                ..
            }
        ),
        "{e}"
    );
    // An upsample factor whose refinement cannot be held is an error, not an abort, here,
    // through a Correlator and through align_movie.
    let random = Array2::from_shape_fn((8, 9), |(y, x)| ((y * 7 + x * 3) % 5) as f32);
    let huge = options(u32::MAX);
    let refused = |e: Error| {
        let text = e.to_string();
        assert!(
            matches!(
                e,
                Error::InvalidArgument {
                    name: "upsample_factor",
                    ..
                }
            ) && text.contains("4294967295 needs an upsampled DFT of 6442450943x6442450943"),
            "{text}"
        );
    };
    refused(phase_cross_correlation(&random, &random, &huge).unwrap_err());
    refused(Correlator::new(&random, &huge).err().unwrap());
    let movie = ndarray::stack![ndarray::Axis(0), random, random];
    let align = AlignOptions {
        upsample_factor: u32::MAX,
        ..Default::default()
    };
    refused(align_movie(&mut movie.clone(), &align).unwrap_err());
    // In 3-d the refinement contracts one axis at a time, to region^3 points at the end:
    // that is what is asked for (here more than any allocation may hold, whatever the
    // system's overcommit policy).
    let cube = Array3::from_shape_fn((32, 32, 32), |(z, y, x)| ((z + 3 * y + 7 * x) % 11) as f32);
    let e = phase_cross_correlation(&cube, &cube, &options(1_000_000)).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("needs an upsampled DFT of 1500000x1500000x1500000 points"),
        "{text}"
    );
    let mut nan = Array2::<f32>::ones((8, 9));
    nan[[3, 4]] = f32::NAN;
    let e = phase_cross_correlation(&a, &nan, &options(1)).unwrap_err();
    assert!(matches!(e, Error::NotFinite { .. }), "{e}");
    let e = phase_cross_correlation(&nan, &a, &options(5)).unwrap_err();
    assert!(matches!(e, Error::NotFinite { .. }), "{e}");
    let empty = Array2::<f64>::zeros((0, 4));
    assert!(phase_cross_correlation(&empty, &empty, &options(1)).is_err());
    // scikit-image raises for 0-d arrays too (the FFT over no axes gives its input).
    let point = ndarray::arr0(2.0f32);
    let e = phase_cross_correlation(&point, &point, &options(1)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid `reference`: a 0-d array has no axis to register along"
    );
    let cuda = PccOptions {
        target: Target::Cuda,
        ..options(1)
    };
    // `cuda` takes real 2-d images (tests/cuda/registration.rs runs it).
    let stack = a.clone().insert_axis(ndarray::Axis(0));
    assert!(matches!(
        phase_cross_correlation(&stack, &stack, &cuda).unwrap_err(),
        Error::InvalidArgument { name: "target", .. }
    ));
}

/// The integer peak's wrap rule: an index up to n/2 is a positive shift, past it negative.
#[test]
fn a_shift_of_half_the_image_stays_positive() {
    let shape = [16, 15];
    let a = image(&shape, &[0.0, 0.0], 4);
    let b = image(&shape, &[8.0, 7.0], 4);
    let r = phase_cross_correlation(&a, &b, &options(1)).unwrap();
    // -8 wraps to +8 (index 8 is not past 16/2); -7 wraps to index 8, past 15/2, so -7.
    assert_eq!(r.shift, vec![8.0, -7.0]);
}

/// Images large enough that the fused column pass, the strips and the peak search split over
/// threads (2 x 256 x 101 columns, not a multiple of the 32-column pieces): `parallel` gives
/// `cpu`'s result bit for bit, and the known shift.
#[test]
fn a_large_registration_splits_over_threads_with_cpus_result() {
    use ufunc::registration::Correlator;
    let (ny, nx) = (256, 200);
    let mut rng = Lcg(21);
    let noise = Array2::from_shape_simple_fn((ny, nx), || rng.next());
    let reference = Array2::from_shape_fn((ny, nx), |(y, x)| {
        let (a, b) = (y as f64 / 9.0, x as f64 / 13.0);
        (a * 0.7 + b * 1.3).sin() + (a * 0.3 - b * 0.5).cos() + 0.3 * noise[[y, x]]
    });
    let moving = Array2::from_shape_fn((ny, nx), |(y, x)| {
        reference[[(y + ny - 5) % ny, (x + 7) % nx]]
    });
    for f32_images in [false, true] {
        let run = |target| {
            let o = PccOptions {
                target,
                ..options(20)
            };
            if f32_images {
                let (r, m) = (reference.mapv(|v| v as f32), moving.mapv(|v| v as f32));
                Correlator::new(&r, &o).unwrap().register(&m).unwrap()
            } else {
                Correlator::new(&reference, &o)
                    .unwrap()
                    .register(&moving)
                    .unwrap()
            }
        };
        let (cpu, parallel) = (run(Target::Cpu), run(Target::Parallel));
        assert_eq!(cpu, parallel, "f32 {f32_images}");
        assert_shift(&cpu.shift, &[-5.0, 7.0], 1e-9, "a whole-pixel shift");
    }
}

/// A correlator made once gives, frame after frame, what the one-off function gives.
#[test]
fn a_correlator_registers_like_the_function() {
    use ufunc::registration::Correlator;
    let shape = [36, 44];
    let reference: Array2<f64> = image(&shape, &[0.0, 0.0], 6).into_dimensionality().unwrap();
    let o = options(20);
    let c64 = Correlator::new(&reference, &o).unwrap();
    let c32 = Correlator::new(&reference.mapv(|v| v as f32), &o).unwrap();
    for k in 0..3 {
        let shift = [1.3 * k as f64, -2.1 * k as f64];
        let moving: Array2<f64> = image(&shape, &shift, 6).into_dimensionality().unwrap();
        assert_eq!(
            c64.register(&moving).unwrap(),
            phase_cross_correlation(&reference, &moving, &o).unwrap()
        );
        let r32 = c32.register(&moving.mapv(|v| v as f32)).unwrap();
        assert_shift(&r32.shift, &[-shift[0], -shift[1]], 0.1, "f32 correlator");
    }
    let e = c64.register(&Array2::<f64>::zeros((36, 45))).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
    assert!(Correlator::new(&Array2::<f64>::zeros((0, 3)), &o).is_err());
}

/// A NaN in the reference is an error of `Correlator::new`, wherever it lies and however the
/// reference is laid out, for both element types and odd, even and one-row sizes; an infinity
/// is not (it makes each registration's result an error).
#[test]
fn a_correlator_refuses_a_reference_with_nan() {
    macro_rules! check {
        ($t:ty, $shape:expr) => {{
            use ufunc::registration::Correlator;
            let [ny, nx]: [usize; 2] = $shape;
            let clean: Array2<$t> = image(&[ny, nx], &[0.0, 0.0], 6)
                .mapv(|v| v as $t)
                .into_dimensionality()
                .unwrap();
            for target in [Target::Cpu, Target::Parallel] {
                let o = PccOptions {
                    target,
                    ..options(5)
                };
                for at in [[0, 0], [ny / 2, nx / 3], [ny - 1, nx - 1]] {
                    let mut r = clean.clone();
                    r[at] = <$t>::NAN;
                    let layouts = [r.view(), r.t(), r.slice(ndarray::s![..;-1, ..])];
                    for (k, view) in layouts.into_iter().enumerate() {
                        let e = Correlator::new(&view, &o).err().expect("a NaN reference");
                        let what = format!("{} {:?} {target:?} at {at:?}, layout {k}", stringify!($t), [ny, nx]);
                        assert!(
                            matches!(
                                e,
                                Error::NotFinite {
                                    name: "reference",
                                    ..
                                }
                            ),
                            "{what}: {e}"
                        );
                    }
                }
                let mut r = clean.clone();
                r[[ny / 3, nx / 4]] = <$t>::INFINITY;
                let correlator = Correlator::new(&r, &o).unwrap();
                let e = correlator.register(&clean).unwrap_err();
                assert!(matches!(e, Error::NotFinite { .. }), "{target:?}: {e}");
                assert!(Correlator::new(&clean, &o).is_ok());
            }
        }};
    }
    for shape in [[36, 44], [35, 27], [1, 17]] {
        check!(f32, shape);
        check!(f64, shape);
    }
}

/// Crops `reference` and `moving` of one random texture (not periodic), `moving`'s corner
/// moved by `shift` (whole pixels), each of `size`.
fn crops(size: &[usize], shift: &[i64], seed: u64) -> (ArrayD<f64>, ArrayD<f64>) {
    let big: Vec<usize> = size
        .iter()
        .zip(shift)
        .map(|(&n, s)| n + s.unsigned_abs() as usize)
        .collect();
    let mut rng = Lcg(seed);
    let texture = ArrayD::from_shape_simple_fn(IxDyn(&big), || rng.next());
    let corner = |second: bool| -> Vec<usize> {
        shift
            .iter()
            .map(|&s| match (s > 0, second) {
                (true, true) | (false, false) => s.unsigned_abs() as usize,
                _ => 0,
            })
            .collect()
    };
    let crop = |at: Vec<usize>| {
        texture
            .slice_each_axis(|ax| {
                let d = ax.axis.index();
                ndarray::Slice::from(at[d]..at[d] + size[d])
            })
            .to_owned()
    };
    (crop(corner(false)), crop(corner(true)))
}

/// `disambiguate` in 3-d (eight tiles), with a sub-pixel refinement (the moving image shifted
/// by a Fourier shift for the tiles), in Fourier space, on both targets and through a
/// correlator: the real shift, past half the image on some axes, where plain phase
/// correlation gives its periodic alias.
#[test]
fn disambiguate_finds_shifts_past_half_the_image() {
    use ufunc::registration::Correlator;
    let (size, shift) = ([20, 24, 18], [13i64, -4, -11]);
    let (reference, moving) = crops(&size, &shift, 21);
    let truth: Vec<f64> = shift.iter().map(|&s| s as f64).collect();
    let alias = [-7.0, -4.0, 7.0];
    for (upsample, target) in [(1, Target::Cpu), (10, Target::Parallel)] {
        let o = PccOptions {
            disambiguate: true,
            target,
            ..options(upsample)
        };
        let got = phase_cross_correlation(&reference, &moving, &o).unwrap();
        assert_shift(&got.shift, &truth, 0.11, "disambiguated");
        let plain = PccOptions {
            disambiguate: false,
            ..o
        };
        let periodic = phase_cross_correlation(&reference, &moving, &plain).unwrap();
        assert_shift(&periodic.shift, &alias, 0.11, "periodic");
        assert_eq!(
            (got.error, got.phasediff),
            (periodic.error, periodic.phasediff)
        );
    }
    let spectrum = |a: &ArrayD<f64>| ufunc::fft::fftn(&a.mapv(|v| Complex::new(v, 0.0))).unwrap();
    let o = PccOptions {
        disambiguate: true,
        space: Space::Fourier,
        ..options(1)
    };
    let got = phase_cross_correlation(&spectrum(&reference), &spectrum(&moving), &o).unwrap();
    assert_eq!(got.shift, truth);
    // Complex images (scikit-image compares their tiles by the complex correlation's real
    // part, as NumPy orders complex numbers): crops 19 rows apart in 40 (alias -21).
    let (re, im) = (
        crops(&[40, 40], &[19, 0], 23),
        crops(&[40, 40], &[19, 0], 24),
    );
    let complex = |a: &ArrayD<f64>, b: &ArrayD<f64>| {
        ndarray::Zip::from(a)
            .and(b)
            .map_collect(|&x, &y| Complex::new(x, y))
    };
    let (a, b) = (complex(&re.0, &im.0), complex(&re.1, &im.1));
    let o = PccOptions {
        disambiguate: true,
        ..options(1)
    };
    assert_eq!(
        phase_cross_correlation(&a, &b, &o).unwrap().shift,
        vec![19.0, 0.0]
    );
    // 2-d, through a correlator and the one-off function alike.
    let (reference, moving) = crops(&[30, 26], &[-19, 8], 22);
    let (reference, moving): (Array2<f64>, Array2<f64>) = (
        reference.into_dimensionality().unwrap(),
        moving.into_dimensionality().unwrap(),
    );
    let o = PccOptions {
        disambiguate: true,
        ..options(4)
    };
    let correlator = Correlator::new(&reference, &o).unwrap();
    let got = correlator.register(&moving).unwrap();
    assert_eq!(
        got,
        phase_cross_correlation(&reference, &moving, &o).unwrap()
    );
    assert_shift(&got.shift, &[-19.0, 8.0], 0.26, "correlator");
    // A correlator takes images whatever `space` says: the tiles compare the images too.
    let fourier = PccOptions {
        space: Space::Fourier,
        ..o
    };
    let got = Correlator::new(&reference, &fourier)
        .unwrap()
        .register(&moving)
        .unwrap();
    assert_shift(
        &got.shift,
        &[-19.0, 8.0],
        0.26,
        "correlator, Space::Fourier",
    );
}
