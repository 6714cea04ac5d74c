//! The host simulator of the `cuda` target (`UFUNC_CUDA_SIM=1`): the generated CUDA C++ built
//! as a shared library by the host C++ compiler (with `sim.h` standing in for CUDA), device
//! memory in host memory, and each launch run as a small grid of simulated threads, one after
//! another. Kernels are grid-stride loops, so any grid covers every item; a grid of several
//! blocks and threads checks that they split the work correctly.

use super::super::args::{
    Arg, Buffer, FftLayout, FftPlanHandle, HostBuffer, LaunchShape, ModuleHandle, StreamHandle,
};
use super::super::cache::{cache_key, read_entry, unique_path, write_entry, COMPILES};
use super::super::kernel::CudaKernel;
use super::{byte_range, foreign, sim_fft, Backend, DeviceMemory};
use crate::error::{Error, Result};
use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

const SIM_H: &str = include_str!("sim.h");

/// The simulated grid: blocks, and threads per block.
const SIM_BLOCKS: u32 = 2;
const SIM_THREADS: u32 = 3;
/// Threads per block of a cooperative launch: two of sim.h's warps of 4.
const SIM_COOP_THREADS: u32 = 8;

/// Device memory under the simulator: 8-byte aligned host memory.
pub(super) struct SimBuffer {
    words: Vec<u64>,
    len: usize,
}

impl SimBuffer {
    fn zeroed(len: usize) -> SimBuffer {
        SimBuffer {
            words: vec![0; len.div_ceil(8)],
            len,
        }
    }

    fn from_bytes(bytes: &[u8]) -> SimBuffer {
        let mut b = SimBuffer::zeroed(bytes.len());
        b.bytes_mut().copy_from_slice(bytes);
        b
    }

    pub(super) fn bytes(&self) -> &[u8] {
        // SAFETY: `words` holds at least `len` initialised bytes.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr() as *const u8, self.len) }
    }

    pub(super) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr() as *mut u8, self.len) }
    }
}

/// The simulator backend.
pub(super) struct Sim;

/// One generated source, built and loaded.
struct SimModule {
    lib: libloading::Library,
    /// Serialises launches: the grid coordinates and the status pointer are per library.
    lock: Mutex<()>,
}

pub(super) fn buffer(b: &Buffer) -> Result<&SimBuffer> {
    b.0.downcast_ref()
        .ok_or_else(|| foreign("reading simulated memory"))
}

pub(super) fn buffer_mut(b: &mut Buffer) -> Result<&mut SimBuffer> {
    b.0.downcast_mut()
        .ok_or_else(|| foreign("writing simulated memory"))
}

fn module(m: &ModuleHandle) -> Result<&SimModule> {
    m.0.downcast_ref()
        .ok_or_else(|| foreign("using a simulated module"))
}

impl Backend for Sim {
    fn default_stream(&self) -> StreamHandle {
        StreamHandle(None)
    }

    fn new_stream(&self) -> Result<StreamHandle> {
        Ok(StreamHandle(None))
    }

    fn alloc_zeroed(&self, _: &StreamHandle, bytes: usize) -> Result<Buffer> {
        Ok(Buffer(Box::new(SimBuffer::zeroed(bytes.max(1)))))
    }

    fn alloc(&self, _: &StreamHandle, bytes: usize) -> Result<Buffer> {
        // All ones (NaN in every float type), so that reading memory before writing it shows.
        let mut b = SimBuffer::zeroed(bytes.max(1));
        b.bytes_mut().fill(0xff);
        Ok(Buffer(Box::new(b)))
    }

    fn upload(&self, _: &StreamHandle, bytes: &[u8]) -> Result<Buffer> {
        Ok(Buffer(Box::new(SimBuffer::from_bytes(bytes))))
    }

    fn alloc_host(&self, bytes: usize) -> Result<HostBuffer> {
        Ok(HostBuffer(Box::new(SimBuffer::zeroed(bytes.max(1)))))
    }

