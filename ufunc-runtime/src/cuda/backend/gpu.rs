//! The real device: one CUDA context on device 0, cubins loaded as modules, launches on
//! streams. Everything that calls cudarc lives here.

use super::super::args::{
    Arg, Buffer, FftLayout, FftPlanHandle, HostBuffer, LaunchShape, ModuleHandle, StreamHandle,
};
use super::super::cache::{cached_image, options};
use super::super::kernel::CudaKernel;
use super::super::nvrtc::{
    kernel_target, nvrtc_available, nvrtc_version, supported_archs, KernelTarget, NvrtcOutput,
};
use super::{byte_range, cufft, foreign, Backend, DeviceMemory};
use crate::error::{Error, Result};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaModule, CudaSlice, CudaStream, DriverError, LaunchConfig,
    PinnedHostSlice, PushKernelArg,
};
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, OnceLock};

pub(super) struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// Device 0's compute capability times ten (90 for 9.0).
    capability: u32,
    /// The CUDA version the driver supports (13000 for 13.0).
    driver: i32,
    /// What kernels are compiled to, chosen at the first kernel (FFTs need no NVRTC).
    target: OnceLock<std::result::Result<KernelTarget, String>>,
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

/// Device memory: cudarc's slice, and the last read of it queued on each stream (its own
/// included). The slice remembers only its latest read, so memory read on stream A, then on B, then
/// dropped (or overwritten) would be freed (or written) once B's read is done, while A's kernel
/// may still read it. A write on a stream first waits for every other stream's recorded read
/// ([`note_write`]); the drop makes the memory's own stream wait for them before the free.
struct GpuMem {
    /// Dropped by hand, after the waits, in [`GpuMem`]'s drop.
    slice: ManuallyDrop<CudaSlice<u8>>,
    /// (the reading stream, kept alive so that its handle stays unique; an event recorded on it
    /// after its latest read).
    readers: Mutex<Vec<(Arc<CudaStream>, CudaEvent)>>,
}

impl GpuMem {
    fn buffer(slice: CudaSlice<u8>) -> Buffer {
        Buffer(Box::new(GpuMem {
            slice: ManuallyDrop::new(slice),
            readers: Mutex::new(Vec::new()),
        }))
    }
}

impl Drop for GpuMem {
    fn drop(&mut self) {
        let ctx = self.slice.stream().context().clone();
        // The waits bind the context, which takes (and would return) an error cudarc stored
        // earlier: set it aside, and store it again after the free.
        let stored = ctx.check_err();
        let readers = self.readers.get_mut().unwrap_or_else(|e| e.into_inner());
        let mut failed = Ok(());
        for (_, event) in readers.drain(..) {
            if let Err(e) = self.slice.stream().wait(&event) {
                failed = failed.and(Err(e));
            }
        }
        // SAFETY: dropped once, here; nothing uses the slice afterwards. Its own drop waits for
        // its latest read and write on its stream, then frees the memory there.
        unsafe { ManuallyDrop::drop(&mut self.slice) };
        ctx.record_err(failed);
        ctx.record_err(stored);
    }
}

fn mem(b: &Buffer) -> Result<&GpuMem> {
    b.0.downcast_ref()
        .ok_or_else(|| foreign("reading device memory"))
}

fn slice(b: &Buffer) -> Result<&CudaSlice<u8>> {
    Ok(&mem(b)?.slice)
}

fn slice_mut(b: &mut Buffer) -> Result<&mut CudaSlice<u8>> {
    b.0.downcast_mut::<GpuMem>()
        .map(|m| &mut *m.slice)
        .ok_or_else(|| foreign("writing device memory"))
}

fn readers(m: &GpuMem) -> std::sync::MutexGuard<'_, Vec<(Arc<CudaStream>, CudaEvent)>> {
    m.readers.lock().unwrap_or_else(|e| e.into_inner())
}

/// Notes that work just queued on `stream` reads `b`: an event on `stream` that `b`'s free
/// and later writes on other streams wait for (the latest one per stream; entries whose reads
/// are done are dropped). Reads on `b`'s own stream are noted too: cudarc's one read event per
/// buffer is re-recorded by the next read on any stream, so a later write on another stream
/// would otherwise wait only for that one.
fn note_read(b: &Buffer, stream: &Arc<CudaStream>) -> Result<()> {
    let m = mem(b)?;
    let recorded = |e| driver_error("recording a read of device memory", e);
    let mut readers = readers(m);
    readers.retain(|(s, event)| Arc::ptr_eq(s, stream) || !event.is_complete());
    match readers.iter_mut().find(|(s, _)| Arc::ptr_eq(s, stream)) {
        Some((_, event)) => event.record(stream).map_err(recorded),
        None => {
            let event = stream.record_event(None).map_err(recorded)?;
            readers.push((stream.clone(), event));
            Ok(())
        }
    }
}

