//! Device arrays, views and streams: data that stays on the device between calls.

use super::kernels::*;
use super::on_gpu;
use ndarray::{array, Array1, Array2};
use ufunc::prelude::*;

#[test]
fn device_arrays_need_a_device() {
    let _serial = super::one_at_a_time();
    let x = array![1.0f32, 2.0];
    match ufunc::cuda::to_device(&x) {
        Ok(d) => assert_eq!(d.shape(), &[2]),
        Err(e) => assert!(matches!(e, Error::NoCudaDevice { .. }), "{e}"),
    }
    match square_sum::on_device(&x, 1.0f32) {
        Ok(d) => assert_eq!(d.copy_to_host().unwrap(), array![4.0f32, 9.0]),
        Err(e) => assert!(matches!(e, Error::NoCudaDevice { .. }), "{e}"),
    }
}

#[test]
fn the_device_memory_shrinks_by_what_is_allocated() {
    on_gpu("the_device_memory_shrinks_by_what_is_allocated", || {
        let before = ufunc::cuda::device_memory().unwrap();
        assert!(0 < before.free && before.free <= before.total, "{before:?}");
        // 1 GiB held (and written, so that the simulator's host pages are taken): the free
        // memory falls by at least half of it (other processes, and on the simulator the
        // host's allocator, move it too).
        let held = ufunc::cuda::to_device(&Array1::<u8>::from_elem(1 << 30, 1)).unwrap();
        let after = ufunc::cuda::device_memory().unwrap();
        assert_eq!(after.total, before.total);
        let fell = before.free as f64 - after.free as f64;
        assert!(
            (0.5..3.0).contains(&(fell / (1u64 << 30) as f64)),
            "free {} -> {} bytes with 1 GiB held",
            before.free,
            after.free
        );
        drop(held);
    });
}

#[test]
fn device_arrays_stay_on_the_device() {
    on_gpu("device_arrays_stay_on_the_device", || {
        use ufunc::cuda::{cuda_counters, device_array, to_device};
        let x = Array2::from_shape_fn((300, 200), |(i, j)| (i as f32) * 0.01 - j as f32 * 0.02);
        let y = x.t().to_owned();
        let dx = to_device(&x).unwrap();
        let dy = to_device(&y.t()).unwrap();
        assert_eq!(dx.copy_to_host().unwrap(), x);
        let before = cuda_counters();
        let dz = square_sum::on_device(&dx, &dy).unwrap();
        let after = cuda_counters();
        assert_eq!(
            after.host_to_device, before.host_to_device,
            "device operands do not move"
        );
        assert_eq!(
            after.device_to_host, before.device_to_host,
            "the result stays on the device"
        );
        // Chained, with a scalar and a broadcast row copied in.
        let row = Array1::from_shape_fn(200, |j| j as f32);
        let dw = square_sum::on_device(&dz, &row).unwrap();
        let want = square_sum(&square_sum(&x, &y.t()).unwrap(), &row).unwrap();
        assert_eq!(dw.copy_to_host().unwrap(), want);
        // A copy on the device moves nothing through the host.
        let mut copy = device_array::<f32, _>((300, 200)).unwrap();
        let before = cuda_counters();
        copy.copy_from(&dw).unwrap();
        assert_eq!(cuda_counters().host_to_device, before.host_to_device);
        assert_eq!(copy.copy_to_host().unwrap(), want);
        assert!(matches!(
            device_array::<f32, _>((2, 2)).unwrap().copy_from(&dw),
            Err(Error::OutputShape { .. })
        ));
        // Into an existing device array.
        let mut out = device_array::<f32, _>((300, 200)).unwrap();
        square_sum::out_device(&dx, 0.5f32, &mut out).unwrap();
        assert_eq!(out.copy_to_host().unwrap(), square_sum(&x, 0.5f32).unwrap());
        let mut wrong = device_array::<f32, _>((2, 2)).unwrap();
        assert!(matches!(
            square_sum::out_device(&dx, 0.5f32, &mut wrong),
            Err(Error::OutputShape { .. })
        ));
        // Several outputs come back as several device arrays.
        let xs = Array1::from_shape_fn(64, |i| i as f64 * 0.1);
        let (s, b) = series::on_device(&xs, 20u32).unwrap();
        let (s_cpu, b_cpu) = series(&xs, 20u32).unwrap();
        assert!(s
            .copy_to_host()
            .unwrap()
            .iter()
            .zip(&s_cpu)
            .all(|(p, q)| (p - q).abs() <= 1e-12 * (1.0 + q.abs())));
        assert_eq!(b.copy_to_host().unwrap(), b_cpu);
    });
}