    fn host_bytes<'a>(&self, host: &'a mut HostBuffer) -> Result<&'a mut [u8]> {
        let b: &mut SimBuffer = host
            .0
            .downcast_mut()
            .ok_or_else(|| foreign("writing host memory"))?;
        Ok(b.bytes_mut())
    }

    fn upload_host(&self, _: &StreamHandle, host: &HostBuffer) -> Result<Buffer> {
        let b: &SimBuffer = host
            .0
            .downcast_ref()
            .ok_or_else(|| foreign("reading host memory"))?;
        Ok(Buffer(Box::new(SimBuffer::from_bytes(b.bytes()))))
    }

    fn byte_len(&self, buf: &Buffer) -> Result<usize> {
        Ok(buffer(buf)?.bytes().len())
    }

    fn download_into(
        &self,
        _: &StreamHandle,
        buf: &Buffer,
        offset: usize,
        dst: &mut [u8],
    ) -> Result<()> {
        let bytes = buffer(buf)?.bytes();
        let range = byte_range(offset, dst.len(), bytes.len())?;
        dst.copy_from_slice(&bytes[range]);
        Ok(())
    }

    fn copy(&self, _: &StreamHandle, src: &Buffer, dst: &mut Buffer) -> Result<()> {
        let src = buffer(src)?.bytes();
        buffer_mut(dst)?.bytes_mut().copy_from_slice(src);
        Ok(())
    }

    fn load(&self, kernel: &CudaKernel, source: &str) -> Result<ModuleHandle> {
        let lib = load_library(&build(source, kernel.fast_math)?, kernel.name)?;
        Ok(ModuleHandle(Arc::new(SimModule {
            lib,
            lock: Mutex::new(()),
        })))
    }

    fn launch(
        &self,
        _: &StreamHandle,
        m: &ModuleHandle,
        entry: &str,
        shape: LaunchShape,
        args: &mut [Arg<'_>],
        status: &mut Buffer,
    ) -> Result<()> {
        module(m)?.launch(entry, shape, args, status)
    }

    fn fft_plan(&self, _: &StreamHandle, layout: &FftLayout) -> Result<FftPlanHandle> {
        Ok(FftPlanHandle(Arc::new(layout.clone())))
    }

    fn fft_exec(
        &self,
        _: &StreamHandle,
        plan: &FftPlanHandle,
        input: Option<(&Buffer, usize)>,
        output: (&mut Buffer, usize),
        inverse: bool,
    ) -> Result<()> {
        sim_fft::exec(plan, input, output, inverse)
    }

    fn synchronize(&self, _: &StreamHandle) -> Result<()> {
        Ok(())
    }

    fn memory(&self) -> Result<DeviceMemory> {
        let unknown = |why: String| Error::Cuda {
            what: format!("reading the simulator's device memory (the host's): {why}"),
        };
        let meminfo = std::fs::read_to_string("/proc/meminfo")
            .map_err(|e| unknown(format!("/proc/meminfo cannot be read: {e}")))?;
        let kib = |key: &str| {
            meminfo
                .lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
                .and_then(|v| v.trim().strip_suffix("kB")?.trim().parse::<usize>().ok())
                .map(|k| k.saturating_mul(1024))
                .ok_or_else(|| unknown(format!("/proc/meminfo gives no {key}")))
        };
        Ok(DeviceMemory {
            free: kib("MemAvailable")?,
            total: kib("MemTotal")?,
        })
    }
}

/// The host compiler: `CXX`, else `c++`.
fn compiler() -> String {
    std::env::var("CXX").unwrap_or_else(|_| "c++".into())
}

/// The shared library of `source`: a verified entry of the kernel cache, or built by the host
/// compiler in a private temporary directory and stored in the cache.
fn build(source: &str, fast_math: bool) -> Result<Vec<u8>> {
    let cxx = compiler();
    let contract = if fast_math {
        "-ffp-contract=fast"
    } else {
        "-ffp-contract=off"
    };
    let flags = ["-std=c++17", "-O2", "-shared", "-fPIC", contract];
    let full = format!("{SIM_H}\n{source}");
    let key = cache_key(&full, &format!("host-sim {cxx}"), &flags);
    if let Some(lib) = read_entry(key, "sim.so") {
        return Ok(lib);
    }
    COMPILES.fetch_add(1, Ordering::Relaxed);
    let failed = |log: String| Error::SimCompile {
        compiler: cxx.clone(),
        log,
        source: full.clone(),
    };
    let dir = private_dir().map_err(|e| failed(format!("no temporary directory: {e}")))?;
    let cpp = unique_path(&dir, "cpp");
    let lib = unique_path(&dir, "so");
    std::fs::write(&cpp, &full)
        .map_err(|e| failed(format!("cannot write {}: {e}", cpp.display())))?;
    let out = std::process::Command::new(&cxx)
        .args(flags)
        .arg("-o")
        .arg(&lib)
        .arg(&cpp)
        .output();
    let _ = std::fs::remove_file(&cpp);
    let built = match out {
        Ok(out) if out.status.success() => {
            std::fs::read(&lib).map_err(|e| failed(format!("cannot read {}: {e}", lib.display())))
        }
        Ok(out) => Err(failed(String::from_utf8_lossy(&out.stderr).into_owned())),
        Err(e) => Err(failed(format!("cannot run `{cxx}`: {e}"))),
    };
    let _ = std::fs::remove_file(&lib);
    let bytes = built?;
    write_entry(key, "sim.so", &bytes);
    Ok(bytes)
}

