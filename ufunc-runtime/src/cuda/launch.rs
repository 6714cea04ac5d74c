//! Running a translated body on the GPU: the device (one context, its default stream), kernels
//! compiled once per (source, architecture, options) and cached in memory and on disk, host
//! operands copied in and results copied out (each transfer counted), launch, panic check.

use super::nvrtc::{compile, NvrtcOutput};
use super::CudaKernel;
use crate::error::{Error, Result};
use crate::operand::{RawOperand, RawOutOperand};
use crate::shape::{broadcast_strides, c_strides, element_count};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub(crate) static HOST_TO_DEVICE: AtomicUsize = AtomicUsize::new(0);
pub(crate) static DEVICE_TO_HOST: AtomicUsize = AtomicUsize::new(0);
static NVRTC_COMPILES: AtomicUsize = AtomicUsize::new(0);

/// Counts of what the `cuda` target did in this process, for tests and diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CudaCounters {
    /// Host-to-device copies.
    pub host_to_device: usize,
    /// Device-to-host copies.
    pub device_to_host: usize,
    /// NVRTC compilations (cache misses in memory and on disk).
    pub nvrtc_compiles: usize,
}

/// The counters so far.
///
/// ```
/// let c = ufunc_runtime::cuda_counters();
/// assert!(c.host_to_device >= c.nvrtc_compiles.min(c.host_to_device));
/// ```
pub fn cuda_counters() -> CudaCounters {
    CudaCounters {
        host_to_device: HOST_TO_DEVICE.load(Ordering::Relaxed),
        device_to_host: DEVICE_TO_HOST.load(Ordering::Relaxed),
        nvrtc_compiles: NVRTC_COMPILES.load(Ordering::Relaxed),
    }
}

pub(crate) struct Device {
    ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    /// `sm_XY` of device 0.
    arch: String,
    multiprocessors: u32,
    /// Loaded modules, by source function and fast-math flag.
    modules: Mutex<HashMap<(usize, bool), Arc<CudaModule>>>,
}

/// Device 0, or why there is none. Checked before any cudarc call that would panic.
pub(crate) fn device() -> Result<&'static Device> {
    static DEVICE: OnceLock<std::result::Result<Device, String>> = OnceLock::new();
    DEVICE
        .get_or_init(|| {
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
            Ok(Device {
                ctx,
                stream,
                arch: format!("sm_{major}{minor}"),
                multiprocessors,
                modules: Mutex::new(HashMap::new()),
            })
        })
        .as_ref()
        .map_err(|reason| Error::NoCudaDevice {
            reason: reason.clone(),
        })
}

/// The NVRTC options a kernel is compiled with.
fn options(kernel: &CudaKernel) -> Vec<&'static str> {
    if kernel.fast_math {
        vec!["--use_fast_math"]
    } else {
        vec!["--fmad=false"]
    }
}

/// Where compiled kernels are kept between processes: `UFUNC_CACHE_DIR`, else the platform
/// cache directory (`$XDG_CACHE_HOME` or `~/.cache`) under `ufunc/kernels`.
///
/// ```
/// if let Some(dir) = ufunc_runtime::kernel_cache_dir() {
///     println!("compiled kernels are cached in {}", dir.display());
/// }
/// ```
pub fn kernel_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("UFUNC_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("ufunc").join("kernels"))
}

impl Device {
    /// A launch of `threads`-wide blocks for a grid-stride loop over `total` items: enough
    /// blocks to cover them, at most 32 per multiprocessor.
    fn grid_stride_config(&self, total: usize, threads: u32) -> LaunchConfig {
        let blocks = (total.div_ceil(threads as usize) as u32).clamp(1, self.multiprocessors * 32);
        LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// The module for `kernel`: from memory, from the disk cache, or compiled with NVRTC. In
    /// memory, a kernel is known by its source function, so a call that finds its module builds
    /// no source string.
    fn module(&self, kernel: &CudaKernel) -> Result<Arc<CudaModule>> {
        let key = (kernel.source as usize, kernel.fast_math);
        if let Some(m) = self
            .modules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(m.clone());
        }
        let source = (kernel.source)();
        let opts = options(kernel);
        let cubin = cached_cubin(&source, &self.arch, &opts)?;
        let module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
            .map_err(|e| Error::Cuda {
                what: format!("loading the module of `{}`: {e:?}", kernel.name),
            })?;
        self.modules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, module.clone());
        Ok(module)
    }
}

