//! The same functions on `cpu` and `cuda`: results within the stated bound, panics as errors.

use super::kernels::*;
use super::on_gpu;
use crate::common::ulps;
use ndarray::{array, Array1, Array2};
use ufunc::prelude::*;

#[test]
fn without_a_device_the_call_is_an_error() {
    let _serial = super::one_at_a_time();
    if let Err(e) = square_sum::on(Target::Cuda, &array![1.0f32], 1.0f32) {
        assert!(
            matches!(
                e,
                Error::NoCudaDevice { .. }
                    | Error::Nvrtc { .. }
                    | Error::NvrtcUnavailable
                    | Error::KernelTarget { .. }
            ),
            "{e}"
        );
    }
    // Functions not compiled for cuda say so.
    #[vectorize]
    fn cpu_only(x: f32) -> f32 {
        x
    }
    let e = cpu_only::on(Target::Cuda, &array![1.0f32]).unwrap_err();
    assert!(matches!(e, Error::TargetNotCompiled { .. }), "{e}");
}

#[test]
fn cpu_and_cuda_agree() {
    on_gpu("cpu_and_cuda_agree", || {
        let x = Array1::from_shape_fn(100_003, |i| (i as f32) * 1e-3 - 50.0);
        let y = x.mapv(|v| v * 0.37 + 1.0);
        // Exact: IEEE add/mul, no contraction (--fmad=false).
        assert_eq!(
            square_sum::on(Target::Cuda, &x, &y).unwrap(),
            square_sum::on(Target::Cpu, &x, &y).unwrap()
        );
        // Transcendentals: within 4 ulp (CUDA's expf/sinf/cosf are within 2 ulp, ours within 1).
        let g_gpu = gaussian_pdf::on(Target::Cuda, &x, 0.5f32, 3.0f32).unwrap();
        let g_cpu = gaussian_pdf::on(Target::Cpu, &x, 0.5f32, 3.0f32).unwrap();
        assert!(g_gpu.iter().zip(&g_cpu).all(|(a, b)| ulps(*a, *b) <= 4));
        let d_gpu = polar_distance::on(Target::Cuda, &x, &y, &y, &x).unwrap();
        let d_cpu = polar_distance::on(Target::Cpu, &x, &y, &y, &x).unwrap();
        assert!(d_gpu
            .iter()
            .zip(&d_cpu)
            .all(|(a, b)| (a - b).abs() <= 1e-4 * (1.0 + b.abs())));
        // Integers, loops, match, tuples, generics, complex, casts: exact.
        let a = Array1::from_shape_fn(1000, |i| i as i32 * 7919 - 3_000_000);
        let b = Array1::from_shape_fn(1000, |i| {
            (i as i32 % 13) - 6 + if i % 13 == 6 { 1 } else { 0 }
        });
        assert_eq!(
            int_ops::on(Target::Cuda, &a, &b).unwrap(),
            int_ops::on(Target::Cpu, &a, &b).unwrap()
        );
        let n = Array1::from_shape_fn(1000, |i| i as u64 + 1);
        assert_eq!(
            collatz_steps::on(Target::Cuda, &n).unwrap(),
            collatz_steps::on(Target::Cpu, &n).unwrap()
        );
        let xs = Array2::from_shape_fn((10, 100), |(i, j)| (i * 100 + j) as f64 * 0.01 - 5.0);
        let (s_gpu, b_gpu) = series::on(Target::Cuda, &xs, 30u32).unwrap();
        let (s_cpu, b_cpu) = series::on(Target::Cpu, &xs, 30u32).unwrap();
        assert_eq!(b_gpu, b_cpu);
        assert!(s_gpu
            .iter()
            .zip(&s_cpu)
            .all(|(p, q)| (p - q).abs() <= 1e-12 * (1.0 + q.abs())));
        let v = Array1::from_shape_fn(500, |i| i as f32 * 0.1 - 25.0);
        assert_eq!(
            clamp_scale::on(Target::Cuda, &v, -3.0f32, 4.0f32).unwrap(),
            clamp_scale::on(Target::Cpu, &v, -3.0f32, 4.0f32).unwrap()
        );
        assert_eq!(
            saturating_cast::on(Target::Cuda, &v).unwrap(),
            saturating_cast::on(Target::Cpu, &v).unwrap()
        );
        let z = Array1::from_shape_fn(100, |i| Complex::new(i as f64 - 50.0, 1.0 + i as f64));
        let w = cmul_conj::on(Target::Cuda, &z, Complex::new(0.5, -2.0)).unwrap();
        let w_cpu = cmul_conj::on(Target::Cpu, &z, Complex::new(0.5, -2.0)).unwrap();
        assert!(w.iter().zip(&w_cpu).all(|(p, q)| (p - q).norm() <= 1e-12));
        // Broadcasting and strided operands go through the strided kernel.
        let m = Array2::from_shape_fn((300, 7), |(i, j)| (i + j) as f32);
        let row = Array1::from_shape_fn(7, |j| j as f32 * 0.5);
        assert_eq!(
            square_sum::on(
                Target::Cuda,
                &m.t(),
                &row.view().insert_axis(ndarray::Axis(1))
            )
            .unwrap(),
            square_sum::on(
                Target::Cpu,
                &m.t(),
                &row.view().insert_axis(ndarray::Axis(1))
            )
            .unwrap()
        );
    });
}

