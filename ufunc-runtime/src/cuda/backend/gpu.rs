//! The real device: one CUDA context on device 0, cubins loaded as modules, launches on
//! streams. Everything that calls cudarc lives here.

use super::super::args::{
    Arg, Buffer, FftLayout, FftPlanHandle, HostBuffer, LaunchShape, ModuleHandle, StreamHandle,
};
use super::super::cache::{cached_cubin, options};
use super::super::kernel::CudaKernel;
use super::{byte_range, cufft, foreign, Backend};
use crate::error::{Error, Result};
use cudarc::driver::{
    CudaContext, CudaModule, CudaSlice, CudaStream, DriverError, LaunchConfig, PinnedHostSlice,
    PushKernelArg,
};
use std::sync::Arc;

pub(super) struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// `sm_XY` of device 0.
    arch: String,
    multiprocessors: u32,
}

fn driver_error(what: &str, e: DriverError) -> Error {
    Error::Cuda {
        what: format!("{what}: {e:?}"),
    }
}

fn stream(s: &StreamHandle) -> Result<&Arc<CudaStream>> {
    s.0.as_ref()
        .and_then(|s| s.downcast_ref::<Arc<CudaStream>>())
        .ok_or_else(|| foreign("using a stream"))
}

fn slice(b: &Buffer) -> Result<&CudaSlice<u8>> {
    b.0.downcast_ref()
        .ok_or_else(|| foreign("reading device memory"))
}

fn slice_mut(b: &mut Buffer) -> Result<&mut CudaSlice<u8>> {
    b.0.downcast_mut()
        .ok_or_else(|| foreign("writing device memory"))
}

fn module(m: &ModuleHandle) -> Result<&Arc<CudaModule>> {
    m.0.downcast_ref().ok_or_else(|| foreign("using a module"))
}

impl Gpu {
    /// Device 0, or why there is none. Checks for the driver library before any cudarc call
    /// that would panic without it.
    pub(super) fn open() -> std::result::Result<Gpu, String> {
        // SAFETY: only tries to open the driver library.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err("the CUDA driver library (libcuda.so) is not installed".into());
        }
        let ctx = CudaContext::new(0).map_err(|e| format!("no CUDA device: {e:?}"))?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(|e| format!("cannot query the device: {e:?}"))?;
        let multiprocessors = ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .unwrap_or(1)
            .max(1) as u32;
        let stream = ctx.default_stream();
        Ok(Gpu {
            ctx,
            stream,
            arch: format!("sm_{major}{minor}"),
            multiprocessors,
        })
    }
}

impl Backend for Gpu {
    fn default_stream(&self) -> StreamHandle {
        StreamHandle(Some(Arc::new(self.stream.clone())))
    }

    fn new_stream(&self) -> Result<StreamHandle> {
        let s = self
            .ctx
            .new_stream()
            .map_err(|e| driver_error("creating a stream", e))?;
        Ok(StreamHandle(Some(Arc::new(s))))
    }

    fn alloc_zeroed(&self, s: &StreamHandle, bytes: usize) -> Result<Buffer> {
        let mem = stream(s)?
            .alloc_zeros::<u8>(bytes.max(1))
            .map_err(|e| driver_error("allocating device memory", e))?;
        Ok(Buffer(Box::new(mem)))
    }

    fn alloc(&self, s: &StreamHandle, bytes: usize) -> Result<Buffer> {
        // SAFETY: `u8` has no invalid bit patterns; callers write the memory before reading.
        let mem = unsafe { stream(s)?.alloc::<u8>(bytes.max(1)) }
            .map_err(|e| driver_error("allocating device memory", e))?;
        Ok(Buffer(Box::new(mem)))
    }

    fn upload(&self, s: &StreamHandle, bytes: &[u8]) -> Result<Buffer> {
        // An empty operand still needs a valid device pointer.
        let bytes: &[u8] = if bytes.is_empty() { &[0u8] } else { bytes };
        let mem = stream(s)?
            .clone_htod(bytes)
            .map_err(|e| driver_error("copying to the device", e))?;
        Ok(Buffer(Box::new(mem)))
    }

    fn alloc_host(&self, bytes: usize) -> Result<HostBuffer> {
        // Cached, not write-combined (cudarc's `alloc_pinned`): the host reads frames back.
        // SAFETY: `u8` has no invalid bit patterns; the memory is zeroed before use.
        let mut mem = unsafe { self.ctx.alloc_pinned_with_flags::<u8>(bytes.max(1), 0) }
            .map_err(|e| driver_error("allocating page-locked host memory", e))?;
        mem.as_mut_slice()
            .map_err(|e| driver_error("clearing page-locked host memory", e))?
            .fill(0);
        Ok(HostBuffer(Box::new(mem)))
    }

