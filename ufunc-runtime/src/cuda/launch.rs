//! Running a translated body: the device (the GPU, or the host simulator with
//! `UFUNC_CUDA_SIM=1`), queues of work (a stream each), device memory, host operands copied in
//! and results copied out (each transfer counted), launches, and the panic check.

use super::cache::COMPILES;
use super::gpu::{driver_error, Gpu};
use super::sim::{Sim, SimBuffer, SimModule};
use super::CudaKernel;
use crate::error::{Error, Result};
use crate::operand::{RawOperand, RawOutOperand};
use crate::shape::{broadcast_strides, c_strides, element_count};
use cudarc::driver::{CudaModule, CudaSlice, CudaStream};
use smallvec::SmallVec;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub(crate) static HOST_TO_DEVICE: AtomicUsize = AtomicUsize::new(0);
pub(crate) static DEVICE_TO_HOST: AtomicUsize = AtomicUsize::new(0);

/// Counts of what the `cuda` target did in this process, for tests and diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CudaCounters {
    /// Host-to-device copies of operand data (shapes and strides passed to a launch are not
    /// counted).
    pub host_to_device: usize,
    /// Device-to-host copies.
    pub device_to_host: usize,
    /// Kernel compilations: NVRTC (or, under the simulator, the host C++ compiler) runs that
    /// neither the in-memory nor the disk cache could spare.
    pub compiles: usize,
}

/// The counters so far.
///
/// ```
/// let c = ufunc_runtime::cuda_counters();
/// assert!(c.host_to_device >= c.compiles.min(c.host_to_device));
/// ```
pub fn cuda_counters() -> CudaCounters {
    CudaCounters {
        host_to_device: HOST_TO_DEVICE.load(Ordering::Relaxed),
        device_to_host: DEVICE_TO_HOST.load(Ordering::Relaxed),
        compiles: COMPILES.load(Ordering::Relaxed),
    }
}

/// Whether the `cuda` target runs on the host simulator: `UFUNC_CUDA_SIM=1`, read once. The
/// simulator compiles the same generated CUDA C++ with the host's C++ compiler (`CXX`, else
/// `c++`) and runs every kernel's threads one after another on the CPU, with device memory in
/// host memory: for debugging and testing where there is no GPU, as Numba's `NUMBA_ENABLE_CUDASIM`.
///
/// ```
/// if ufunc_runtime::cuda_simulated() {
///     println!("cuda calls run on the host simulator");
/// }
/// ```
pub fn cuda_simulated() -> bool {
    static SIM: OnceLock<bool> = OnceLock::new();
    *SIM.get_or_init(|| std::env::var("UFUNC_CUDA_SIM").is_ok_and(|v| v == "1"))
}

/// Bytes of device memory (host memory under the simulator).
pub struct DeviceBuffer(pub(crate) Mem);

pub(crate) enum Mem {
    Gpu(CudaSlice<u8>),
    Sim(SimBuffer),
}