#[test]
fn gufuncs_agree_between_cpu_and_cuda() {
    on_gpu("gufuncs_agree_between_cpu_and_cuda", || {
        let a = ndarray::Array3::from_shape_fn((1000, 2, 4), |(q, i, k)| {
            ((q + 2 * i + 3 * k) % 7) as f32 - 3.0
        });
        let b = ndarray::Array3::from_shape_fn((1000, 4, 5), |(q, k, j)| {
            ((q + k + 5 * j) % 5) as f32 - 2.0
        });
        // Small integers: the sums are exact in f32 on both sides.
        assert_eq!(
            gu_matmul::on(Target::Cuda, &a, &b).unwrap(),
            gu_matmul::on(Target::Cpu, &a, &b).unwrap()
        );
        // Loop broadcasting and a transposed operand.
        let b2 = Array2::from_shape_fn((5, 4), |(j, k)| (j * 4 + k) as f32);
        assert_eq!(
            gu_matmul::on(Target::Cuda, &a, &b2.t()).unwrap(),
            gu_matmul::on(Target::Cpu, &a, &b2.t()).unwrap()
        );
        let x = Array2::from_shape_fn((50, 9), |(i, j)| (i as f64) * 0.1 - j as f64);
        let (d_gpu, n_gpu) = gu_dot_and_norm::on(Target::Cuda, &x, &x.row(3)).unwrap();
        let (d_cpu, n_cpu) = gu_dot_and_norm::on(Target::Cpu, &x, &x.row(3)).unwrap();
        assert!(d_gpu
            .iter()
            .zip(&d_cpu)
            .all(|(p, q)| (p - q).abs() <= 1e-12 * (1.0 + q.abs())));
        assert!(n_gpu
            .iter()
            .zip(&n_cpu)
            .all(|(p, q)| (p - q).abs() <= 1e-12 * (1.0 + q.abs())));
        let v = Array2::from_shape_fn((20, 100), |(i, j)| ((i * 37 + j * 11) % 100) as f32 * 0.01);
        let mut c_gpu = Array2::<u32>::zeros((20, 8));
        let mut c_cpu = Array2::<u32>::zeros((20, 8));
        gu_histogram::out_on(Target::Cuda, &v, 1.0f32, &mut c_gpu).unwrap();
        gu_histogram::out_on(Target::Cpu, &v, 1.0f32, &mut c_cpu).unwrap();
        assert_eq!(c_gpu, c_cpu);
        let poly = Array2::from_shape_fn((24, 2), |(k, c)| {
            let angle = k as f32 * std::f32::consts::TAU / 24.0;
            let r = if k % 2 == 0 { 45.0 } else { 20.0 };
            50.0 + r * if c == 0 { angle.cos() } else { angle.sin() }
        });
        let xs = Array1::from_shape_fn(100, |i| i as f32 + 0.5).insert_axis(ndarray::Axis(0));
        let ys = Array1::from_shape_fn(100, |i| i as f32 + 0.5).insert_axis(ndarray::Axis(1));
        assert_eq!(
            gu_inside::on(Target::Cuda, &xs, &ys, &poly).unwrap(),
            gu_inside::on(Target::Cpu, &xs, &ys, &poly).unwrap()
        );
    });
}

