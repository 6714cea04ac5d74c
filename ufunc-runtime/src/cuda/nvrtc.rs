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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// NVRTC's version as (major, minor); (0, 0) without NVRTC.
pub(crate) fn nvrtc_version() -> (i32, i32) {
    let (mut major, mut minor) = (0, 0);
    if nvrtc_available() {
        // SAFETY: writes two ints; NVRTC was found.
        unsafe {
            let _ = sys::nvrtcVersion(&mut major, &mut minor);
        }
    }
    (major, minor)
}

/// The real architectures this NVRTC compiles for, as compute capabilities times ten
/// (75, 80, 86, ...); empty without NVRTC.
pub(crate) fn supported_archs() -> Vec<u32> {
    if !nvrtc_available() {
        return Vec::new();
    }
    let mut count = 0;
    // SAFETY: writes one int, then `count` ints into a buffer of that many.
    unsafe {
        if sys::nvrtcGetNumSupportedArchs(&mut count).result().is_err() || count <= 0 {
            return Vec::new();
        }
        let mut archs = vec![0; count as usize];
        if sys::nvrtcGetSupportedArchs(archs.as_mut_ptr())
            .result()
            .is_err()
        {
            return Vec::new();
        }
        archs.into_iter().map(|a| a as u32).collect()
    }
}

/// The integrated (Tegra) architectures, whose cubins run on their own architecture alone.
const TEGRA: &[u32] = &[53, 62, 72, 87, 101, 110];

/// What the kernels of one device are compiled to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KernelTarget {
    /// `sm_XY` for a cubin, `compute_XY` for PTX.
    pub(crate) arch: String,
    pub(crate) output: NvrtcOutput,
}