/// A kernel argument, in the order of the kernel's C++ parameters.
pub(crate) enum Arg<'a> {
    I64(i64),
    I32(i32),
    /// A read-only operand: its buffer and the byte offset of its first element.
    In(&'a Mem, usize),
    Out(&'a mut Mem),
}

/// The extent of a grid-stride launch: `items` loop items, blocks of `threads`.
#[derive(Clone, Copy)]
pub(crate) struct LaunchShape {
    pub items: usize,
    pub threads: u32,
}

/// A loaded module: the compiled kernels of one source.
#[derive(Clone)]
pub(crate) enum Module {
    Gpu(Arc<CudaModule>),
    Sim(Arc<SimModule>),
}

impl Module {
    fn same(&self, other: &Module) -> bool {
        match (self, other) {
            (Module::Gpu(a), Module::Gpu(b)) => Arc::ptr_eq(a, b),
            (Module::Sim(a), Module::Sim(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

pub(crate) fn mixed_buffers(function: &str) -> Error {
    Error::Cuda {
        what: format!("launching `{function}`: GPU and simulator memory mixed in one call"),
    }
}

enum Backend {
    Gpu(Gpu),
    Sim(Sim),
}

/// Where work is queued: a CUDA stream (nothing under the simulator, which runs each launch
/// at once), and whether each call waits for its kernels.
pub(crate) struct Queue {
    stream: Option<Arc<CudaStream>>,
    /// `None`: every call waits and reports its panics. `Some`: launches return at once and
    /// their modules wait here until `synchronize` reads their panic flags.
    deferred: Option<Mutex<Vec<(&'static str, Module)>>>,
}

pub(crate) struct Device {
    backend: Backend,
    /// The default queue, which waits for every call.
    pub(crate) queue: Queue,
}

/// The device, or why there is none. Checked before any cudarc call that would panic.
pub(crate) fn device() -> Result<&'static Device> {
    static DEVICE: OnceLock<std::result::Result<Device, String>> = OnceLock::new();
    DEVICE
        .get_or_init(|| {
            if cuda_simulated() {
                return Ok(Device {
                    backend: Backend::Sim(Sim::default()),
                    queue: Queue {
                        stream: None,
                        deferred: None,
                    },
                });
            }
            let gpu = Gpu::open()?;
            let queue = Queue {
                stream: Some(gpu.stream.clone()),
                deferred: None,
            };
            Ok(Device {
                backend: Backend::Gpu(gpu),
                queue,
            })
        })
        .as_ref()
        .map_err(|reason| Error::NoCudaDevice {
            reason: reason.clone(),
        })
}

impl Queue {
    fn stream(&self, function: &str) -> Result<&Arc<CudaStream>> {
        self.stream.as_ref().ok_or_else(|| mixed_buffers(function))
    }

    /// Copies `bytes` to new device memory (one counted transfer).
    pub(crate) fn upload(&self, function: &str, what: &str, bytes: &[u8]) -> Result<Mem> {
        HOST_TO_DEVICE.fetch_add(1, Ordering::Relaxed);
        self.upload_uncounted(function, what, bytes)
    }

    /// Copies `bytes` to new device memory: launch parameters, not counted as data transfers.
    fn upload_uncounted(&self, function: &str, what: &str, bytes: &[u8]) -> Result<Mem> {
        // An empty operand still needs a valid device pointer.
        let bytes: &[u8] = if bytes.is_empty() { &[0u8] } else { bytes };
        match &self.stream {
            Some(s) => s
                .clone_htod(bytes)
                .map(Mem::Gpu)
                .map_err(|e| driver_error(function, what, e)),
            None => Ok(Mem::Sim(SimBuffer::from_bytes(bytes))),
        }
    }

    /// Copies shapes or strides to the device (uncounted: the counters are for operand data).
    fn upload_i64(&self, function: &str, what: &str, values: &[i64]) -> Result<Mem> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        self.upload_uncounted(function, what, &bytes)
    }

    /// Zeroed device memory of `bytes` bytes (at least one, so that it has an address).
    pub(crate) fn alloc_zeroed(&self, function: &str, bytes: usize) -> Result<Mem> {
        match &self.stream {
            Some(s) => s
                .alloc_zeros::<u8>(bytes.max(1))
                .map(Mem::Gpu)
                .map_err(|e| driver_error(function, "allocating device memory", e)),
            None => Ok(Mem::Sim(SimBuffer::zeroed(bytes.max(1)))),
        }
    }

    /// Copies `src` over `dst` on the device (a device-to-device copy, not counted as a transfer).
    pub(crate) fn copy_within(&self, function: &str, src: &Mem, dst: &mut Mem) -> Result<()> {
        match (src, dst) {
            (Mem::Gpu(s), Mem::Gpu(d)) => self
                .stream(function)?
                .memcpy_dtod(s, d)
                .map_err(|e| driver_error(function, "copying on the device", e)),
            (Mem::Sim(s), Mem::Sim(d)) => {
                d.bytes_mut().copy_from_slice(s.bytes());
                Ok(())
            }
            _ => Err(mixed_buffers(function)),
        }
    }

    /// Copies device memory back to the host (one counted transfer), after the work queued
    /// before it.
    pub(crate) fn download(&self, function: &str, what: &str, mem: &Mem) -> Result<Vec<u8>> {
        DEVICE_TO_HOST.fetch_add(1, Ordering::Relaxed);
        match mem {
            Mem::Gpu(s) => self
                .stream(function)?
                .clone_dtoh(s)
                .map_err(|e| driver_error(function, what, e)),
            Mem::Sim(b) => Ok(b.bytes().to_vec()),
        }
    }
}

impl Device {
    /// The module of `kernel`, compiled or found in a cache.
    fn module(&self, kernel: &CudaKernel) -> Result<Module> {
        match &self.backend {
            Backend::Gpu(g) => g.module(kernel).map(Module::Gpu),
            Backend::Sim(s) => s.module(kernel).map(Module::Sim),
        }
    }

    /// Launches `entry` of `kernel` on `queue`; on a waiting queue, waits and reports a panic.
    fn run(
        &self,
        queue: &Queue,
        function: &'static str,
        kernel: &CudaKernel,
        entry: &str,
        launch: LaunchShape,
        args: &mut [Arg<'_>],
    ) -> Result<()> {
        let module = self.module(kernel)?;
        match (&self.backend, &module) {
            (Backend::Gpu(g), Module::Gpu(m)) => {
                g.launch(queue.stream(function)?, function, m, entry, launch, args)?
            }
            (Backend::Sim(_), Module::Sim(m)) => m.launch(function, entry, launch, args)?,
            _ => return Err(mixed_buffers(function)),
        }
        match &queue.deferred {
            None => {
                self.wait(queue, function)?;
                self.check_panic(queue, function, &module)
            }
            Some(pending) => {
                let mut pending = pending.lock().unwrap_or_else(|e| e.into_inner());
                if !pending.iter().any(|(_, m)| m.same(&module)) {
                    pending.push((function, module));
                }
                Ok(())
            }
        }
    }

    /// Waits for the work queued on `queue`.
    pub(crate) fn wait(&self, queue: &Queue, function: &str) -> Result<()> {
        match &queue.stream {
            Some(s) => s
                .synchronize()
                .map_err(|e| driver_error(function, "running", e)),
            None => Ok(()),
        }
    }

    /// Waits for `queue`, then reports the first panic of any kernel launched on it since the
    /// last synchronisation.
    pub(crate) fn synchronize(&self, queue: &Queue) -> Result<()> {
        self.wait(queue, "a stream")?;
        let pending = match &queue.deferred {
            Some(p) => std::mem::take(&mut *p.lock().unwrap_or_else(|e| e.into_inner())),
            None => Vec::new(),
        };
        let mut first = Ok(());
        for (function, module) in pending {
            let status = self.check_panic(queue, function, &module);
            if first.is_ok() {
                first = status;
            }
        }
        first
    }

    /// Reads and clears the module's panic flag: a body that panicked is an `Err`.
    fn check_panic(&self, queue: &Queue, function: &'static str, module: &Module) -> Result<()> {
        let code = match module {
            Module::Gpu(m) => match &self.backend {
                Backend::Gpu(g) => g.take_status(queue.stream(function)?, function, m)?,
                Backend::Sim(_) => return Err(mixed_buffers(function)),
            },
            Module::Sim(m) => m.take_status(),
        };
        if code == 0 {
            return Ok(());
        }
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

    /// A new queue whose calls return without waiting.
    pub(crate) fn deferred_queue(&self) -> Result<Queue> {
        let stream = match &self.backend {
            Backend::Gpu(g) => Some(g.new_stream().map_err(|e| Error::Cuda {
                what: format!("creating a stream: {e:?}"),
            })?),
            Backend::Sim(_) => None,
        };
        Ok(Queue {
            stream,
            deferred: Some(Mutex::new(Vec::new())),
        })
    }
}

/// Strides in elements.
pub(crate) type Strides = SmallVec<[isize; 8]>;

/// An input in device memory: its buffer, the byte offset of its first element, its shape and
/// element strides (any sign; 0 broadcasts).
pub(crate) struct DevOperand<'a> {
    pub mem: &'a Mem,
    pub offset: usize,
    pub shape: &'a [usize],
    pub strides: Strides,
}

/// An output in device memory, C order, starting at its buffer's first byte.
pub(crate) struct DevOut<'a> {
    pub mem: &'a mut Mem,
    pub shape: &'a [usize],
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
pub(crate) fn host_bytes<'a>(
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

/// A host operand's own elements, in C order, copied to new device memory.
pub(crate) fn upload_host(
    queue: &Queue,
    function: &str,
    op: &RawOperand<'_>,
    size: usize,
) -> Result<Mem> {
    let bytes = host_bytes(op.ptr, op.shape, op.strides, size);
    queue.upload(function, "copying an input", &bytes)
}

/// Every operand copied in, in order.
fn upload_all(
    queue: &Queue,
    function: &str,
    ops: &[RawOperand<'_>],
    sizes: &[usize],
) -> Result<Vec<Mem>> {
    ops.iter()
        .zip(sizes)
        .map(|(op, &size)| upload_host(queue, function, op, size))
        .collect()
}

/// Host memory uploaded by [`upload_host`], seen as a device operand.
fn uploaded<'a>(mem: &'a Mem, op: &RawOperand<'a>) -> DevOperand<'a> {
    DevOperand {
        mem,
        offset: 0,
        shape: op.shape,
        strides: c_strides(op.shape),
    }
}

/// Runs `kernel` over the broadcast `shape` on host operands: inputs are copied in (their own
/// elements, broadcast on the device through stride-0 strides), outputs copied out.
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
    let queue = &dev.queue;
    let in_mems = upload_all(queue, function, ins, in_sizes)?;
    let inputs: Vec<DevOperand<'_>> = in_mems
        .iter()
        .zip(ins)
        .map(|(m, op)| uploaded(m, op))
        .collect();
    let mut out_mems = out_sizes
        .iter()
        .map(|&size| queue.alloc_zeroed(function, total * size))
        .collect::<Result<Vec<_>>>()?;
    let mut outputs: Vec<&mut Mem> = out_mems.iter_mut().collect();
    launch_elementwise(dev, queue, function, kernel, &inputs, &mut outputs, shape)?;
    download_all(queue, function, outs, &out_mems, out_sizes)
}

/// Copies each output's device memory back into its host array (any strides).
fn download_all(
    queue: &Queue,
    function: &str,
    outs: &[RawOutOperand<'_>],
    mems: &[Mem],
    sizes: &[usize],
) -> Result<()> {
    for ((op, mem), &size) in outs.iter().zip(mems).zip(sizes) {
        if op.shape.contains(&0) {
            continue;
        }
        let bytes = queue.download(function, "copying an output back", mem)?;
        scatter_c_order(&bytes, op.ptr, op.shape, op.strides, size);
    }
    Ok(())
}

/// Launches the contiguous or the strided kernel of `kernel` over `shape`: inputs with any
/// offsets, shapes and strides (broadcast to `shape`), outputs of the full `shape` in C order.
pub(crate) fn launch_elementwise(
    dev: &Device,
    queue: &Queue,
    function: &'static str,
    kernel: &CudaKernel,
    ins: &[DevOperand<'_>],
    outs: &mut [&mut Mem],
    shape: &[usize],
) -> Result<()> {
    let total = element_count(shape)?;
    if total == 0 {
        return Ok(());
    }
    let launch = LaunchShape {
        items: total,
        threads: 256,
    };
    let mut args = vec![Arg::I64(total as i64)];
    if ins
        .iter()
        .all(|op| op.shape == shape && is_c_contiguous(shape, &op.strides))
    {
        args.extend(ins.iter().map(|op| Arg::In(op.mem, op.offset)));
        args.extend(outs.iter_mut().map(|m| Arg::Out(m)));
        let entry = format!("{}_contig", kernel.name);
        return dev.run(queue, function, kernel, &entry, launch, &mut args);
    }
    let shape_i64: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    let mut strides_i64: Vec<i64> = Vec::with_capacity((ins.len() + outs.len()) * shape.len());
    for op in ins {
        let b = broadcast_strides(shape, op.shape, &op.strides);
        strides_i64.extend(b.iter().map(|&s| s as i64));
    }
    let out_strides = c_strides(shape);
    for _ in outs.iter() {
        strides_i64.extend(out_strides.iter().map(|&s| s as i64));
    }
    let shape_mem = queue.upload_i64(function, "copying the shape", &shape_i64)?;
    let strides_mem = queue.upload_i64(function, "copying the strides", &strides_i64)?;
    args.push(Arg::I32(shape.len() as i32));
    args.push(Arg::In(&shape_mem, 0));
    args.push(Arg::In(&strides_mem, 0));
    args.extend(ins.iter().map(|op| Arg::In(op.mem, op.offset)));
    args.extend(outs.iter_mut().map(|m| Arg::Out(m)));
    let entry = format!("{}_strided", kernel.name);
    dev.run(queue, function, kernel, &entry, launch, &mut args)
}

/// Runs a gufunc kernel on host operands: every operand (outputs too, which the core may read)
/// is copied to the device in C order, then the outputs are copied back.
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
    if element_count(&binding.loop_shape)? == 0 {
        return Ok(());
    }
    let dev = device()?;
    let queue = &dev.queue;
    let in_mems = upload_all(queue, function, ins, in_sizes)?;
    let inputs: Vec<DevOperand<'_>> = in_mems
        .iter()
        .zip(ins)
        .map(|(m, op)| uploaded(m, op))
        .collect();
    let outs_as_inputs: Vec<RawOperand<'_>> = outs
        .iter()
        .map(|op| RawOperand {
            ptr: op.ptr as *const u8,
            shape: op.shape,
            strides: op.strides,
        })
        .collect();
    let mut out_mems = upload_all(queue, function, &outs_as_inputs, out_sizes)?;
    let mut outputs: Vec<DevOut<'_>> = out_mems
        .iter_mut()
        .zip(outs)
        .map(|(mem, op)| DevOut {
            mem,
            shape: op.shape,
        })
        .collect();
    launch_gufunc(dev, queue, function, kernel, &inputs, &mut outputs, binding)?;
    download_all(queue, function, outs, &out_mems, out_sizes)
}

/// Launches `<name>_gufunc` over the loop items of `binding`, operands in device memory.
pub(crate) fn launch_gufunc(
    dev: &Device,
    queue: &Queue,
    function: &'static str,
    kernel: &CudaKernel,
    ins: &[DevOperand<'_>],
    outs: &mut [DevOut<'_>],
    binding: &crate::gufunc::CoreBinding,
) -> Result<()> {
    let total = element_count(&binding.loop_shape)?;
    if total == 0 {
        return Ok(());
    }
    let out_strides: Vec<Strides> = outs.iter().map(|o| c_strides(o.shape)).collect();
    let operands = ins.iter().map(|op| (op.shape, &op.strides[..])).chain(
        outs.iter()
            .zip(&out_strides)
            .map(|(o, s)| (o.shape, &s[..])),
    );
    let (mut loop_strides, mut core_shapes, mut core_strides) =
        (Vec::new(), Vec::new(), Vec::new());
    for (k, (shape, strides)) in operands.enumerate() {
        let n_core = binding.core_axes[k].iter().filter(|a| a.is_some()).count();
        let n_loop = shape.len() - n_core;
        let ls = broadcast_strides(&binding.loop_shape, &shape[..n_loop], &strides[..n_loop]);
        loop_strides.extend(ls.iter().map(|&s| s as i64));
        core_shapes.extend(binding.core_shapes[k].iter().map(|&n| n as i64));
        core_strides.extend(
            binding.core_axes[k]
                .iter()
                .map(|a| a.map_or(0, |a| strides[a] as i64)),
        );
    }
    let loop_shape: Vec<i64> = binding.loop_shape.iter().map(|&n| n as i64).collect();
    let loop_shape_mem = queue.upload_i64(function, "copying the loop shape", &loop_shape)?;
    let loop_strides_mem = queue.upload_i64(function, "copying the loop strides", &loop_strides)?;
    let core_shapes_mem = queue.upload_i64(function, "copying the core shapes", &core_shapes)?;
    let core_strides_mem = queue.upload_i64(function, "copying the core strides", &core_strides)?;
    let mut args = vec![
        Arg::I64(total as i64),
        Arg::I32(binding.loop_shape.len() as i32),
        Arg::In(&loop_shape_mem, 0),
        Arg::In(&loop_strides_mem, 0),
        Arg::In(&core_shapes_mem, 0),
        Arg::In(&core_strides_mem, 0),
    ];
    args.extend(ins.iter().map(|op| Arg::In(op.mem, op.offset)));
    args.extend(outs.iter_mut().map(|o| Arg::Out(&mut *o.mem)));
    // A mapped kernel has a thread per loop item and index of the output's leading axes.
    let per_item: usize = match binding.core_shapes.last() {
        Some(out_core) if kernel.mapped_axes > 0 => out_core[..kernel.mapped_axes].iter().product(),
        _ => 1,
    };
    let launch = LaunchShape {
        items: total.saturating_mul(per_item),
        threads: 128,
    };
    let entry = format!("{}_gufunc", kernel.name);
    dev.run(queue, function, kernel, &entry, launch, &mut args)
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