#[test]
fn panics_in_a_kernel_are_errors() {
    on_gpu("panics_in_a_kernel_are_errors", || {
        let e = int_ops::on(Target::Cuda, &array![1, 2, 3], &array![1, 0, 1]).unwrap_err();
        assert!(
            matches!(&e, Error::KernelPanic { message, .. } if message.contains("divide by zero")),
            "{e}"
        );
        let e = saturating_cast::on(Target::Cuda, &array![1.0f32, f32::NAN]).unwrap_err();
        assert!(matches!(e, Error::KernelPanic { .. }), "{e}");
        // The flag is cleared: the next call succeeds.
        assert!(int_ops::on(Target::Cuda, &array![4], &array![2]).is_ok());
    });
}

#[test]
fn independent_core_loops_get_a_thread_per_output_element() {
    // Which gufuncs are mapped (checked on the generated source, GPU or not).
    for (mapped, src) in [
        (true, gu_matmul::cuda_source()),
        (true, gu_lower_cumsum::cuda_source()),
        (true, gu_overrun::cuda_source()),
        (true, gu_guarded::cuda_source()),
        (false, gu_histogram::cuda_source()),
        (false, gu_dot_and_norm::cuda_source()),
        (false, gu_inside::cuda_source()),
    ] {
        assert_eq!(src.contains("__ufunc_mapped[0]"), mapped, "{src}");
    }
    assert!(gu_matmul::cuda_source().contains("__ufunc_mapped[1]"));
    on_gpu(
        "independent_core_loops_get_a_thread_per_output_element",
        || {
            // A batch of one matrix: many threads, the same result.
            let a = Array2::from_shape_fn((37, 29), |(i, k)| ((i * 3 + k * 5) % 11) as f32 - 5.0);
            let b = Array2::from_shape_fn((29, 41), |(k, j)| ((k + 2 * j) % 7) as f32 - 3.0);
            assert_eq!(
                gu_matmul::on(Target::Cuda, &a, &b).unwrap(),
                gu_matmul::on(Target::Cpu, &a, &b).unwrap()
            );
            let m = ndarray::Array3::from_shape_fn((3, 9, 9), |(q, i, j)| {
                (q * 81 + i * 9 + j) as f64 * 0.5
            });
            assert_eq!(
                gu_lower_cumsum::on(Target::Cuda, &m).unwrap(),
                gu_lower_cumsum::on(Target::Cpu, &m).unwrap()
            );
            // Empty core dimensions launch nothing.
            let empty = ndarray::Array3::<f64>::zeros((4, 0, 0));
            assert_eq!(
                gu_lower_cumsum::on(Target::Cuda, &empty).unwrap().shape(),
                &[4, 0, 0]
            );
            let x = Array1::from_elem(8, 1.0f32);
            assert!(matches!(
                gu_overrun::on(Target::Cpu, &x),
                Err(Error::KernelPanic { .. })
            ));
            let e = gu_overrun::on(Target::Cuda, &x).unwrap_err();
            assert!(
                matches!(&e, Error::KernelPanic { message, .. } if message.contains("index out of bounds")),
                "{e}"
            );
        },
    );
}

#[test]
fn a_mapped_loop_past_the_output_does_what_the_serial_loop_does() {
    on_gpu(
        "a_mapped_loop_past_the_output_does_what_the_serial_loop_does",
        || {
            // Threads past the output's extent do nothing; the guard keeps the tail harmless.
            for (n, m) in [(1, 0), (1, 3), (5, 1), (300, 7), (2, 300)] {
                let a = Array2::from_shape_fn((3, n), |(q, i)| (q * 7 + i) as f32);
                let extra = Array1::from_shape_fn(m, |k| 0.5 + k as f32);
                let cpu = gu_guarded::on(Target::Cpu, &a, &extra).unwrap();
                assert_eq!(
                    gu_guarded::on(Target::Cuda, &a, &extra).unwrap(),
                    cpu,
                    "n={n} m={m}"
                );
            }
            // An empty output axis: only the iterations past the output run, on one thread.
            let (a, extra) = (Array2::<f32>::zeros((4, 0)), Array1::from_elem(2, 1.0f32));
            assert_eq!(
                gu_guarded::on(Target::Cuda, &a, &extra).unwrap().shape(),
                &[4, 0]
            );
            // And there the unguarded loop's first write is out of bounds, as on the CPU.
            assert!(gu_overrun::on(Target::Cpu, &Array1::<f32>::zeros(0)).is_err());
            let e = gu_overrun::on(Target::Cuda, &Array1::<f32>::zeros(0)).unwrap_err();
            assert!(matches!(&e, Error::KernelPanic { .. }), "{e}");
        },
    );
}
