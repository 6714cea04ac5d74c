//! Compiled kernels kept between calls and between processes: NVRTC's cubins (and the
//! simulator's shared libraries) on disk, keyed by everything that changes the binary.
//!
//! The disk is not trusted. Each entry starts with a header naming its key, its payload's
//! length and a hash of the payload; an entry that is missing, unreadable, truncated, of
//! another key or corrupt is rebuilt, never used. A cache directory that cannot be written
//! costs one warning, after which compiled kernels stay in memory only.

use super::kernel::CudaKernel;
use super::nvrtc::{compile, nvrtc_version, NvrtcOutput};
use crate::error::Result;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Kernel compilations in this process (NVRTC, or the host compiler under the simulator).
pub(crate) static COMPILES: AtomicUsize = AtomicUsize::new(0);

/// The first bytes of every entry, before its key, length and hash.
const MAGIC: &[u8] = b"ufunc-kernel-cache v1\n";

/// The NVRTC options a kernel is compiled with.
pub(crate) fn options(kernel: &CudaKernel) -> Vec<&'static str> {
    if kernel.fast_math {
        vec!["--use_fast_math"]
    } else {
        vec!["--fmad=false"]
    }
}

/// A non-empty environment variable (an empty one counts as unset).
fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Where compiled kernels are kept between processes: `UFUNC_CACHE_DIR`, else the platform
/// cache directory (`$XDG_CACHE_HOME` or `~/.cache`) under `ufunc/kernels`. An empty variable
/// counts as unset.
///
/// ```
/// if let Some(dir) = ufunc_runtime::kernel_cache_dir() {
///     println!("compiled kernels are cached in {}", dir.display());
/// }
/// ```
pub fn kernel_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = env_dir("UFUNC_CACHE_DIR") {
        return Some(dir);
    }
    let base = env_dir("XDG_CACHE_HOME").or_else(|| env_dir("HOME").map(|h| h.join(".cache")))?;
    Some(base.join("ufunc").join("kernels"))
}

fn hash_of(bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// The cache key of a compilation: source, target (GPU architecture or host compiler),
/// NVRTC version and options.
pub(crate) fn cache_key(source: &str, target: &str, opts: &[&str]) -> u64 {
    let mut h = DefaultHasher::new();
    (source, target, opts, nvrtc_version()).hash(&mut h);
    h.finish()
}

fn entry_path(dir: &Path, key: u64, kind: &str) -> PathBuf {
    dir.join(format!("{key:016x}.{kind}"))
}

/// An entry's bytes: header (magic, key, payload length, payload hash) then payload.
fn encode(key: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + 24 + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&key.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&hash_of(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// The payload of an entry's bytes if they are a whole, intact entry of `key`.
fn decode(key: u64, bytes: &[u8]) -> Option<&[u8]> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let word = |i: usize| -> Option<u64> {
        Some(u64::from_le_bytes(
            rest.get(i * 8..i * 8 + 8)?.try_into().ok()?,
        ))
    };
    let (found_key, len, hash) = (word(0)?, word(1)?, word(2)?);
    let payload = rest.get(24..)?;
    (found_key == key && payload.len() as u64 == len && hash_of(payload) == hash).then_some(payload)
}

/// The verified payload of the `kind` entry of `key`, if the disk holds an intact one.
pub(crate) fn read_entry(key: u64, kind: &str) -> Option<Vec<u8>> {
    let path = entry_path(&kernel_cache_dir()?, key, kind);
    let bytes = std::fs::read(path).ok()?;
    decode(key, &bytes).map(<[u8]>::to_vec)
}

/// Stores `payload` as the `kind` entry of `key`, atomically. A directory that cannot be
/// written is reported once per process; the kernel then lives in memory only.
pub(crate) fn write_entry(key: u64, kind: &str, payload: &[u8]) {
    let Some(dir) = kernel_cache_dir() else {
        return;
    };
    let path = entry_path(&dir, key, kind);
    if let Err(e) = publish(&path, &encode(key, payload)) {
        static WARNED: AtomicBool = AtomicBool::new(false);
        if !WARNED.swap(true, Ordering::Relaxed) {
            eprintln!(
                "ufunc: cannot write the kernel cache ({}: {e}); compiled kernels are kept in \
                 memory only (set UFUNC_CACHE_DIR to a writable directory)",
                path.display()
            );
        }
    }
}

/// The cubin of `source` for `arch` with `opts`: a verified entry of the disk cache
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
    cached_image(source, arch, NvrtcOutput::Cubin, opts)
}

/// [`cached_cubin`] for either output: a cubin for `sm_XY`, PTX for `compute_XY`.
pub(crate) fn cached_image(
    source: &str,
    arch: &str,
    output: NvrtcOutput,
    opts: &[&str],
) -> Result<Vec<u8>> {
    let kind = match output {
        NvrtcOutput::Cubin => "cubin",
        NvrtcOutput::Ptx => "ptx",
    };
    let key = cache_key(source, arch, opts);
    if let Some(image) = read_entry(key, kind) {
        return Ok(image);
    }
    COMPILES.fetch_add(1, Ordering::Relaxed);
    let compiled = compile(source, arch, opts, output)?;
    write_entry(key, kind, &compiled.image);
    Ok(compiled.image)
}

/// Writes `bytes` to `path` through a temporary file beside it and a rename, so that a
/// concurrent process sees the old file, none, or the whole new one.
fn publish(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().ok_or(std::io::ErrorKind::InvalidInput)?;
    std::fs::create_dir_all(dir)?;
    let tmp = unique_path(dir, "tmp");
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// A fresh file name in `dir` that no other thread or process of this machine uses.
pub(crate) fn unique_path(dir: &Path, ext: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let unique = NEXT.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{}.{unique}.{ext}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_entries_of_their_own_key_decode() {
        let entry = encode(7, b"payload");
        assert_eq!(decode(7, &entry), Some(&b"payload"[..]));
        assert_eq!(decode(8, &entry), None, "another key");
        assert_eq!(decode(7, &entry[..entry.len() - 1]), None, "truncated");
        assert_eq!(decode(7, &[]), None, "empty");
        let mut flipped = entry.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(decode(7, &flipped), None, "corrupt payload");
        assert_eq!(decode(7, b"\x7fELF garbage"), None, "a bare binary");
    }
}
