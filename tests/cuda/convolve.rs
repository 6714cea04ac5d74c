//! FFT convolution on device arrays (`ufunc::signal::device`) against the host's
//! `ufunc::signal::fftconvolve` (itself checked against SciPy): every mode, 1-d to 3-d, axes
//! with broadcasting, swapped `valid` inputs, complex and real (and one of each), f32 and f64,
//! empty and 0-d inputs, the error cases, and no host transfer between upload and download.

use super::fft::{data, without_transfers};
use super::on_gpu;
use ndarray::{array, ArrayD, IxDyn};
use num_complex::Complex;
use ufunc::cuda::{to_device, Stream};
use ufunc::prelude::*;
use ufunc::signal::{self, device, ConvOptions, Method, Mode};

fn close_c(what: &str, got: ArrayD<Complex<f64>>, want: ArrayD<Complex<f64>>, tol: f64) {
    assert_eq!(got.shape(), want.shape(), "{what}: shapes");
    let scale = want.iter().map(|z| z.norm()).fold(1e-30, f64::max);
    let err = got
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).norm())
        .fold(0.0, f64::max);
    assert!(err <= tol * scale, "{what}: error {err} of {scale}");
}

const MODES: [Mode; 3] = [Mode::Full, Mode::Same, Mode::Valid];

/// The shapes of in1 and in2, and the axes.
type Case = (Vec<usize>, Vec<usize>, Option<Vec<usize>>);

/// Shape cases, every one valid in every mode.
fn cases() -> Vec<Case> {
    vec![
        (vec![20], vec![5], None),
        (vec![4], vec![9], None),
        (vec![12, 9], vec![3, 4], None),
        (vec![3, 4], vec![12, 9], None),
        (vec![6, 7, 8], vec![2, 3, 3], None),
        (vec![5, 30], vec![1, 7], Some(vec![1])),
        (vec![5, 30], vec![5, 7], Some(vec![1])),
        (vec![1, 16, 6], vec![4, 5, 6], Some(vec![1])),
        (vec![6, 10], vec![1, 1], None),
    ]
}

#[test]
fn device_convolution_matches_the_host() {
    on_gpu("device_convolution_matches_the_host", || {
        for (s1, s2, axes) in cases() {
            let (a, b) = (data(&s1, 1), data(&s2, 2));
            let (za, zb) = (
                a.mapv(|v| Complex::new(v, 0.5 - v)),
                b.mapv(|v| Complex::new(-v, v * 0.25)),
            );
            for mode in MODES {
                let what = format!("{s1:?} {s2:?} {axes:?} {mode:?}");
                let host = |x: &ArrayD<f64>, y: &ArrayD<f64>| match &axes {
                    Some(ax) => signal::fftconvolve_axes(x, y, mode, ax).unwrap(),
                    None => signal::fftconvolve(x, y, mode).unwrap(),
                };
                // f64
                let (da, db) = (to_device(&a).unwrap(), to_device(&b).unwrap());
                let got = match &axes {
                    Some(ax) => device::fftconvolve_axes(&da, &db, mode, ax),
                    None => device::fftconvolve(&da, &db, mode),
                }
                .unwrap()
                .copy_to_host()
                .unwrap();
                let to_c = |x: ArrayD<f64>| x.mapv(|v| Complex::new(v, 0.0));
                close_c(&format!("f64 {what}"), to_c(got), to_c(host(&a, &b)), 1e-12);
                // f32
                let (fa, fb) = (a.mapv(|v| v as f32), b.mapv(|v| v as f32));
                let (da, db) = (to_device(&fa).unwrap(), to_device(&fb).unwrap());
                let got = match &axes {
                    Some(ax) => device::fftconvolve_axes(&da, &db, mode, ax),
                    None => device::fftconvolve(&da, &db, mode),
                }
                .unwrap()
                .copy_to_host()
                .unwrap();
                let want = host(&a, &b);
                close_c(
                    &format!("f32 {what}"),
                    got.mapv(|v| Complex::new(v as f64, 0.0)),
                    to_c(want),
                    1e-5,
                );
                // Complex<f64>, on a stream.
                let (da, db) = (to_device(&za).unwrap(), to_device(&zb).unwrap());
                let stream = Stream::new().unwrap();
                let got = device::fftconvolve_on(&stream, &da, &db, mode, axes.as_deref()).unwrap();
                stream.synchronize().unwrap();
                let want = match &axes {
                    Some(ax) => signal::fftconvolve_axes(&za, &zb, mode, ax).unwrap(),
                    None => signal::fftconvolve(&za, &zb, mode).unwrap(),
                };
                close_c(
                    &format!("c64 {what}"),
                    got.copy_to_host().unwrap(),
                    want,
                    1e-12,
                );
            }
        }
    });
}