#[test]
fn views_copy_back_their_own_elements() {
    on_gpu("views_copy_back_their_own_elements", || {
        use ndarray::s;
        use ufunc::cuda::{cuda_counters, to_device};
        let x = Array2::from_shape_fn((9, 7), |(i, j)| (i * 7 + j) as f64 - 0.5);
        let dx = to_device(&x).unwrap();
        let v = dx.view();
        let before = cuda_counters();
        // Contiguous from an offset (rows, one row, one element, none), then strided ones.
        assert_eq!(
            v.slice(s![2..5, ..]).unwrap().copy_to_host().unwrap(),
            x.slice(s![2..5, ..])
        );
        assert_eq!(
            v.slice(s![8, ..]).unwrap().copy_to_host().unwrap(),
            x.slice(s![8, ..])
        );
        assert_eq!(
            v.slice(s![4, 6]).unwrap().copy_to_host().unwrap(),
            x.slice(s![4, 6])
        );
        assert_eq!(
            v.slice(s![3..3, ..]).unwrap().copy_to_host().unwrap().len(),
            0
        );
        assert_eq!(
            v.slice(s![1..8;3, 2..]).unwrap().copy_to_host().unwrap(),
            x.slice(s![1..8;3, 2..])
        );
        assert_eq!(
            v.slice(s![..;-1, ..]).unwrap().copy_to_host().unwrap(),
            x.slice(s![..;-1, ..])
        );
        assert_eq!(
            v.slice(s![.., 5]).unwrap().copy_to_host().unwrap(),
            x.slice(s![.., 5])
        );
        // One transfer each, none for the empty view; the contiguous ones copy only their
        // own elements (21 + 7 + 1 of 8 bytes), the others the whole buffer.
        let after = cuda_counters();
        assert_eq!(after.device_to_host - before.device_to_host, 6);
        let bytes = after.device_to_host_bytes - before.device_to_host_bytes;
        assert_eq!(bytes, (21 + 7 + 1) * 8 + 3 * 63 * 8);
    });
}

#[test]
fn device_views_are_operands_without_copies() {
    on_gpu("device_views_are_operands_without_copies", || {
        use ndarray::s;
        use ufunc::cuda::{cuda_counters, to_device};
        let x = Array2::from_shape_fn((40, 30), |(i, j)| (i as f32) - 0.5 * j as f32);
        let row = Array1::from_shape_fn(30, |j| j as f32 * 0.25);
        let dx = to_device(&x).unwrap();
        let drow = to_device(&row).unwrap();
        let before = cuda_counters();
        // Transposed, sliced with steps (negative too), an index, a broadcast row: each is a
        // view of the same device memory, read in place by the strided kernel.
        let t = square_sum::on_device(dx.t(), 1.0f32).unwrap();
        let sliced = dx.view().slice(s![3..31;4, ..;-3]).unwrap();
        let z = square_sum::on_device(&sliced, drow.view().slice(s![..;3]).unwrap()).unwrap();
        let col = square_sum::on_device(dx.view().slice(s![.., 7]).unwrap(), 2.0f32).unwrap();
        let wide = drow.view().broadcast((40, 30)).unwrap();
        let b = square_sum::on_device(&dx, &wide).unwrap();
        let after = cuda_counters();
        assert_eq!(
            after.host_to_device - before.host_to_device,
            2,
            "the two scalars are copied in, no device operand moves"
        );
        assert_eq!(after.device_to_host, before.device_to_host);
        assert_eq!(
            t.copy_to_host().unwrap(),
            square_sum(&x.t(), 1.0f32).unwrap()
        );
        let x_sliced = x.slice(s![3..31;4, ..;-3]);
        assert_eq!(sliced.copy_to_host().unwrap(), x_sliced);
        assert_eq!(
            z.copy_to_host().unwrap(),
            square_sum(&x_sliced, &row.slice(s![..;3])).unwrap()
        );
        assert_eq!(
            col.copy_to_host().unwrap(),
            square_sum(&x.column(7), 2.0f32).unwrap()
        );
        assert_eq!(b.copy_to_host().unwrap(), square_sum(&x, &row).unwrap());
        // Views that do not fit are errors naming the shape.
        let e = dx.view().slice(s![..41, ..]).unwrap_err();
        assert!(e.to_string().contains("(40,30)"), "{e}");
        assert!(matches!(
            drow.view().broadcast((40, 29)),
            Err(Error::Broadcast { .. })
        ));
        assert!(matches!(
            dx.view().permuted_axes([0, 0]),
            Err(Error::View { .. })
        ));
        let p = dx.view().permuted_axes([1, 0]).unwrap();
        assert_eq!(p.copy_to_host().unwrap(), x.t());
    });
}