/// The cache key of a compilation: source, architecture, NVRTC version and options.
fn cache_key(source: &str, arch: &str, opts: &[&str]) -> u64 {
    let mut h = DefaultHasher::new();
    (source, arch, opts, nvrtc_version()).hash(&mut h);
    h.finish()
}

/// The cubin of `source` for `arch` with `opts`: read from the disk cache
/// ([`kernel_cache_dir`]), or compiled with NVRTC and stored there for later processes.
///
/// ```
/// use ufunc_runtime::{cached_cubin, nvrtc_available};
/// if nvrtc_available() {
///     let src = r#"extern "C" __global__ void k(float* x) { x[0] = 1.0f; }"#;
///     let cubin = cached_cubin(src, "sm_90", &[]).unwrap();
///     assert!(cubin.starts_with(b"\x7fELF"));
/// }
/// ```
pub fn cached_cubin(source: &str, arch: &str, opts: &[&str]) -> Result<Vec<u8>> {
    let key = cache_key(source, arch, opts);
    let file = kernel_cache_dir().map(|d| d.join(format!("{key:016x}.cubin")));
    if let Some(bytes) = file.as_ref().and_then(|f| std::fs::read(f).ok()) {
        return Ok(bytes);
    }
    NVRTC_COMPILES.fetch_add(1, Ordering::Relaxed);
    let compiled = compile(source, arch, opts, NvrtcOutput::Cubin)?;
    if let Some(f) = &file {
        store_atomically(f, &compiled.image);
    }
    Ok(compiled.image)
}

fn nvrtc_version() -> (i32, i32) {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: writes two ints; NVRTC was found before any compile is attempted.
    if super::nvrtc::nvrtc_available() {
        unsafe {
            let _ = cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor);
        }
    }
    (major, minor)
}

/// Writes `bytes` to `path` through a temporary file and a rename, so that concurrent
/// processes never read a partial file. Failures only cost a later recompile.
fn store_atomically(path: &std::path::Path, bytes: &[u8]) {
    let Some(dir) = path.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let unique = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{}.{unique}.tmp", std::process::id()));
    if std::fs::write(&tmp, bytes).is_ok() && std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Whether strides describe a C-contiguous block (size-1 axes may have any stride).
fn is_c_contiguous(shape: &[usize], strides: &[isize]) -> bool {
    c_strides(shape)
        .iter()
        .zip(strides)
        .zip(shape)
        .all(|((&c, &s), &n)| n <= 1 || c == s)
}

/// An operand's own elements in C order: borrowed when already laid out so, else gathered.
fn host_bytes<'a>(
    ptr: *const u8,
    shape: &[usize],
    strides: &[isize],
    size: usize,
) -> std::borrow::Cow<'a, [u8]> {
    let n: usize = shape.iter().product();
    if is_c_contiguous(shape, strides) {
        // SAFETY: a C-contiguous operand of `n` elements of `size` bytes starts at `ptr`.
        return std::borrow::Cow::Borrowed(unsafe { std::slice::from_raw_parts(ptr, n * size) });
    }
    std::borrow::Cow::Owned(gather_c_order(ptr, shape, strides, size))
}

/// Copies an operand's own elements, in C order, into a contiguous byte buffer.
fn gather_c_order(ptr: *const u8, shape: &[usize], strides: &[isize], size: usize) -> Vec<u8> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n * size);
    let mut idx = vec![0usize; shape.len()];
    for _ in 0..n {
        let off: isize = idx.iter().zip(strides).map(|(&i, &s)| i as isize * s).sum();
        // SAFETY: `idx` stays inside `shape`, whose strides address the operand's elements.
        let src = unsafe { std::slice::from_raw_parts(ptr.offset(off * size as isize), size) };
        out.extend_from_slice(src);
        for a in (0..shape.len()).rev() {
            idx[a] += 1;
            if idx[a] < shape[a] {
                break;
            }
            idx[a] = 0;
        }
    }
    out
}

/// The inverse of [`gather_c_order`], into an output of any strides.
fn scatter_c_order(bytes: &[u8], ptr: *mut u8, shape: &[usize], strides: &[isize], size: usize) {
    if is_c_contiguous(shape, strides) {
        // SAFETY: the output is C-contiguous with exactly `bytes.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, bytes.len()) };
        return;
    }
    let mut idx = vec![0usize; shape.len()];
    for chunk in bytes.chunks_exact(size) {
        let off: isize = idx.iter().zip(strides).map(|(&i, &s)| i as isize * s).sum();
        // SAFETY: as in `gather_c_order`, for the caller's mutable output.
        unsafe {
            std::ptr::copy_nonoverlapping(chunk.as_ptr(), ptr.offset(off * size as isize), size)
        };
        for a in (0..shape.len()).rev() {
            idx[a] += 1;
            if idx[a] < shape[a] {
                break;
            }
            idx[a] = 0;
        }
    }
}

