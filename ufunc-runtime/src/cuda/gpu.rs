//! The real device: one CUDA context on device 0, cubins loaded as modules, launches on a
//! stream. Everything that calls cudarc lives here.

use super::cache::{cached_cubin, options};
use super::launch::{mixed_buffers, Arg, LaunchShape, Mem};
use super::CudaKernel;
use crate::error::{Error, Result};
use cudarc::driver::{
    CudaContext, CudaModule, CudaStream, DriverError, LaunchConfig, PushKernelArg,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub(crate) struct Gpu {
    ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    /// `sm_XY` of device 0.
    arch: String,
    multiprocessors: u32,
    /// Loaded modules, by source function and fast-math flag.
    modules: Mutex<HashMap<(usize, bool), Arc<CudaModule>>>,
}

pub(crate) fn driver_error(function: &str, what: &str, e: DriverError) -> Error {
    Error::Cuda {
        what: format!("{what} for `{function}`: {e:?}"),
    }
}

impl Gpu {
    /// Device 0, or why there is none. Checks for the driver library before any cudarc call
    /// that would panic without it.
    pub(crate) fn open() -> std::result::Result<Gpu, String> {
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
            modules: Mutex::new(HashMap::new()),
        })
    }

    /// A new stream of this context.
    pub(crate) fn new_stream(&self) -> std::result::Result<Arc<CudaStream>, DriverError> {
        self.ctx.new_stream()
    }

    /// The module for `kernel`: from memory, from the disk cache, or compiled with NVRTC. In
    /// memory, a kernel is known by its source function, so a call that finds its module builds
    /// no source string.
    pub(crate) fn module(&self, kernel: &CudaKernel) -> Result<Arc<CudaModule>> {
        let key = (kernel.source as usize, kernel.fast_math);
        let mut modules = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = modules.get(&key) {
            return Ok(m.clone());
        }
        let cubin = cached_cubin(&(kernel.source)(), &self.arch, &options(kernel))?;
        let module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
            .map_err(|e| Error::Cuda {
                what: format!("loading the module of `{}`: {e:?}", kernel.name),
            })?;
        modules.insert(key, module.clone());
        Ok(module)
    }

    /// Queues `entry` of `module` on `stream` over `launch.items` grid-stride items.
    pub(crate) fn launch(
        &self,
        stream: &Arc<CudaStream>,
        function: &str,
        module: &Arc<CudaModule>,
        entry: &str,
        launch: LaunchShape,
        args: &mut [Arg<'_>],
    ) -> Result<()> {
        let func = module
            .load_function(entry)
            .map_err(|e| driver_error(function, &format!("finding kernel {entry}"), e))?;
        let blocks = (launch.items.div_ceil(launch.threads as usize) as u32)
            .clamp(1, self.multiprocessors * 32);
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (launch.threads, 1, 1),
            shared_mem_bytes: 0,
        };
        // Views of offset inputs must outlive the builder that borrows them.
        let views: Vec<Option<cudarc::driver::CudaView<'_, u8>>> = args
            .iter()
            .map(|a| match a {
                Arg::In(Mem::Gpu(s), offset) if *offset > 0 => Some(s.slice(*offset..)),
                _ => None,
            })
            .collect();
        let mut builder = stream.launch_builder(&func);
        for (arg, view) in args.iter_mut().zip(&views) {
            match arg {
                Arg::I64(v) => builder.arg(&*v),
                Arg::I32(v) => builder.arg(&*v),
                Arg::In(Mem::Gpu(s), _) => match view {
                    Some(view) => builder.arg(view),
                    None => builder.arg(s),
                },
                Arg::Out(Mem::Gpu(s)) => builder.arg(s),
                _ => return Err(mixed_buffers(function)),
            };
        }
        // SAFETY: the callers build `args` from the kernel's C++ signature (see `launch.rs`):
        // 64-bit counts and 32-bit ranks by value, device pointers to buffers of the operand
        // types that cover every offset the shapes and strides reach.
        unsafe { builder.launch(cfg) }.map_err(|e| driver_error(function, "launching", e))?;
        Ok(())
    }

    /// Reads and clears the module's panic flag.
    pub(crate) fn take_status(
        &self,
        stream: &Arc<CudaStream>,
        function: &str,
        module: &Arc<CudaModule>,
    ) -> Result<i32> {
        let mut status = module
            .get_global("__ufunc_status", stream)
            .map_err(|e| driver_error(function, "finding the panic flag", e))?;
        let bytes = stream
            .clone_dtoh(&status)
            .map_err(|e| driver_error(function, "reading the panic flag", e))?;
        let code = i32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        if code != 0 {
            stream
                .memcpy_htod(&[0u8; 4], &mut status)
                .map_err(|e| driver_error(function, "clearing the panic flag", e))?;
        }
        Ok(code)
    }
}
