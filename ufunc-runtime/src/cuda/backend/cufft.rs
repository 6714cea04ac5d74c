//! cuFFT plans on the real device, through cudarc's raw bindings (loaded at run time). The
//! handle is owned here, with a `Drop` that never fails: a missing library is an `Err` when
//! the first plan is made, never a panic.

use super::super::args::{FftKind, FftLayout, FftPlanHandle};
use super::foreign;
use crate::error::{Error, Result};
use cudarc::cufft::{result, sys};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use std::ffi::c_int;
use std::sync::{Arc, Mutex};

/// A cuFFT handle and its transform type.
struct CufftPlan {
    handle: sys::cufftHandle,
    kind: FftKind,
    double: bool,
    /// Held from binding the plan to a stream until its transform is queued: cuFFT is
    /// thread-safe only for different plans, and a queue's cached plans (the default queue's
    /// are the whole process's) can be run from several threads at once. Holds the stream
    /// the plan last ran on.
    exec: Mutex<Option<Arc<CudaStream>>>,
}

impl Drop for CufftPlan {
    fn drop(&mut self) {
        // Destroying the plan frees its work area, which a transform queued on its stream
        // may still be using.
        let last = self
            .exec
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(stream) = &last {
            let _ = stream.synchronize();
        }
        // SAFETY: the handle was made by `cufftCreate` and is destroyed once; an error (a
        // context already gone at exit) leaves nothing to free.
        let _ = unsafe { result::destroy(self.handle) };
        // The stream the plan is bound to outlives it.
        drop(last);
    }
}

fn cufft_error(what: &str) -> impl Fn(result::CufftError) -> Error + '_ {
    move |e| Error::Cuda {
        what: format!("{what}: {e:?}"),
    }
}

fn fft_type(kind: FftKind, double: bool) -> sys::cufftType {
    use sys::cufftType::*;
    match (kind, double) {
        (FftKind::C2C, false) => CUFFT_C2C,
        (FftKind::R2C, false) => CUFFT_R2C,
        (FftKind::C2R, false) => CUFFT_C2R,
        (FftKind::C2C, true) => CUFFT_Z2Z,
        (FftKind::R2C, true) => CUFFT_D2Z,
        (FftKind::C2R, true) => CUFFT_Z2D,
    }
}

/// A plan of `layout` in `ctx`, or why there is none (no cuFFT library, a layout cuFFT
/// rejects, no memory for its work area).
pub(super) fn plan(ctx: &Arc<CudaContext>, layout: &FftLayout) -> Result<FftPlanHandle> {
    // SAFETY: only tries to open the library.
    if !unsafe { sys::is_culib_present() } {
        return Err(Error::Cuda {
            what: "the cuFFT library (libcufft.so) is not installed: device FFTs need it".into(),
        });
    }
    ctx.bind_to_thread().map_err(|e| Error::Cuda {
        what: format!("binding the CUDA context for an FFT plan: {e:?}"),
    })?;
    let handle = result::create().map_err(cufft_error("creating a cuFFT plan"))?;
    // Owned from here: an error below destroys it.
    let plan = CufftPlan {
        handle,
        kind: layout.kind,
        double: layout.double,
        exec: Mutex::new(None),
    };
    let (mut n, mut inembed, mut onembed) = (
        layout.n.clone(),
        layout.inembed.clone(),
        layout.onembed.clone(),
    );
    // SAFETY: `n`, `inembed` and `onembed` hold `rank` lengths each and live across the call.
    unsafe {
        result::make_plan_many64(
            handle,
            n.len() as c_int,
            n.as_mut_ptr(),
            inembed.as_mut_ptr(),
            layout.istride,
            layout.idist,
            onembed.as_mut_ptr(),
            layout.ostride,
            layout.odist,
            fft_type(layout.kind, layout.double),
            layout.batch,
        )
    }
    .map_err(|e| Error::Cuda {
        what: format!("planning a cuFFT transform {layout:?}: {e:?}"),
    })?;
    Ok(FftPlanHandle(Arc::new(plan)))
}

/// Queues `plan` on `stream` (in place when `input` is `None`).
pub(super) fn exec(
    stream: &Arc<CudaStream>,
    plan: &FftPlanHandle,
    input: Option<(&CudaSlice<u8>, usize)>,
    output: (&mut CudaSlice<u8>, usize),
    inverse: bool,
) -> Result<()> {
    let p: &CufftPlan = plan
        .0
        .downcast_ref()
        .ok_or_else(|| foreign("running an FFT plan"))?;
    // A panic elsewhere while holding it leaves nothing half-done that this call relies on.
    let mut last_stream = p.exec.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: a live handle and stream.
    unsafe { result::set_stream(p.handle, stream.cu_stream() as _) }
        .map_err(cufft_error("binding a cuFFT plan to a stream"))?;
    *last_stream = Some(stream.clone());
    let (out, out_offset) = output;
    let (optr, _out_sync) = out.device_ptr_mut(stream);
    let optr = optr + out_offset as u64;
    let (iptr, _in_sync) = match input {
        Some((buf, offset)) => {
            let (ptr, sync) = buf.device_ptr(stream);
            (ptr + offset as u64, Some(sync))
        }
        None => (optr, None),
    };
    let direction: c_int = if inverse { 1 } else { -1 };
    // SAFETY: the callers (`cuda::fft`) size and offset the buffers for the plan's layout:
    // every element it reads and writes lies inside them, and the element types match.
    let done = unsafe {
        match (p.kind, p.double) {
            (FftKind::C2C, false) => {
                result::exec_c2c(p.handle, iptr as *mut _, optr as *mut _, direction)
            }
            (FftKind::R2C, false) => result::exec_r2c(p.handle, iptr as *mut _, optr as *mut _),
            (FftKind::C2R, false) => result::exec_c2r(p.handle, iptr as *mut _, optr as *mut _),
            (FftKind::C2C, true) => {
                result::exec_z2z(p.handle, iptr as *mut _, optr as *mut _, direction)
            }
            (FftKind::R2C, true) => result::exec_d2z(p.handle, iptr as *mut _, optr as *mut _),
            (FftKind::C2R, true) => result::exec_z2d(p.handle, iptr as *mut _, optr as *mut _),
        }
    };
    done.map_err(cufft_error("running a cuFFT transform"))
}