/// This process's own directory for building and loading simulated modules.
fn private_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("ufunc-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Loads library bytes that were verified (or just built): they are written to a fresh file
/// of this process, loaded, and the file removed, so the loader never reads a file that
/// anyone else could have changed.
fn load_library(bytes: &[u8], name: &str) -> Result<libloading::Library> {
    let failed = |what: String| Error::Cuda {
        what: format!("loading the simulated module of `{name}`: {what}"),
    };
    let dir = private_dir().map_err(|e| failed(e.to_string()))?;
    let path = unique_path(&dir, "so");
    std::fs::write(&path, bytes).map_err(|e| failed(format!("{}: {e}", path.display())))?;
    // SAFETY: the library is ours (built from our generated source): its initialisers only
    // set up the C++ runtime.
    let lib = unsafe { libloading::Library::new(&path) };
    let _ = std::fs::remove_file(&path);
    lib.map_err(|e| failed(e.to_string()))
}

impl SimModule {
    fn symbol(&self, name: &str) -> Result<*mut c_void> {
        let cname = format!("{name}\0");
        // SAFETY: only the address is read; callers use it with the symbol's own type.
        unsafe { self.lib.get::<*mut c_void>(cname.as_bytes()) }
            .map(|s| *s)
            .map_err(|e| Error::Cuda {
                what: format!("finding {name} in a simulated module: {e}"),
            })
    }

    /// Runs `entry` over a small grid, thread after thread (a cooperative launch: a block's
    /// threads at once, on threads of their own, block after block).
    fn launch(
        &self,
        entry: &str,
        launch: LaunchShape,
        args: &mut [Arg<'_>],
        status: &mut Buffer,
    ) -> Result<()> {
        let words = args
            .iter_mut()
            .map(|a| match a {
                Arg::I64(v) => Ok(*v as usize),
                Arg::I32(v) => Ok(*v as isize as usize),
                Arg::In(b, offset) => Ok(buffer(b)?.bytes().as_ptr() as usize + *offset),
                Arg::Out(b) => Ok(buffer_mut(b)?.bytes_mut().as_mut_ptr() as usize),
            })
            .chain(std::iter::once(Ok(
                buffer_mut(status)?.bytes_mut().as_mut_ptr() as usize,
            )))
            .collect::<Result<Vec<usize>>>()?;
        let kernel = self.symbol(entry)?;
        let grid = self.symbol("__ufunc_sim_grid")?;
        // SAFETY: `__ufunc_sim_grid` is sim.h's `void(unsigned, unsigned, unsigned, unsigned)`.
        let set_grid: unsafe extern "C" fn(u32, u32, u32, u32) =
            unsafe { std::mem::transmute(grid) };
        let _serial = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        if launch.cooperative {
            for block in 0..SIM_BLOCKS {
                std::thread::scope(|s| {
                    let threads: Vec<_> = (0..SIM_COOP_THREADS)
                        .map(|thread| {
                            let (kernel, words) = (kernel as usize, &words);
                            s.spawn(move || {
                                // SAFETY: as below; the grid coordinates are per host thread.
                                unsafe {
                                    set_grid(block, SIM_BLOCKS, thread, SIM_COOP_THREADS);
                                    call_kernel(kernel as *mut c_void, words)
                                }
                            })
                        })
                        .collect();
                    threads
                        .into_iter()
                        .try_for_each(|t| t.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                })?;
            }
            return Ok(());
        }
        for block in 0..SIM_BLOCKS {
            for thread in 0..SIM_THREADS {
                // SAFETY: the kernel's parameters are 64-bit integers, 32-bit ints and pointers,
                // each passed in one integer register or 8-byte stack slot, as `words` are; the
                // pointers address simulator buffers covering every offset the kernel reaches.
                unsafe {
                    set_grid(block, SIM_BLOCKS, thread, SIM_THREADS);
                    call_kernel(kernel, &words)?;
                }
            }
        }
        Ok(())
    }
}

/// The type `usize`, once per repetition of a macro argument.
macro_rules! word {
    ($i:tt) => {
        usize
    };
}

/// Calls `f` with `words` as its integer arguments.
///
/// # Safety
/// `f` is an `extern "C"` function taking `words.len()` integer or pointer arguments.
unsafe fn call_kernel(f: *mut c_void, w: &[usize]) -> Result<()> {
    macro_rules! call {
        // SAFETY: the caller's contract: `f` takes exactly these integer arguments.
        ($($i:tt)*) => {unsafe {
            let f: unsafe extern "C" fn($(word!($i)),*) = std::mem::transmute(f);
            f($(w[$i]),*)
        }};
    }
    match w.len() {
        1 => call!(0),
        2 => call!(0 1),
        3 => call!(0 1 2),
        4 => call!(0 1 2 3),
        5 => call!(0 1 2 3 4),
        6 => call!(0 1 2 3 4 5),
        7 => call!(0 1 2 3 4 5 6),
        8 => call!(0 1 2 3 4 5 6 7),
        9 => call!(0 1 2 3 4 5 6 7 8),
        10 => call!(0 1 2 3 4 5 6 7 8 9),
        11 => call!(0 1 2 3 4 5 6 7 8 9 10),
        12 => call!(0 1 2 3 4 5 6 7 8 9 10 11),
        13 => call!(0 1 2 3 4 5 6 7 8 9 10 11 12),
        14 => call!(0 1 2 3 4 5 6 7 8 9 10 11 12 13),
        15 => call!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14),
        16 => call!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15),
        17 => call!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16),
        18 => call!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17),
        19 => call!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18),
        20 => call!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19),
        n => {
            return Err(Error::Cuda {
                what: format!("the simulator calls kernels of at most 20 parameters, not {n}"),
            })
        }
    }
    Ok(())
}