/// Makes `stream`, about to write `b`, wait for the reads of `b` recorded on other streams
/// (cudarc's slice makes it wait only for the latest read). Those reads then come before this
/// write, which the slice's own write event covers: their entries are dropped.
fn note_write(b: &Buffer, stream: &Arc<CudaStream>) -> Result<()> {
    let m = mem(b)?;
    let mut readers = readers(m);
    for (s, event) in readers.iter() {
        if !Arc::ptr_eq(s, stream) && !event.is_complete() {
            stream
                .wait(event)
                .map_err(|e| driver_error("ordering a write after reads on other streams", e))?;
        }
    }
    readers.retain(|(s, _)| Arc::ptr_eq(s, stream));
    Ok(())
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
        let mut driver = 0;
        // SAFETY: writes one int; the driver library is loaded.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver) }
            .result()
            .map_err(|e| format!("cannot query the driver's CUDA version: {e:?}"))?;
        let stream = ctx.default_stream();
        Ok(Gpu {
            ctx,
            stream,
            capability: (major * 10 + minor) as u32,
            driver,
            target: OnceLock::new(),
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
        Ok(GpuMem::buffer(mem))
    }

    fn alloc(&self, s: &StreamHandle, bytes: usize) -> Result<Buffer> {
        // SAFETY: `u8` has no invalid bit patterns; callers write the memory before reading.
        let mem = unsafe { stream(s)?.alloc::<u8>(bytes.max(1)) }
            .map_err(|e| driver_error("allocating device memory", e))?;
        Ok(GpuMem::buffer(mem))
    }

    fn upload(&self, s: &StreamHandle, bytes: &[u8]) -> Result<Buffer> {
        // An empty operand still needs a valid device pointer.
        let bytes: &[u8] = if bytes.is_empty() { &[0u8] } else { bytes };
        let mem = stream(s)?
            .clone_htod(bytes)
            .map_err(|e| driver_error("copying to the device", e))?;
        Ok(GpuMem::buffer(mem))
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
        Ok(GpuMem::buffer(mem))
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
        let stream = stream(s)?;
        stream
            .memcpy_dtoh(&src.slice(range), dst)
            .map_err(|e| driver_error("copying from the device", e))?;
        // A copy into pageable memory is complete when it returns on today's drivers, which
        // the CUDA documentation no longer promises: waiting costs nothing when it is.
        stream
            .synchronize()
            .map_err(|e| driver_error("waiting for a copy from the device", e))
    }

    fn copy(&self, s: &StreamHandle, src: &Buffer, dst: &mut Buffer) -> Result<()> {
        let stream = stream(s)?;
        note_write(dst, stream)?;
        stream
            .memcpy_dtod(slice(src)?, slice_mut(dst)?)
            .map_err(|e| driver_error("copying on the device", e))?;
        note_read(src, stream)
    }

    fn load(&self, kernel: &CudaKernel, source: &str) -> Result<ModuleHandle> {
        if !nvrtc_available() {
            return Err(Error::NvrtcUnavailable);
        }
        let target = self
            .target
            .get_or_init(|| {
                kernel_target(
                    self.capability,
                    self.driver,
                    nvrtc_version(),
                    &supported_archs(),
                )
            })
            .as_ref()
            .map_err(|reason| Error::KernelTarget {
                reason: reason.clone(),
            })?;
        let image = cached_image(source, &target.arch, target.output, &options(kernel))?;
        let image = match target.output {
            NvrtcOutput::Cubin => cudarc::nvrtc::Ptx::from_binary(image),
            NvrtcOutput::Ptx => {
                cudarc::nvrtc::Ptx::from_src(String::from_utf8_lossy(&image).into_owned())
            }
        };
        let module = self
            .ctx
            .load_module(image)
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
        for arg in args.iter() {
            if let Arg::Out(b) = arg {
                note_write(b, stream)?;
            }
        }
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
        for arg in args.iter() {
            if let Arg::In(b, _) = arg {
                note_read(b, stream)?;
            }
        }
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
        let source = input.map(|(b, _)| b);
        note_write(output.0, stream(s)?)?;
        let input = match input {
            Some((b, offset)) => Some((slice(b)?, offset)),
            None => None,
        };
        let output = (slice_mut(output.0)?, output.1);
        // cuFFT runs in the thread's current context: this thread may not have used CUDA yet.
        self.ctx
            .bind_to_thread()
            .map_err(|e| driver_error("binding the CUDA context for an FFT", e))?;
        cufft::exec(stream(s)?, plan, input, output, inverse)?;
        match source {
            Some(b) => note_read(b, stream(s)?),
            None => Ok(()),
        }
    }

    fn synchronize(&self, s: &StreamHandle) -> Result<()> {
        stream(s)?
            .synchronize()
            .map_err(|e| driver_error("running the queued kernels", e))
    }

    fn memory(&self) -> Result<DeviceMemory> {
        // Memory freed into the stream-ordered pools goes back to the device at a
        // synchronisation (their release threshold is 0): counted as free after one.
        self.ctx
            .synchronize()
            .map_err(|e| driver_error("waiting for the device before querying its memory", e))?;
        let (free, total) = self
            .ctx
            .mem_get_info()
            .map_err(|e| driver_error("querying the device's memory", e))?;
        Ok(DeviceMemory { free, total })
    }
}
