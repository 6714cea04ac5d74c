//! Compiled kernels kept between calls and between processes: NVRTC's cubins (and the
//! simulator's shared libraries) on disk, keyed by everything that changes the binary.

use super::kernel::CudaKernel;
use super::nvrtc::{compile, NvrtcOutput};
use crate::error::Result;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Kernel compilations in this process (NVRTC, or the host compiler under the simulator).
pub(crate) static COMPILES: AtomicUsize = AtomicUsize::new(0);

/// The NVRTC options a kernel is compiled with.
pub(crate) fn options(kernel: &CudaKernel) -> Vec<&'static str> {
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

/// The cache key of a compilation: source, architecture, NVRTC version and options.
pub(crate) fn cache_key(source: &str, arch: &str, opts: &[&str]) -> u64 {
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
    COMPILES.fetch_add(1, Ordering::Relaxed);
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
pub(crate) fn store_atomically(path: &std::path::Path, bytes: &[u8]) {
    publish(path, |tmp| std::fs::write(tmp, bytes).is_ok());
}

/// Has `write` fill a fresh temporary file beside `path`, then renames it to `path` (atomic:
/// a concurrent process sees the old file, none, or the whole new one). Returns whether `path`
/// now holds the result.
pub(crate) fn publish(
    path: &std::path::Path,
    write: impl FnOnce(&std::path::Path) -> bool,
) -> bool {
    let Some(dir) = path.parent() else {
        return false;
    };
    if std::fs::create_dir_all(dir).is_err() {
        return false;
    }
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let unique = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{}.{unique}.tmp", std::process::id()));
    if write(&tmp) && std::fs::rename(&tmp, path).is_ok() {
        return true;
    }
    let _ = std::fs::remove_file(&tmp);
    false
}