#[test]
fn streams_queue_work_and_report_panics_at_synchronize() {
    on_gpu(
        "streams_queue_work_and_report_panics_at_synchronize",
        || {
            use ufunc::cuda::{device_array, to_device, Stream};
            let x = Array1::from_shape_fn(10_000, |i| i as f32 * 1e-2);
            let dx = to_device(&x).unwrap();
            let stream = Stream::new().unwrap();
            // Chained calls queue without waiting; the results are read after the sync.
            let dz = square_sum::on_stream(&stream, &dx, 1.0f32).unwrap();
            let dw = square_sum::on_stream(&stream, &dz, &dx).unwrap();
            let mut out = device_array::<f32, _>(10_000).unwrap();
            square_sum::out_stream(&stream, &dw, -1.0f32, &mut out).unwrap();
            stream.synchronize().unwrap();
            let z = square_sum(&x, 1.0f32).unwrap();
            let w = square_sum(&z, &x).unwrap();
            assert_eq!(dw.copy_to_host().unwrap(), w);
            assert_eq!(
                out.copy_to_host().unwrap(),
                square_sum(&w, -1.0f32).unwrap()
            );
            // A panic in a queued kernel is the sync's error, and only once.
            let a = array![1, 2, 3];
            let zero = array![1, 0, 1];
            let queued = int_ops::on_stream(&stream, &a, &zero);
            assert!(queued.is_ok(), "queued, not yet run or checked");
            let e = stream.synchronize().unwrap_err();
            assert!(
                matches!(&e, Error::KernelPanic { function, .. } if *function == "int_ops"),
                "{e}"
            );
            stream.synchronize().unwrap();
            // auto_synchronize: the work's value after the sync, or the sync's error.
            let host = stream
                .auto_synchronize(|s| square_sum::on_stream(s, &dx, &dx)?.copy_to_host())
                .unwrap();
            assert_eq!(host, square_sum(&x, &x).unwrap());
            let e = stream
                .auto_synchronize(|s| int_ops::on_stream(s, &a, &zero).map(|_| ()))
                .unwrap_err();
            assert!(matches!(e, Error::KernelPanic { .. }), "{e}");
            // Two streams, one result used by the other.
            let other = Stream::new().unwrap();
            let d1 = square_sum::on_stream(&stream, &dx, 0.5f32).unwrap();
            let d2 = square_sum::on_stream(&other, &d1, 0.5f32).unwrap();
            other.synchronize().unwrap();
            stream.synchronize().unwrap();
            assert_eq!(
                d2.copy_to_host().unwrap(),
                square_sum(&square_sum(&x, 0.5f32).unwrap(), 0.5f32).unwrap()
            );
        },
    );
}