    fn host_bytes<'a>(&self, host: &'a mut HostBuffer) -> Result<&'a mut [u8]> {
        let mem: &mut PinnedHostSlice<u8> = host
            .0
            .downcast_mut()
            .ok_or_else(|| foreign("writing host memory"))?;
        // Waits for the copies queued from it.
        mem.as_mut_slice()
            .map_err(|e| driver_error("waiting for page-locked host memory", e))
    }

    fn upload_host(&self, s: &StreamHandle, host: &HostBuffer) -> Result<Buffer> {
        let src: &PinnedHostSlice<u8> = host
            .0
            .downcast_ref()
            .ok_or_else(|| foreign("reading host memory"))?;
        let stream = stream(s)?;
        // SAFETY: `u8` has no invalid bit patterns; the copy writes the whole buffer.
        let mut mem = unsafe { stream.alloc::<u8>(src.len()) }
            .map_err(|e| driver_error("allocating device memory", e))?;
        stream
            .memcpy_htod(src, &mut mem)
            .map_err(|e| driver_error("copying to the device", e))?;
        Ok(Buffer(Box::new(mem)))
    }

    fn byte_len(&self, buf: &Buffer) -> Result<usize> {
        Ok(slice(buf)?.len())
    }

    fn download_into(
        &self,
        s: &StreamHandle,
        buf: &Buffer,
        offset: usize,
        dst: &mut [u8],
    ) -> Result<()> {
        let src = slice(buf)?;
        let range = byte_range(offset, dst.len(), src.len())?;
        // Pageable `dst`: the copy is done when this returns.
        stream(s)?
            .memcpy_dtoh(&src.slice(range), dst)
            .map_err(|e| driver_error("copying from the device", e))
    }

    fn copy(&self, s: &StreamHandle, src: &Buffer, dst: &mut Buffer) -> Result<()> {
        stream(s)?
            .memcpy_dtod(slice(src)?, slice_mut(dst)?)
            .map_err(|e| driver_error("copying on the device", e))
    }

    fn load(&self, kernel: &CudaKernel, source: &str) -> Result<ModuleHandle> {
        let cubin = cached_cubin(source, &self.arch, &options(kernel))?;
        let module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
            .map_err(|e| driver_error(&format!("loading the module of `{}`", kernel.name), e))?;
        Ok(ModuleHandle(Arc::new(module)))
    }

    fn launch(
        &self,
        s: &StreamHandle,
        m: &ModuleHandle,
        entry: &str,
        shape: LaunchShape,
        args: &mut [Arg<'_>],
        status: &mut Buffer,
    ) -> Result<()> {
        let func = module(m)?
            .load_function(entry)
            .map_err(|e| driver_error(&format!("finding kernel {entry}"), e))?;
        let blocks = (shape.items.div_ceil(shape.threads as usize) as u32)
            .clamp(1, self.multiprocessors * 32);
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (shape.threads, 1, 1),
            shared_mem_bytes: 0,
        };
        // Views of offset inputs must outlive the builder that borrows them.
        let views = args
            .iter()
            .map(|a| match a {
                Arg::In(b, offset) if *offset > 0 => Ok(Some(slice(b)?.slice(*offset..))),
                _ => Ok(None),
            })
            .collect::<Result<Vec<_>>>()?;
        let stream = stream(s)?;
        let mut builder = stream.launch_builder(&func);
        for (arg, view) in args.iter_mut().zip(&views) {
            match (arg, view) {
                (Arg::I64(v), _) => builder.arg(&*v),
                (Arg::I32(v), _) => builder.arg(&*v),
                (Arg::In(_, _), Some(view)) => builder.arg(view),
                (Arg::In(b, _), None) => builder.arg(slice(b)?),
                (Arg::Out(b), _) => builder.arg(slice_mut(b)?),
            };
        }
        builder.arg(slice_mut(status)?);
        // SAFETY: the callers build `args` from the kernel's C++ signature (see `launch.rs`):
        // 64-bit counts and 32-bit ranks by value, device pointers to buffers of the operand
        // types that cover every offset the shapes and strides reach.
        unsafe { builder.launch(cfg) }
            .map_err(|e| driver_error(&format!("launching {entry}"), e))?;
        Ok(())
    }

    fn fft_plan(&self, _: &StreamHandle, layout: &FftLayout) -> Result<FftPlanHandle> {
        cufft::plan(&self.ctx, layout)
    }

    fn fft_exec(
        &self,
        s: &StreamHandle,
        plan: &FftPlanHandle,
        input: Option<(&Buffer, usize)>,
        output: (&mut Buffer, usize),
        inverse: bool,
    ) -> Result<()> {
        let input = match input {
            Some((b, offset)) => Some((slice(b)?, offset)),
            None => None,
        };
        let output = (slice_mut(output.0)?, output.1);
        // cuFFT runs in the thread's current context: this thread may not have used CUDA yet.
        self.ctx
            .bind_to_thread()
            .map_err(|e| driver_error("binding the CUDA context for an FFT", e))?;
        cufft::exec(stream(s)?, plan, input, output, inverse)
    }

    fn synchronize(&self, s: &StreamHandle) -> Result<()> {
        stream(s)?
            .synchronize()
            .map_err(|e| driver_error("running the queued kernels", e))
    }
}
