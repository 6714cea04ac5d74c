//! Device FFTs (`ufunc::fft::device`) against the host transforms of `ufunc::fft`: every
//! function, axes choice, length rule and norm, f32 and f64, strided views, streams, and the
//! transfer counters (nothing moves through the host between upload and download).

use super::on_gpu;
use ndarray::{s, Array, ArrayD, Dimension, IxDyn};
use num_complex::Complex;
use ufunc::cuda::{cuda_counters, to_device, DeviceArray, Stream};
use ufunc::fft::{self, device, FftElement, FftOptions, FftReal, Norm};
use ufunc::prelude::*;

/// Values of no pattern, the same on every run.
pub(crate) fn data(shape: &[usize], seed: u64) -> ArrayD<f64> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    ArrayD::from_shape_simple_fn(IxDyn(shape), || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    })
}

fn complex_data(shape: &[usize], seed: u64) -> ArrayD<Complex<f64>> {
    let (re, im) = (data(shape, seed), data(shape, seed + 1000));
    ndarray::Zip::from(&re)
        .and(&im)
        .map_collect(|&r, &i| Complex::new(r, i))
}

/// `device` equals `host` in shape and within `tol` of the largest magnitude.
fn assert_close<T: FftElement, D: Dimension>(
    what: &str,
    device: Array<T, D>,
    host: Array<T, D>,
    tol: f64,
) {
    assert_eq!(device.shape(), host.shape(), "{what}: shapes");
    let c = |z: T| {
        let z = z.to_complex();
        Complex::new(z.re.as_f64(), z.im.as_f64())
    };
    let scale = host.iter().map(|&z| c(z).norm()).fold(1e-30, f64::max);
    let err = device
        .iter()
        .zip(host.iter())
        .map(|(&a, &b)| (c(a) - c(b)).norm())
        .fold(0.0, f64::max);
    assert!(err <= tol * scale, "{what}: error {err} of {scale}");
}

/// Every option set the checks run through, for an input of `ndim` dimensions.
fn option_sets(ndim: usize) -> Vec<(&'static str, FftOptions)> {
    let o = FftOptions::new;
    let mut v = vec![
        ("defaults", o()),
        ("ortho", o().norm(Norm::Ortho)),
        ("forward", o().norm(Norm::Forward)),
    ];
    if ndim >= 2 {
        v.push(("axis 0, padded", o().axis(0).n(9)));
        v.push(("axis 0, cropped, ortho", o().axis(0).n(3).norm(Norm::Ortho)));
    } else {
        v.push(("padded odd", o().n(11)));
        v.push(("cropped even", o().n(4)));
    }
    v
}

fn multi_sets(ndim: usize) -> Vec<(&'static str, FftOptions)> {
    let o = FftOptions::new;
    let mut v = vec![("all", o()), ("all, forward", o().norm(Norm::Forward))];
    if ndim == 3 {
        v.push(("axes 0, 2", o().axes(&[0, 2])));
        v.push(("axes 2, 0, s", o().axes(&[2, 0]).s(&[7, 3])));
        v.push(("axes 1, 2", o().axes(&[1, 2]).norm(Norm::Ortho)));
        v.push(("axes 2, 1", o().axes(&[2, 1])));
        v.push(("axes 0, 1", o().axes(&[0, 1]).s(&[4, 8])));
        v.push(("axis 1", o().axes(&[1])));
        v.push(("axes 0, 0, 2, s", o().axes(&[0, 0, 2]).s(&[6, 2, 8])));
    }
    if ndim == 2 {
        v.push(("axes 1, 0", o().axes(&[1, 0])));
        v.push(("s", o().s(&[5, 9])));
        // NumPy transforms a repeated axis once per appearance.
        v.push(("axes 1, 1", o().axes(&[1, 1])));
        v.push(("axes 1, 0, 1, s", o().axes(&[1, 0, 1]).s(&[4, 5, 6])));
    }
    v
}