#[test]
fn views_scalars_and_empty_inputs() {
    on_gpu("views_scalars_and_empty_inputs", || {
        let a = data(&[10, 12], 3)
            .into_dimensionality::<ndarray::Ix2>()
            .unwrap();
        let k = data(&[3, 5], 4)
            .into_dimensionality::<ndarray::Ix2>()
            .unwrap();
        let (da, dk) = (to_device(&a).unwrap(), to_device(&k).unwrap());
        let view = da.view().slice(ndarray::s![..;-1, 1..;2]).unwrap();
        let got = device::fftconvolve(view, dk.t(), Mode::Same).unwrap();
        let want =
            signal::fftconvolve(&a.slice(ndarray::s![..;-1, 1..;2]), &k.t(), Mode::Same).unwrap();
        let err = (&got.copy_to_host().unwrap() - &want)
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(err < 1e-12, "views: {err}");
        let s = device::fftconvolve(
            &to_device(&ndarray::arr0(3.0f32)).unwrap(),
            &to_device(&ndarray::arr0(-2.0f32)).unwrap(),
            Mode::Full,
        )
        .unwrap();
        assert_eq!(s.copy_to_host().unwrap(), ndarray::arr0(-6.0f32));
        let empty = to_device(&ndarray::Array2::<f64>::zeros((0, 3))).unwrap();
        let e = device::fftconvolve(&empty, &dk, Mode::Full).unwrap();
        assert_eq!(e.shape(), &[0, 0]);
    });
}

#[test]
fn shape_errors_name_the_shapes() {
    on_gpu("shape_errors_name_the_shapes", || {
        let a = to_device(&ndarray::Array2::<f32>::zeros((4, 6))).unwrap();
        let b = to_device(&ndarray::Array2::<f32>::zeros((6, 4))).unwrap();
        let e = device::fftconvolve(&a, &b, Mode::Valid).unwrap_err();
        assert!(matches!(e, Error::ConvolveShapes { .. }), "{e}");
        assert!(e.to_string().contains("(4,6) and (6,4)"), "{e}");
        let e = device::fftconvolve_axes(&a, &b, Mode::Full, &[2]).unwrap_err();
        assert!(matches!(e, Error::ConvolveShapes { .. }), "{e}");
        assert!(
            e.to_string()
                .contains("(4,6) and (6,4) (convolved axes [2])"),
            "{e}"
        );
        let c = to_device(&ndarray::Array2::<f32>::zeros((3, 6))).unwrap();
        let e = device::fftconvolve_axes(&a, &c, Mode::Full, &[1]).unwrap_err();
        assert!(matches!(e, Error::ConvolveShapes { .. }), "{e}");
        let d1 = to_device(&ndarray::Array::<f32, _>::zeros(IxDyn(&[4]))).unwrap();
        let d2 = to_device(&ndarray::Array::<f32, _>::zeros(IxDyn(&[4, 4]))).unwrap();
        let e = device::fftconvolve(&d1, &d2, Mode::Full).unwrap_err();
        assert!(matches!(e, Error::ConvolveShapes { .. }), "{e}");
    });
}