/// Runs `kernel` over the broadcast `shape`: host inputs are copied in (their own elements,
/// broadcast on the device through stride-0 strides), outputs copied out.
pub(crate) fn execute(
    function: &'static str,
    kernel: &CudaKernel,
    ins: &[RawOperand<'_>],
    in_sizes: &[usize],
    outs: &[RawOutOperand<'_>],
    out_sizes: &[usize],
    shape: &[usize],
) -> Result<()> {
    let total = element_count(shape)?;
    if total == 0 {
        return Ok(());
    }
    let dev = device()?;
    let in_bufs = ins
        .iter()
        .zip(in_sizes)
        .map(|(op, &size)| upload(dev, function, op, size))
        .collect::<Result<Vec<_>>>()?;
    let mut out_bufs = out_sizes
        .iter()
        .map(|&size| alloc_zeroed(dev, function, total * size))
        .collect::<Result<Vec<_>>>()?;
    let inputs: Vec<(&CudaSlice<u8>, &[usize])> = in_bufs
        .iter()
        .zip(ins)
        .map(|(b, op)| (b, op.shape))
        .collect();
    let mut outputs: Vec<&mut CudaSlice<u8>> = out_bufs.iter_mut().collect();
    launch_elementwise(dev, function, kernel, &inputs, &mut outputs, shape)?;
    for ((op, buf), &size) in outs.iter().zip(&out_bufs).zip(out_sizes) {
        DEVICE_TO_HOST.fetch_add(1, Ordering::Relaxed);
        let bytes = dev
            .stream
            .clone_dtoh(buf)
            .map_err(|e| driver_error(function, "copying an output back", e))?;
        scatter_c_order(&bytes, op.ptr, op.shape, op.strides, size);
    }
    Ok(())
}

pub(crate) fn driver_error(function: &str, what: &str, e: cudarc::driver::DriverError) -> Error {
    Error::Cuda {
        what: format!("{what} for `{function}`: {e:?}"),
    }
}

/// A host operand's own elements, copied to a new device buffer (one transfer).
pub(crate) fn upload(
    dev: &Device,
    function: &str,
    op: &RawOperand<'_>,
    size: usize,
) -> Result<CudaSlice<u8>> {
    let bytes = host_bytes(op.ptr, op.shape, op.strides, size);
    HOST_TO_DEVICE.fetch_add(1, Ordering::Relaxed);
    // An empty operand still needs a valid device pointer.
    let bytes: &[u8] = if bytes.is_empty() { &[0u8] } else { &bytes };
    dev.stream
        .clone_htod(bytes)
        .map_err(|e| driver_error(function, "copying an input", e))
}

/// A zeroed device buffer of `bytes` bytes (at least one, so that it has an address).
pub(crate) fn alloc_zeroed(dev: &Device, function: &str, bytes: usize) -> Result<CudaSlice<u8>> {
    dev.stream
        .alloc_zeros::<u8>(bytes.max(1))
        .map_err(|e| driver_error(function, "allocating an output", e))
}

/// Launches the contiguous or strided kernel of `kernel` on device buffers: inputs of their own
/// shapes in C order (broadcast through stride-0 strides), outputs of the full `shape` in C
/// order; waits, and turns a raised panic flag into an error.
pub(crate) fn launch_elementwise(
    dev: &Device,
    function: &'static str,
    kernel: &CudaKernel,
    ins: &[(&CudaSlice<u8>, &[usize])],
    outs: &mut [&mut CudaSlice<u8>],
    shape: &[usize],
) -> Result<()> {
    let total = element_count(shape)?;
    if total == 0 {
        return Ok(());
    }
    let module = dev.module(kernel)?;
    let stream = &dev.stream;
    let err = |what: &str, e| driver_error(function, what, e);
    let n = total as i64;
    let cfg = dev.grid_stride_config(total, 256);
    let load = |name: String| -> Result<CudaFunction> {
        module
            .load_function(&name)
            .map_err(|e| err(&format!("finding kernel {name}"), e))
    };
    if ins.iter().all(|(_, s)| *s == shape) {
        let func = load(format!("{}_contig", kernel.name))?;
        let mut launch = stream.launch_builder(&func);
        launch.arg(&n);
        for (b, _) in ins {
            launch.arg(*b);
        }
        for b in outs.iter_mut() {
            launch.arg(&mut **b);
        }
        // SAFETY: the arguments match the kernel's signature: n, then one pointer per operand
        // to `total` elements of its type.
        unsafe { launch.launch(cfg) }.map_err(|e| err("launching", e))?;
    } else {
        let ndim = shape.len() as i32;
        let shape_i64: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let mut strides_i64: Vec<i64> = Vec::with_capacity((ins.len() + outs.len()) * shape.len());
        for (_, own_shape) in ins {
            let own = c_strides(own_shape);
            let b = broadcast_strides(shape, own_shape, &own);
            strides_i64.extend(b.iter().map(|&s| s as i64));
        }
        for _ in outs.iter() {
            strides_i64.extend(c_strides(shape).iter().map(|&s| s as i64));
        }
        HOST_TO_DEVICE.fetch_add(2, Ordering::Relaxed);
        let shape_buf = stream
            .clone_htod(&shape_i64)
            .map_err(|e| err("copying the shape", e))?;
        let strides_buf = stream
            .clone_htod(&strides_i64)
            .map_err(|e| err("copying the strides", e))?;
        let func = load(format!("{}_strided", kernel.name))?;
        let mut launch = stream.launch_builder(&func);
        launch.arg(&n).arg(&ndim).arg(&shape_buf).arg(&strides_buf);
        for (b, _) in ins {
            launch.arg(*b);
        }
        for b in outs.iter_mut() {
            launch.arg(&mut **b);
        }
        // SAFETY: as above, plus the shape and per-operand strides of `ndim` dimensions.
        unsafe { launch.launch(cfg) }.map_err(|e| err("launching", e))?;
    }
    stream.synchronize().map_err(|e| err("running", e))?;
    check_status(function, &module, stream)
}

/// Runs a gufunc kernel over the loop items of `binding`: every operand (outputs too, which the
/// core may read) is copied to the device in C order, then the outputs are copied back.
#[allow(clippy::too_many_arguments)]
pub(crate) fn execute_gufunc(
    function: &'static str,
    kernel: &CudaKernel,
    ins: &[RawOperand<'_>],
    in_sizes: &[usize],
    outs: &[RawOutOperand<'_>],
    out_sizes: &[usize],
    binding: &crate::gufunc::CoreBinding,
) -> Result<()> {
    let total = element_count(&binding.loop_shape)?;
    if total == 0 {
        return Ok(());
    }
    let dev = device()?;
    let module = dev.module(kernel)?;
    let cuda_err = |what: &str, e: cudarc::driver::DriverError| Error::Cuda {
        what: format!("{what} for `{function}`: {e:?}"),
    };
    let stream = &dev.stream;
    let operands: Vec<(*const u8, &[usize], &[isize], usize)> = ins
        .iter()
        .zip(in_sizes)
        .map(|(op, &size)| (op.ptr, op.shape, op.strides, size))
        .chain(
            outs.iter()
                .zip(out_sizes)
                .map(|(op, &size)| (op.ptr as *const u8, op.shape, op.strides, size)),
        )
        .collect();
    let loop_ndim = binding.loop_shape.len();
    let (mut loop_strides, mut core_shapes, mut core_strides) =
        (Vec::new(), Vec::new(), Vec::new());
    let mut bufs = Vec::with_capacity(operands.len());
    for (k, &(ptr, shape, strides, size)) in operands.iter().enumerate() {
        let own = c_strides(shape);
        let n_core = binding.core_axes[k].iter().filter(|a| a.is_some()).count();
        let n_loop = shape.len() - n_core;
        let ls = broadcast_strides(&binding.loop_shape, &shape[..n_loop], &own[..n_loop]);
        loop_strides.extend(ls.iter().map(|&s| s as i64));
        core_shapes.extend(binding.core_shapes[k].iter().map(|&n| n as i64));
        core_strides.extend(
            binding.core_axes[k]
                .iter()
                .map(|a| a.map_or(0, |a| own[a] as i64)),
        );
        let bytes = host_bytes(ptr, shape, strides, size);
        HOST_TO_DEVICE.fetch_add(1, Ordering::Relaxed);
        // An empty operand still needs a valid device pointer.
        let upload: &[u8] = if bytes.is_empty() { &[0u8] } else { &bytes };
        bufs.push(
            stream
                .clone_htod(upload)
                .map_err(|e| cuda_err("copying an operand", e))?,
        );
    }
    let as_i64 = |v: &[i64]| if v.is_empty() { vec![0i64] } else { v.to_vec() };
    HOST_TO_DEVICE.fetch_add(4, Ordering::Relaxed);
    let loop_shape: Vec<i64> = binding.loop_shape.iter().map(|&n| n as i64).collect();
    let loop_shape_buf = stream
        .clone_htod(&as_i64(&loop_shape))
        .map_err(|e| cuda_err("copying the loop shape", e))?;
    let loop_strides_buf = stream
        .clone_htod(&as_i64(&loop_strides))
        .map_err(|e| cuda_err("copying the loop strides", e))?;
    let core_shapes_buf = stream
        .clone_htod(&as_i64(&core_shapes))
        .map_err(|e| cuda_err("copying the core shapes", e))?;
    let core_strides_buf = stream
        .clone_htod(&as_i64(&core_strides))
        .map_err(|e| cuda_err("copying the core strides", e))?;
    let func = module
        .load_function(&format!("{}_gufunc", kernel.name))
        .map_err(|e| cuda_err("finding the gufunc kernel", e))?;
    let n = total as i64;
    let nd = loop_ndim as i32;
    let cfg = dev.grid_stride_config(total, 128);
    let mut launch = stream.launch_builder(&func);
    launch
        .arg(&n)
        .arg(&nd)
        .arg(&loop_shape_buf)
        .arg(&loop_strides_buf)
        .arg(&core_shapes_buf)
        .arg(&core_strides_buf);
    for b in &mut bufs {
        launch.arg(b);
    }
    // SAFETY: the arguments follow `<name>_gufunc`'s signature; strides and shapes come from the
    // binding of these very operands.
    unsafe { launch.launch(cfg) }.map_err(|e| cuda_err("launching", e))?;
    stream.synchronize().map_err(|e| cuda_err("running", e))?;
    check_status(function, &module, stream)?;
    for (op, (buf, &size)) in outs.iter().zip(bufs[ins.len()..].iter().zip(out_sizes)) {
        if op.shape.iter().product::<usize>() == 0 {
            continue;
        }
        DEVICE_TO_HOST.fetch_add(1, Ordering::Relaxed);
        let bytes = stream
            .clone_dtoh(buf)
            .map_err(|e| cuda_err("copying an output back", e))?;
        scatter_c_order(&bytes, op.ptr, op.shape, op.strides, size);
    }
    Ok(())
}

/// Reads and clears the module's panic flag: a body that panicked is an `Err`.
fn check_status(
    function: &'static str,
    module: &Arc<CudaModule>,
    stream: &Arc<CudaStream>,
) -> Result<()> {
    let mut status = module
        .get_global("__ufunc_status", stream)
        .map_err(|e| Error::Cuda {
            what: format!("reading the panic flag of `{function}`: {e:?}"),
        })?;
    let bytes = stream.clone_dtoh(&status).map_err(|e| Error::Cuda {
        what: format!("reading the panic flag of `{function}`: {e:?}"),
    })?;
    let code = i32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    if code == 0 {
        return Ok(());
    }
    let _ = stream.memcpy_htod(&[0u8; 4], &mut status);
    let message = match code {
        1 => "attempt to divide by zero",
        2 => "attempt to divide with overflow",
        3 => "explicit panic",
        5 => "index out of bounds",
        _ => "entered unreachable code",
    };
    Err(Error::KernelPanic {
        function,
        message: message.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gather_and_scatter_follow_strides() {
        // A (2,3) i32 array seen transposed: shape (3,2), strides (1,3).
        let data: Vec<i32> = (0..6).collect();
        let bytes = host_bytes(data.as_ptr() as *const u8, &[3, 2], &[1, 3], 4);
        let got: Vec<i32> = bytes
            .chunks_exact(4)
            .map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(got, vec![0, 3, 1, 4, 2, 5]);
        assert!(matches!(
            host_bytes(data.as_ptr() as *const u8, &[2, 3], &[3, 1], 4),
            std::borrow::Cow::Borrowed(_)
        ));
        let mut out = vec![0i32; 6];
        scatter_c_order(&bytes, out.as_mut_ptr() as *mut u8, &[3, 2], &[1, 3], 4);
        assert_eq!(out, data);
        // Negative strides: the reversed vector.
        let rev = host_bytes(
            unsafe { (data.as_ptr() as *const u8).add(20) },
            &[6],
            &[-1],
            4,
        );
        assert_eq!(&rev[..4], &5i32.to_ne_bytes());
    }
}