macro_rules! check_type {
    ($t:ty, $tol:expr, $shape:expr) => {{
        let shape: &[usize] = $shape;
        let tol: f64 = $tol;
        let x = data(shape, 1).mapv(|v| v as $t);
        let z = complex_data(shape, 2).mapv(|v| Complex::new(v.re as $t, v.im as $t));
        let dx = to_device(&x).unwrap();
        let dz = to_device(&z).unwrap();
        let ty = stringify!($t);
        let last = shape.len() - 1;
        let one_axis = |o: &FftOptions, which: usize| o.clone().axis(which);
        for (name, o) in option_sets(shape.len()) {
            let what = |f: &str| format!("{f} {ty} {shape:?} {name}");
            let o = if name.starts_with("axis") {
                o
            } else {
                one_axis(&o, last)
            };
            assert_close(
                &what("fft real"),
                device::fft_with(&dx, &o).unwrap().copy_to_host().unwrap(),
                fft::fft_with(&x, &o).unwrap(),
                tol,
            );
            assert_close(
                &what("fft"),
                device::fft_with(&dz, &o).unwrap().copy_to_host().unwrap(),
                fft::fft_with(&z, &o).unwrap(),
                tol,
            );
            assert_close(
                &what("ifft"),
                device::ifft_with(&dz, &o).unwrap().copy_to_host().unwrap(),
                fft::ifft_with(&z, &o).unwrap(),
                tol,
            );
            assert_close(
                &what("rfft"),
                device::rfft_with(&dx, &o).unwrap().copy_to_host().unwrap(),
                fft::rfft_with(&x, &o).unwrap(),
                tol,
            );
            assert_close(
                &what("irfft"),
                device::irfft_with(&dz, &o).unwrap().copy_to_host().unwrap(),
                fft::irfft_with(&z, &o).unwrap(),
                tol,
            );
        }
        for (name, o) in multi_sets(shape.len()) {
            let what = |f: &str| format!("{f} {ty} {shape:?} {name}");
            assert_close(
                &what("fftn"),
                device::fftn_with(&dz, &o).unwrap().copy_to_host().unwrap(),
                fft::fftn_with(&z, &o).unwrap(),
                tol,
            );
            assert_close(
                &what("ifftn"),
                device::ifftn_with(&dz, &o).unwrap().copy_to_host().unwrap(),
                fft::ifftn_with(&z, &o).unwrap(),
                tol,
            );
            assert_close(
                &what("rfftn"),
                device::rfftn_with(&dx, &o).unwrap().copy_to_host().unwrap(),
                fft::rfftn_with(&x, &o).unwrap(),
                tol,
            );
            assert_close(
                &what("irfftn"),
                device::irfftn_with(&dz, &o)
                    .unwrap()
                    .copy_to_host()
                    .unwrap(),
                fft::irfftn_with(&z, &o).unwrap(),
                tol,
            );
        }
        if shape.len() >= 2 {
            let what = format!("2-d {ty} {shape:?}");
            assert_close(
                &what,
                device::fft2(&dz).unwrap().copy_to_host().unwrap(),
                fft::fft2(&z).unwrap(),
                tol,
            );
            assert_close(
                &what,
                device::ifft2(&dz).unwrap().copy_to_host().unwrap(),
                fft::ifft2(&z).unwrap(),
                tol,
            );
            assert_close(
                &what,
                device::rfft2(&dx).unwrap().copy_to_host().unwrap(),
                fft::rfft2(&x).unwrap(),
                tol,
            );
            assert_close(
                &what,
                device::irfft2(&dz).unwrap().copy_to_host().unwrap(),
                fft::irfft2(&z).unwrap(),
                tol,
            );
        }
    }};
}

#[test]
fn device_transforms_match_the_host() {
    on_gpu("device_transforms_match_the_host", || {
        // (5, 7, 3) along axis 1 runs a real plan per index of the last axis, each starting
        // one real element after the last: cuFFT takes real data only at whole complex
        // elements (as the simulator now checks), so those runs read a spread-out copy;
        // (3, 5, 7) along axis 1 runs one per index of the first axis, slabs of 35 points.
        for shape in [
            &[8][..],
            &[7],
            &[6, 10],
            &[5, 7],
            &[4, 5, 6],
            &[5, 7, 3],
            &[3, 5, 7],
        ] {
            check_type!(f32, 1e-5, shape);
            check_type!(f64, 1e-12, shape);
        }
    });
}

/// The forward transforms read a contiguous input where it lies (a real one straight into
/// the real-to-complex plan), so they must leave it as it was, at sizes where cuFFT picks
/// different algorithms (powers of two, a prime, batches).
#[test]
fn transforms_leave_their_input_as_it_was() {
    on_gpu("transforms_leave_their_input_as_it_was", || {
        for shape in [
            &[4096][..],
            &[512, 512],
            &[1000, 997],
            &[64, 2048],
            &[6, 10, 8],
        ] {
            let x = data(shape, 7).mapv(|v| v as f32);
            let z = complex_data(shape, 8).mapv(|c| Complex::new(c.re as f32, c.im as f32));
            let (dx, dz) = (to_device(&x).unwrap(), to_device(&z).unwrap());
            let o = FftOptions::new();
            let spectrum = device::rfftn_with(&dx, &o).unwrap();
            assert_close(
                &format!("rfftn {shape:?}"),
                spectrum.copy_to_host().unwrap(),
                fft::rfftn_with(&x, &o).unwrap(),
                1e-5,
            );
            device::fftn_with(&dz, &o).unwrap();
            assert_eq!(
                dx.copy_to_host().unwrap(),
                x,
                "rfftn wrote its input {shape:?}"
            );
            assert_eq!(
                dz.copy_to_host().unwrap(),
                z,
                "fftn wrote its input {shape:?}"
            );
            let before = spectrum.copy_to_host().unwrap();
            device::irfftn_with(&spectrum, &o).unwrap();
            let after = spectrum.copy_to_host().unwrap();
            assert_eq!(after, before, "irfftn wrote its input {shape:?}");
        }
    });
}