#[test]
fn convolution_stays_on_the_device() {
    on_gpu("convolution_stays_on_the_device", || {
        let image = data(&[64, 48], 5).mapv(|v| v as f32);
        let kernel = array![[1.0f32, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]] / 16.0;
        let (di, dk) = (
            to_device(&image).unwrap(),
            to_device(&kernel.into_dyn()).unwrap(),
        );
        let twice = without_transfers("device convolution", || {
            let blurred = device::fftconvolve(&di, &dk, Mode::Same).unwrap();
            device::fftconvolve(&blurred, &dk, Mode::Same).unwrap()
        });
        let want = signal::fftconvolve(
            &signal::fftconvolve(&image, &dk.copy_to_host().unwrap(), Mode::Same).unwrap(),
            &dk.copy_to_host().unwrap(),
            Mode::Same,
        )
        .unwrap();
        let err = (&twice.copy_to_host().unwrap() - &want)
            .iter()
            .fold(0.0f32, |m, v| m.max(v.abs()));
        assert!(err < 1e-5, "{err}");
    });
}

#[test]
fn every_method_matches_the_host() {
    on_gpu("every_method_matches_the_host", || {
        // The shapes above, and some where overlap-add cuts one input into blocks.
        let mut all = cases();
        all.extend([
            (vec![300], vec![9], None),
            (vec![9], vec![300], None),
            (vec![40, 150], vec![3, 6], None),
            (vec![5, 130], vec![1, 9], Some(vec![1])),
        ]);
        for (s1, s2, axes) in all {
            let (a, b) = (data(&s1, 6), data(&s2, 7));
            let (za, zb) = (
                a.mapv(|v| Complex::new(v, 1.0 - v)),
                b.mapv(|v| Complex::new(v * 0.5, -v)),
            );
            let (da, db) = (to_device(&a).unwrap(), to_device(&b).unwrap());
            let (dza, dzb) = (to_device(&za).unwrap(), to_device(&zb).unwrap());
            for mode in MODES {
                for method in [
                    Method::Direct,
                    Method::Fft,
                    Method::OverlapAdd,
                    Method::Auto,
                ] {
                    let mut options = ConvOptions::new(mode).method(method);
                    if let Some(ax) = &axes {
                        options = options.axes(ax);
                    }
                    let what = format!("{s1:?} {s2:?} {axes:?} {mode:?} {method:?}");
                    let got = device::convolve_with(&da, &db, &options).unwrap();
                    let want = signal::convolve_with(&a, &b, &options).unwrap();
                    let to_c = |x: ArrayD<f64>| x.mapv(|v| Complex::new(v, 0.0));
                    let got = to_c(got.copy_to_host().unwrap());
                    close_c(&format!("f64 {what}"), got, to_c(want), 1e-12);
                    let stream = Stream::new().unwrap();
                    let got = device::convolve_on(&stream, &dza, &dzb, &options).unwrap();
                    stream.synchronize().unwrap();
                    let want = signal::convolve_with(&za, &zb, &options).unwrap();
                    close_c(
                        &format!("c64 {what}"),
                        got.copy_to_host().unwrap(),
                        want,
                        1e-12,
                    );
                }
            }
        }
        // The short forms, f32, and a reversed strided view read by the direct kernel.
        let one_d = |x: ArrayD<f64>| x.mapv(|v| v as f32).into_dimensionality::<ndarray::Ix1>();
        let (a, k) = (
            one_d(data(&[200], 8)).unwrap(),
            one_d(data(&[7], 9)).unwrap(),
        );
        let (da, dk) = (to_device(&a).unwrap(), to_device(&k).unwrap());
        for mode in MODES {
            let got = device::oaconvolve(&da, &dk, mode)
                .unwrap()
                .copy_to_host()
                .unwrap();
            let want = signal::oaconvolve(&a, &k, mode).unwrap();
            let err = (&got - &want).iter().fold(0.0f32, |m, v| m.max(v.abs()));
            assert!(err < 1e-5, "oaconvolve f32 {mode:?}: {err}");
            let view = da.view().slice(ndarray::s![..;-3]).unwrap();
            let got = device::convolve(view, &dk, mode, Method::Direct).unwrap();
            let want =
                signal::convolve(&a.slice(ndarray::s![..;-3]), &k, mode, Method::Direct).unwrap();
            let err = (&got.copy_to_host().unwrap() - &want)
                .iter()
                .fold(0.0f32, |m, v| m.max(v.abs()));
            assert!(err < 1e-5, "direct f32 view {mode:?}: {err}");
        }
    });
}