/// The target for a device of compute capability `device` (times ten: 90 for 9.0) under a
/// driver of CUDA version `driver` (`cuDriverGetVersion`'s 13000 for 13.0), with NVRTC
/// `nvrtc` (major, minor) that compiles for `supported`; or why its kernels cannot run.
///
/// A cubin for the device's own architecture where NVRTC has it: it loads under any driver
/// of NVRTC's major version. A device NVRTC does not list gets a cubin for the newest listed
/// architecture of its own major version below it (a cubin for X.y runs on X.z, z >= y; not
/// for Tegra GPUs, integrated ones), and otherwise PTX for the newest architecture below it,
/// which the driver compiles when it loads it, and so needs a driver at least as new as NVRTC.
/// A device older than every architecture NVRTC has cannot be used (CUDA 13 dropped compute
/// capabilities below 7.5).
pub(crate) fn kernel_target(
    device: u32,
    driver: i32,
    nvrtc: (i32, i32),
    supported: &[u32],
) -> std::result::Result<KernelTarget, String> {
    let (driver_major, driver_minor) = (driver / 1000, driver % 1000 / 10);
    let (major, minor) = nvrtc;
    let capability = format!("compute capability {}.{}", device / 10, device % 10);
    if driver_major < major {
        return Err(format!(
            "the NVIDIA driver supports CUDA {driver_major}.{driver_minor}, but the kernels are \
             compiled by NVRTC {major}.{minor}, whose code needs a CUDA {major} driver: update \
             the driver{}",
            if major == 13 {
                " (CUDA 13 needs 580 or newer)"
            } else {
                ""
            }
        ));
    }
    let (Some(lo), Some(hi)) = (supported.iter().min(), supported.iter().max()) else {
        return Err(format!(
            "NVRTC {major}.{minor} did not say which architectures it compiles for"
        ));
    };
    if supported.contains(&device) {
        return Ok(KernelTarget {
            arch: format!("sm_{device}"),
            output: NvrtcOutput::Cubin,
        });
    }
    let range = format!("sm_{lo} to sm_{hi}");
    let Some(&below) = supported.iter().filter(|&&a| a < device).max() else {
        return Err(format!(
            "the GPU (sm_{device}, {capability}) is older than every architecture NVRTC \
             {major}.{minor} compiles for ({range})"
        ));
    };
    // Tegra GPUs keep no binary compatibility, with each other or with desktop ones.
    let tegra = |arch: u32| TEGRA.contains(&arch);
    if below / 10 == device / 10 && !tegra(below) && !tegra(device) {
        return Ok(KernelTarget {
            arch: format!("sm_{below}"),
            output: NvrtcOutput::Cubin,
        });
    }
    if (driver_major, driver_minor) < (major, minor) {
        return Err(format!(
            "the GPU (sm_{device}, {capability}) is newer than NVRTC {major}.{minor} knows \
             ({range}); its kernels would be PTX for compute_{below}, which a driver of CUDA \
             {driver_major}.{driver_minor} cannot load from NVRTC {major}.{minor}: update the \
             driver or NVRTC"
        ));
    }
    Ok(KernelTarget {
        arch: format!("compute_{below}"),
        output: NvrtcOutput::Ptx,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NVRTC 13.0's list.
    const CUDA13: &[u32] = &[75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121];

    #[test]
    fn a_device_nvrtc_knows_gets_its_own_cubin() {
        let t = kernel_target(90, 13000, (13, 0), CUDA13).unwrap();
        assert_eq!((t.arch.as_str(), t.output), ("sm_90", NvrtcOutput::Cubin));
        // A cubin loads under a newer driver, and under an older one of the same major.
        assert_eq!(
            kernel_target(80, 13020, (13, 0), CUDA13).unwrap().arch,
            "sm_80"
        );
        assert_eq!(
            kernel_target(80, 13000, (13, 1), CUDA13).unwrap().arch,
            "sm_80"
        );
    }

    #[test]
    fn a_newer_device_gets_ptx_its_driver_can_load() {
        let t = kernel_target(130, 13010, (13, 0), CUDA13).unwrap();
        assert_eq!(
            (t.arch.as_str(), t.output),
            ("compute_121", NvrtcOutput::Ptx)
        );
        // Between two listed architectures, none of its major version: PTX for the one below.
        let t = kernel_target(100, 13000, (13, 0), &[75, 80, 90, 120]).unwrap();
        assert_eq!(
            (t.arch.as_str(), t.output),
            ("compute_90", NvrtcOutput::Ptx)
        );
        // PTX of NVRTC 13.1 does not load under a 13.0 driver.
        let e = kernel_target(130, 13000, (13, 1), CUDA13).unwrap_err();
        assert!(
            e.contains("sm_130") && e.contains("CUDA 13.0") && e.contains("NVRTC 13.1"),
            "{e}"
        );
    }

    #[test]
    fn an_unlisted_device_gets_a_cubin_of_its_major_version() {
        // 9.5 runs a cubin for 9.0, under a driver older than NVRTC too (no PTX to compile).
        for driver in [13000, 13020] {
            let t = kernel_target(95, driver, (13, 1), CUDA13).unwrap();
            assert_eq!((t.arch.as_str(), t.output), ("sm_90", NvrtcOutput::Cubin));
        }
        // The newest of that major version below the device, never one above it.
        let t = kernel_target(85, 13000, (13, 0), CUDA13).unwrap();
        assert_eq!(t.arch, "sm_80");
        let t = kernel_target(129, 13000, (13, 0), CUDA13).unwrap();
        assert_eq!(t.arch, "sm_121");
        // Never a Tegra cubin for a desktop GPU, nor the reverse: NVRTC 12.8 lists sm_101
        // (Thor) but not sm_103 (GB300), and sm_87 (Orin) is no build for sm_89 (Ada).
        let t = kernel_target(103, 12080, (12, 8), &[75, 80, 87, 90, 100, 101, 120]).unwrap();
        assert_eq!(
            (t.arch.as_str(), t.output),
            ("compute_101", NvrtcOutput::Ptx)
        );
        let t = kernel_target(89, 12080, (12, 8), &[75, 80, 86, 87, 90]).unwrap();
        assert_eq!(t.arch, "compute_87");
        let t = kernel_target(111, 13000, (13, 0), CUDA13).unwrap();
        assert_eq!(t.arch, "compute_110");
    }

    #[test]
    fn an_old_device_or_driver_is_named() {
        let e = kernel_target(70, 13000, (13, 0), CUDA13).unwrap_err();
        assert!(
            e.contains("sm_70")
                && e.contains("compute capability 7.0")
                && e.contains("sm_75 to sm_121"),
            "{e}"
        );
        let e = kernel_target(90, 12080, (13, 0), CUDA13).unwrap_err();
        assert!(e.contains("CUDA 12.8") && e.contains("NVRTC 13.0"), "{e}");
    }

    #[test]
    fn an_nvrtc_without_architectures_is_named() {
        let e = kernel_target(90, 13000, (13, 0), &[]).unwrap_err();
        assert_eq!(
            e,
            "NVRTC 13.0 did not say which architectures it compiles for"
        );
    }

    #[test]
    fn this_nvrtc_lists_the_architectures_it_compiles_for() {
        if !nvrtc_available() {
            eprintln!("SKIPPED this_nvrtc_lists_the_architectures_it_compiles_for: no NVRTC");
            return;
        }
        let archs = supported_archs();
        assert!(archs.contains(&90), "{archs:?}");
        let version = nvrtc_version();
        assert!(version.0 >= 12, "{version:?}");
        // What the runtime would compile for an H100 under a driver as new as NVRTC.
        let driver = version.0 * 1000 + version.1 * 10;
        let t = kernel_target(90, driver, version, &archs).unwrap();
        assert_eq!(t.arch, "sm_90");
        // A device newer than all of them gets PTX, which NVRTC produces.
        let newest = *archs.iter().max().unwrap();
        let t = kernel_target(newest + 10, driver, version, &archs).unwrap();
        let ptx = compile(
            r#"extern "C" __global__ void k(float* x) { x[0] = 1.0f; }"#,
            &t.arch,
            &[],
            t.output,
        )
        .unwrap();
        assert!(String::from_utf8(ptx.image).unwrap().contains(".entry k"));
    }
}