#[test]
fn strided_views_are_read_in_place() {
    on_gpu("strided_views_are_read_in_place", || {
        let z = complex_data(&[9, 12], 3)
            .into_dimensionality::<ndarray::Ix2>()
            .unwrap();
        let x = data(&[9, 12], 4)
            .into_dimensionality::<ndarray::Ix2>()
            .unwrap();
        let (dz, dx) = (to_device(&z).unwrap(), to_device(&x).unwrap());
        let o = FftOptions::new();
        let zv = z.slice(s![1..;2, ..;-3]);
        let dzv = dz.view().slice(s![1..;2, ..;-3]).unwrap();
        assert_close(
            "fft2 of a stepped, reversed view",
            device::fft2(dzv.clone()).unwrap().copy_to_host().unwrap(),
            fft::fft2(&zv).unwrap(),
            1e-12,
        );
        assert_close(
            "fft of the transpose",
            device::fft(dz.t()).unwrap().copy_to_host().unwrap(),
            fft::fft(&z.t()).unwrap(),
            1e-12,
        );
        let xv = x.slice(s![..;-1, 2..9]);
        let dxv = dx.view().slice(s![..;-1, 2..9]).unwrap();
        assert_close(
            "rfft2 of a view",
            device::rfft2_with(&dxv, &o)
                .unwrap()
                .copy_to_host()
                .unwrap(),
            fft::rfft2_with(&xv, &o).unwrap(),
            1e-12,
        );
        let back =
            device::irfft2_with(&device::rfft2(&dxv).unwrap(), &o.clone().s(&[9, 7])).unwrap();
        assert_close(
            "irfft2 round trip",
            back.copy_to_host().unwrap(),
            xv.to_owned(),
            1e-12,
        );
        // A repeated axis (a recipe in two pieces) from a view, on a stream. On a GPU the
        // first piece's buffer is freed while the second may still be queued; the simulator
        // runs each launch at once.
        let twice = o.clone().axes(&[1, 0, 1]).s(&[4, 5, 6]);
        let stream = Stream::new().unwrap();
        let on = device::fftn_on(&stream, &dzv, &twice).unwrap();
        let real_on = device::irfftn_on(&stream, &dzv, &twice).unwrap();
        stream.synchronize().unwrap();
        assert_close(
            "fftn of a view with a repeated axis, on a stream",
            on.copy_to_host().unwrap(),
            fft::fftn_with(&zv, &twice).unwrap(),
            1e-12,
        );
        assert_close(
            "irfftn of a view with a repeated axis, on a stream",
            real_on.copy_to_host().unwrap(),
            fft::irfftn_with(&zv, &twice).unwrap(),
            1e-12,
        );
    });
}

/// Over no axes (`axes(&[])`, a 0-d array) the complex transforms give the input as complex
/// numbers in a new array, from a view too, as the host's (NumPy returns its input); the real
/// ones are errors.
#[test]
fn no_axes_give_the_input_as_complex() {
    on_gpu("no_axes_give_the_input_as_complex", || {
        let x = data(&[3, 4], 5).mapv(|v| v as f32);
        let z = complex_data(&[3, 4], 6)
            .into_dimensionality::<ndarray::Ix2>()
            .unwrap();
        let (dx, dz) = (to_device(&x).unwrap(), to_device(&z).unwrap());
        let none = FftOptions::new().axes(&[]);
        let spectrum = device::fftn_with(&dx, &none).unwrap();
        assert_eq!(
            spectrum.copy_to_host().unwrap(),
            fft::fftn_with(&x, &none).unwrap()
        );
        let ortho = none.clone().norm(Norm::Ortho);
        let copy = device::ifft2_with(&dz, &ortho).unwrap();
        assert_eq!(copy.copy_to_host().unwrap(), z);
        let view = dz.view().slice(s![..;-1, ..;2]).unwrap();
        let copy = device::fftn_with(&view, &none).unwrap();
        assert_eq!(copy.copy_to_host().unwrap(), z.slice(s![..;-1, ..;2]));
        let scalar = to_device(&ndarray::arr0(3.0f64)).unwrap();
        let three = device::fftn(&scalar).unwrap().copy_to_host().unwrap();
        assert_eq!(three, ndarray::arr0(Complex::new(3.0, 0.0)));
        for e in [
            device::rfftn_with(&dx, &none).unwrap_err(),
            device::irfftn_with(&spectrum, &none).unwrap_err(),
            device::rfftn(&scalar).unwrap_err(),
        ] {
            assert!(
                matches!(e, Error::InvalidArgument { name: "axes", .. }),
                "{e}"
            );
        }
    });
}

