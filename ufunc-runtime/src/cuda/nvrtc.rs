//! NVRTC: compiling generated sources to PTX or to a cubin for one architecture, with the log.

use crate::error::{Error, Result};
use cudarc::nvrtc::{result, sys};
use std::ffi::{c_char, CString};

/// Whether `libnvrtc` (CUDA 13) can be loaded: set `LD_LIBRARY_PATH` to its directory, e.g.
/// the `nvidia/cu13/lib` of the pip package `nvidia-cuda-nvrtc` (`scripts/test.sh` does).
///
/// ```
/// if !ufunc_runtime::nvrtc_available() {
///     println!("NVRTC not found: CUDA kernels cannot be compiled here");
/// }
/// ```
pub fn nvrtc_available() -> bool {
    // SAFETY: only tries to open the library.
    unsafe { sys::is_culib_present() }
}

/// What a compilation produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NvrtcOutput {
    /// PTX for a virtual architecture such as `compute_90`.
    Ptx,
    /// A cubin for a real architecture such as `sm_90`.
    Cubin,
}

/// A successful compilation.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// PTX text or cubin bytes.
    pub image: Vec<u8>,
    /// NVRTC's log (with `--ptxas-options=-v`, registers and spills per kernel).
    pub log: String,
}

fn chars_to_string(v: Vec<c_char>) -> String {
    let bytes: Vec<u8> = v
        .into_iter()
        .map(|c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Compiles `source` for `arch` (`compute_XX` gives PTX, `sm_XX` a cubin) with `options`.
/// Errors carry the log and the source.
///
/// ```
/// use ufunc_runtime::{compile, nvrtc_available, Error, NvrtcOutput};
/// let src = r#"extern "C" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }"#;
/// match compile(src, "compute_90", &[], NvrtcOutput::Ptx) {
///     Ok(ptx) => assert!(String::from_utf8(ptx.image).unwrap().contains(".entry k")),
///     Err(Error::NvrtcUnavailable) => assert!(!nvrtc_available()),
///     Err(e) => panic!("{e}"),
/// }
/// let err = compile("this is not C++", "compute_90", &[], NvrtcOutput::Ptx);
/// assert!(err.is_err());
/// ```
pub fn compile(
    source: &str,
    arch: &str,
    options: &[&str],
    output: NvrtcOutput,
) -> Result<Compiled> {
    if !nvrtc_available() {
        return Err(Error::NvrtcUnavailable);
    }
    let src = CString::new(source).map_err(|_| Error::Nvrtc {
        log: "the source contains a NUL byte".into(),
        source: source.into(),
    })?;
    let fail = |log: String| Error::Nvrtc {
        log,
        source: source.into(),
    };
    let prog = result::create_program(&src, None).map_err(|e| fail(format!("{e:?}")))?;
    let mut opts: Vec<String> = vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()];
    opts.extend(options.iter().map(|s| s.to_string()));
    // SAFETY: `prog` is a live program; the option strings outlive the call.
    let compiled = unsafe { result::compile_program(prog, &opts) };
    // SAFETY: as above.
    let log = unsafe { result::get_program_log(prog) }
        .map(chars_to_string)
        .unwrap_or_default();
    let image = compiled
        .map_err(|_| fail(log.clone()))
        .and_then(|()| match output {
            // SAFETY: `prog` compiled successfully.
            NvrtcOutput::Ptx => unsafe { result::get_ptx(prog) }
                .map(|v| chars_to_string(v).into_bytes())
                .map_err(|e| fail(format!("{e:?}"))),
            NvrtcOutput::Cubin => {
                let mut size = 0usize;
                // SAFETY: `prog` compiled successfully for a real architecture; the buffer has the
                // size NVRTC reports.
                unsafe {
                    sys::nvrtcGetCUBINSize(prog, &mut size)
                        .result()
                        .map_err(|e| fail(format!("{e:?}")))?;
                    let mut bytes = vec![0u8; size];
                    sys::nvrtcGetCUBIN(prog, bytes.as_mut_ptr() as *mut c_char)
                        .result()
                        .map_err(|e| fail(format!("{e:?}")))?;
                    Ok(bytes)
                }
            }
        });
    // SAFETY: `prog` is not used after this.
    let _ = unsafe { result::destroy_program(prog) };
    Ok(Compiled { image: image?, log })
}