#[test]
fn real_and_complex_inputs_give_the_hosts_complex_result() {
    on_gpu(
        "real_and_complex_inputs_give_the_hosts_complex_result",
        || {
            let cases = [
                (vec![40], vec![7], None),
                (vec![7], vec![40], None),
                (vec![300], vec![9], None),
                (vec![12, 9], vec![3, 4], None),
                (vec![5, 30], vec![1, 7], Some(vec![1])),
            ];
            for (s1, s2, axes) in cases {
                let (a, b) = (data(&s1, 10), data(&s2, 11));
                let zb = b.mapv(|v| Complex::new(v, 0.5 - v));
                let za = a.mapv(|v| Complex::new(-v, v * 0.25));
                let (da, dzb) = (to_device(&a).unwrap(), to_device(&zb).unwrap());
                let (dza, db) = (to_device(&za).unwrap(), to_device(&b).unwrap());
                for mode in MODES {
                    for method in [Method::Direct, Method::Fft, Method::OverlapAdd] {
                        let mut options = ConvOptions::new(mode).method(method);
                        if let Some(ax) = &axes {
                            options = options.axes(ax);
                        }
                        let what = format!("{s1:?} {s2:?} {axes:?} {mode:?} {method:?}");
                        // real * complex, f64, default queue.
                        let got = device::convolve_with(&da, &dzb, &options).unwrap();
                        let want = signal::convolve_with(&a, &zb, &options).unwrap();
                        close_c(
                            &format!("f64 x c64 {what}"),
                            got.copy_to_host().unwrap(),
                            want,
                            1e-12,
                        );
                        // complex * real, on a stream.
                        let stream = Stream::new().unwrap();
                        let got = device::convolve_on(&stream, &dza, &db, &options).unwrap();
                        stream.synchronize().unwrap();
                        let want = signal::convolve_with(&za, &b, &options).unwrap();
                        close_c(
                            &format!("c64 x f64 {what}"),
                            got.copy_to_host().unwrap(),
                            want,
                            1e-12,
                        );
                    }
                }
            }
            // f32 with Complex<f32>, by the short form: the result is Complex<f32>.
            let x = array![1.0f32, -2.0, 0.5, 3.0, 4.0];
            let k = array![Complex::new(0.5f32, 1.0), Complex::new(-1.0, 0.25)];
            let (dx, dk) = (to_device(&x).unwrap(), to_device(&k).unwrap());
            let got: ndarray::Array1<Complex<f32>> = device::fftconvolve(&dx, &dk, Mode::Full)
                .unwrap()
                .copy_to_host()
                .unwrap();
            let want = signal::fftconvolve(&x, &k, Mode::Full).unwrap();
            let err = got
                .iter()
                .zip(&want)
                .map(|(a, b)| (a - b).norm())
                .fold(0.0f32, f32::max);
            assert!(err < 1e-5, "f32 x c32: {err}");
        },
    );
}

#[test]
fn the_device_kernels_take_at_most_32_dimensions() {
    on_gpu("the_device_kernels_take_at_most_32_dimensions", || {
        let mut shape = vec![1usize; 33];
        shape[0] = 3;
        let a = to_device(&ndarray::ArrayD::<f32>::ones(IxDyn(&shape))).unwrap();
        shape[0] = 2;
        let k = to_device(&ndarray::ArrayD::<f32>::ones(IxDyn(&shape))).unwrap();
        let e = device::convolve(&a, &k, Mode::Full, Method::Direct).unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument { name: "in1", .. }),
            "{e}"
        );
        assert!(e.to_string().contains("33"), "{e}");
        // The FFT path has no such limit.
        assert_eq!(
            device::fftconvolve(&a, &k, Mode::Full).unwrap().shape()[0],
            4
        );
    });
}