/// Runs `work` and checks that it copied nothing between host and device. Other tests of this
/// binary copy at the same time (most do not take `on_gpu`'s lock), so a window in which the
/// counters moved is tried again; work that copies moves them every time.
pub(crate) fn without_transfers<R>(what: &str, mut work: impl FnMut() -> R) -> R {
    for _ in 0..10 {
        let before = cuda_counters();
        let result = work();
        let after = cuda_counters();
        if (after.host_to_device, after.device_to_host)
            == (before.host_to_device, before.device_to_host)
        {
            return result;
        }
    }
    panic!("{what}: copies between host and device in every one of 10 tries");
}

#[test]
fn nothing_moves_through_the_host() {
    on_gpu("nothing_moves_through_the_host", || {
        let z = complex_data(&[16, 32], 5).mapv(|v| Complex::new(v.re as f32, v.im as f32));
        let x = data(&[16, 33], 6).mapv(|v| v as f32);
        let (dz, dx) = (to_device(&z).unwrap(), to_device(&x).unwrap());
        let (b, back, c) = without_transfers("device transforms", || {
            let a = device::fft2(&dz).unwrap();
            let b = device::ifft2(&a).unwrap();
            let r = device::rfftn(&dx).unwrap();
            let back: DeviceArray<f32, IxDyn> =
                device::irfftn_with(&r, &FftOptions::new().s(&[16, 33])).unwrap();
            let stream = Stream::new().unwrap();
            let c = device::fft_on(&stream, &dz, &FftOptions::new().axis(0)).unwrap();
            stream.synchronize().unwrap();
            (b, back, c)
        });
        assert_close("ifft2(fft2)", b.copy_to_host().unwrap(), z.clone(), 1e-5);
        assert_close("irfftn(rfftn)", back.copy_to_host().unwrap(), x, 1e-5);
        let want = fft::fft_with(&z, &FftOptions::new().axis(0)).unwrap();
        assert_close("on a stream", c.copy_to_host().unwrap(), want, 1e-5);
        // A second call of the same layout reuses its plans and compiles nothing.
        let compiles = cuda_counters().compiles;
        device::fft2(&dz).unwrap();
        assert_eq!(cuda_counters().compiles, compiles);
    });
}

#[test]
fn bad_options_are_errors() {
    on_gpu("bad_options_are_errors", || {
        let d = to_device(&ndarray::Array2::<f32>::zeros((3, 4))).unwrap();
        let o = FftOptions::new;
        let e = device::fft_with(&d, &o().axis(2)).unwrap_err();
        assert_eq!(e, Error::AxisOutOfRange { axis: 2, ndim: 2 });
        let e = device::fft_with(&d, &o().target(Target::Cpu)).unwrap_err();
        assert!(
            matches!(e, Error::InvalidArgument { name: "target", .. }),
            "{e}"
        );
        let e = device::rfft_with(&d, &o().n(0)).unwrap_err();
        assert!(matches!(e, Error::FftLength { axis: 1, .. }), "{e}");
        // Empty batches give empty results.
        let empty = to_device(&ndarray::Array2::<f32>::zeros((0, 4))).unwrap();
        assert_eq!(device::rfft(&empty).unwrap().shape(), &[0, 3]);
    });
}

/// A queue keeps only its most recently used plans (each cuFFT plan owns a device work
/// area): more shapes than it keeps, twice over, so that every plan is dropped and made
/// again, on the default queue and on a stream, with the transforms still right.
#[test]
fn more_shapes_than_plans_kept() {
    on_gpu("more_shapes_than_plans_kept", || {
        let stream = Stream::new().unwrap();
        for round in 0..2 {
            for n in 2..42 {
                let z = complex_data(&[3, n], n as u64)
                    .into_dimensionality::<ndarray::Ix2>()
                    .unwrap();
                let dz = to_device(&z).unwrap();
                let host = fft::fft(&z).unwrap();
                let what = format!("round {round}, length {n}");
                assert_close(
                    &what,
                    device::fft(&dz).unwrap().copy_to_host().unwrap(),
                    host.clone(),
                    1e-12,
                );
                let on = device::fft_on(&stream, &dz, &FftOptions::new()).unwrap();
                stream.synchronize().unwrap();
                assert_close(&what, on.copy_to_host().unwrap(), host, 1e-12);
            }
        }
    });
}