#[test]
fn gufuncs_take_and_leave_device_arrays() {
    on_gpu("gufuncs_take_and_leave_device_arrays", || {
        use ufunc::cuda::{cuda_counters, device_array, to_device, Stream};
        let a = ndarray::Array3::from_shape_fn((64, 3, 4), |(q, i, k)| ((q + i * k) % 5) as f32);
        let b = Array2::from_shape_fn((5, 4), |(j, k)| (j * 4 + k) as f32 - 6.0);
        let (da, db) = (to_device(&a).unwrap(), to_device(&b).unwrap());
        let before = cuda_counters();
        // A transposed device view as the (n,p) operand, broadcast over the loop dimension.
        let dc = gu_matmul::on_device(&da, db.t()).unwrap();
        let after = cuda_counters();
        assert_eq!(after.host_to_device, before.host_to_device);
        assert_eq!(after.device_to_host, before.device_to_host);
        assert_eq!(dc.shape(), &[64, 3, 5]);
        let want = gu_matmul::on(Target::Cpu, &a, &b.t()).unwrap();
        assert_eq!(dc.copy_to_host().unwrap(), want);
        // Chained on the device: (a @ b.T) @ ones(5, 2).
        let ones = Array2::<f32>::ones((5, 2));
        let dd = gu_matmul::on_device(&dc, &ones).unwrap();
        assert_eq!(
            dd.copy_to_host().unwrap(),
            gu_matmul::on(Target::Cpu, &want, &ones).unwrap()
        );
        // Several outputs, and `out_device` with an output-only dimension from the array.
        let x = Array2::from_shape_fn((16, 9), |(i, j)| i as f64 - 0.25 * j as f64);
        let dx = to_device(&x).unwrap();
        let (dot, norm) =
            gu_dot_and_norm::on_device(&dx, dx.view().slice(ndarray::s![2, ..]).unwrap()).unwrap();
        let (dot_cpu, norm_cpu) = gu_dot_and_norm::on(Target::Cpu, &x, &x.row(2)).unwrap();
        assert_eq!(dot.copy_to_host().unwrap(), dot_cpu);
        assert_eq!(norm.copy_to_host().unwrap(), norm_cpu);
        let v = Array2::from_shape_fn((20, 100), |(i, j)| ((i * 37 + j * 11) % 100) as f32 * 0.01);
        let mut counts = device_array::<u32, _>(ndarray::IxDyn(&[20, 8])).unwrap();
        let stream = Stream::new().unwrap();
        gu_histogram::out_stream(&stream, &v, 1.0f32, &mut counts).unwrap();
        stream.synchronize().unwrap();
        let mut counts_cpu = Array2::<u32>::zeros((20, 8));
        gu_histogram::out_on(Target::Cpu, &v, 1.0f32, &mut counts_cpu).unwrap();
        assert_eq!(counts.copy_to_host().unwrap(), counts_cpu.into_dyn());
        // Shapes that do not fit the layout are errors naming the operand.
        let e = gu_matmul::on_device(&da, &da).unwrap_err();
        assert!(matches!(e, Error::CoreDimMismatch { .. }), "{e}");
        let mut wrong = device_array::<u32, _>(ndarray::IxDyn(&[19, 8])).unwrap();
        assert!(gu_histogram::out_device(&v, 1.0f32, &mut wrong).is_err());
    });
}

#[test]
fn vectorize_and_guvectorize_device_forms_agree() {
    on_gpu("vectorize_and_guvectorize_device_forms_agree", || {
        use ufunc::cuda::{device_array, to_device, Stream};
        let x = Array2::from_shape_fn((5, 7), |(i, j)| i as f32 - 0.25 * j as f32);
        let row = Array1::from_shape_fn(7, |j| j as f32 * 0.5);
        let (dx, drow) = (to_device(&x).unwrap(), to_device(&row).unwrap());
        let want = square_sum(&x, &row).unwrap().into_dyn();
        assert_eq!(gu_square_sum(&x, &row).unwrap(), want);
        let on_ufunc = square_sum::on_device(&dx, drow.view()).unwrap();
        let on_gufunc = gu_square_sum::on_device(&dx, drow.view()).unwrap();
        assert_eq!(on_ufunc.copy_to_host().unwrap().into_dyn(), want);
        assert_eq!(on_gufunc.copy_to_host().unwrap(), want);
        let stream = Stream::new().unwrap();
        let queued_ufunc = square_sum::on_stream(&stream, &dx, 1.0f32).unwrap();
        let queued_gufunc = gu_square_sum::on_stream(&stream, &dx, 1.0f32).unwrap();
        let mut out_ufunc = device_array::<f32, _>(ndarray::IxDyn(&[5, 7])).unwrap();
        let mut out_gufunc = device_array::<f32, _>(ndarray::IxDyn(&[5, 7])).unwrap();
        square_sum::out_stream(&stream, &dx, &drow, &mut out_ufunc).unwrap();
        gu_square_sum::out_stream(&stream, &dx, &drow, &mut out_gufunc).unwrap();
        stream.synchronize().unwrap();
        assert_eq!(
            queued_ufunc.copy_to_host().unwrap().into_dyn(),
            queued_gufunc.copy_to_host().unwrap()
        );
        assert_eq!(out_ufunc.copy_to_host().unwrap(), want);
        assert_eq!(out_gufunc.copy_to_host().unwrap(), want);
        square_sum::out_device(&dx, 0.5f32, &mut out_ufunc).unwrap();
        gu_square_sum::out_device(&dx, 0.5f32, &mut out_gufunc).unwrap();
        assert_eq!(
            out_ufunc.copy_to_host().unwrap(),
            out_gufunc.copy_to_host().unwrap()
        );
        let mut wrong = device_array::<f32, _>(ndarray::IxDyn(&[5, 6])).unwrap();
        assert!(square_sum::out_device(&dx, &drow, &mut wrong).is_err());
        assert!(gu_square_sum::out_device(&dx, &drow, &mut wrong).is_err());
    });
}
