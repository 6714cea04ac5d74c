//! What a translated function gives the runtime: its `CudaKernel` (name, source, options), the
//! `DeviceKernel` trait the generated code implements, the panic codes the kernels raise, and
//! the prelude every source starts with.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::OnceLock;

/// The CUDA translation of a `#[vectorize]` body (the kernels `{name}_contig` and
/// `{name}_strided`) or of a `#[guvectorize]` core (`{name}_gufunc`).
#[derive(Debug, Clone, Copy)]
pub struct CudaKernel {
    /// Base name of the kernels.
    pub name: &'static str,
    /// The complete source, built once (constants are formatted from their run-time values).
    pub source: fn() -> &'static KernelSource,
    /// Compile with `--use_fast_math` (`fastmath = true`); otherwise `--fmad=false`, so that no
    /// multiply-add is contracted that the CPU targets would not contract.
    pub fast_math: bool,
    /// For a gufunc: how many leading axes of its one output view get a thread per index (0:
    /// one thread per loop item).
    pub mapped_axes: usize,
    /// The `panic!`/`assert!` sites of the body and the helpers it calls, by the code each
    /// stores: the host's messages.
    pub panics: &'static super::panics::PanicTable,
}

/// `const $name: CudaKernel` for a hand-written support source (`$text`, the contents of a
/// `.cuh` file, after the prelude): kernels that cannot panic, compiled without fast math.
macro_rules! support_kernels {
    ($name:ident, $kernel:literal, $text:expr) => {
        const $name: $crate::cuda::CudaKernel = $crate::cuda::CudaKernel {
            name: $kernel,
            source: {
                fn source() -> &'static $crate::cuda::KernelSource {
                    static SOURCE: std::sync::OnceLock<$crate::cuda::KernelSource> =
                        std::sync::OnceLock::new();
                    SOURCE.get_or_init(|| {
                        let prelude = $crate::cuda::cuda_prelude();
                        $crate::cuda::KernelSource::new(format!("{prelude}\n{}", $text))
                    })
                }
                source
            },
            fast_math: false,
            mapped_axes: 0,
            panics: &$crate::cuda::PanicTable::EMPTY,
        };
    };
}
pub(crate) use support_kernels;

/// A generated CUDA source and its hash: loaded modules are known by kernel name and hash.
///
/// ```
/// use ufunc_runtime::KernelSource;
/// let a = KernelSource::new("__global__ void k() {}".into());
/// assert_eq!(a.text(), "__global__ void k() {}");
/// assert_eq!(a.hash(), KernelSource::new(a.text().into()).hash());
/// ```
#[derive(Debug)]
pub struct KernelSource {
    text: String,
    hash: u64,
}

impl KernelSource {
    /// Wraps (and hashes) a source.
    pub fn new(text: String) -> KernelSource {
        let mut h = DefaultHasher::new();
        text.hash(&mut h);
        KernelSource {
            hash: h.finish(),
            text,
        }
    }

    /// The source.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// A hash of the source.
    pub fn hash(&self) -> u64 {
        self.hash
    }
}

/// The device side of a `#[vectorize]` or `#[guvectorize]` function, implemented by the
/// generated code beside the CPU body (`Body`, `GuBody`): its CUDA kernel, where `cuda` is
/// among the function's targets.
pub trait DeviceKernel {
    /// The kernel; `None` for a function not compiled for `cuda`.
    const CUDA: Option<CudaKernel> = None;
}

/// The panics a kernel can raise, by the code it stores in its status flag: the one list the
/// prelude's `__UFUNC_PANIC_*` macros and the runtime's messages both come from.
const PANICS: &[(i32, &str, &str)] = &[
    (1, "DIV_ZERO", "attempt to divide by zero"),
    (2, "DIV_OVERFLOW", "attempt to divide with overflow"),
    (3, "EXPLICIT", "explicit panic"),
    (4, "UNREACHABLE", "entered unreachable code"),
    (5, "INDEX", "index out of bounds"),
];

/// The message of a kernel's panic code, as Rust words it.
pub(crate) fn panic_message(code: i32) -> &'static str {
    PANICS
        .iter()
        .find(|(c, _, _)| *c == code)
        .map_or("a kernel raised an unknown panic code", |(_, _, m)| m)
}

/// Self-contained C++ (NVRTC has no system headers) giving translated bodies Rust's scalar
/// semantics: element typedefs, tuples, complex numbers, math overloads, wrapping integers,
/// panicking division, saturating casts, and `__ufunc_panic`, which stores a panic code in the
/// launch's status word.
///
/// ```
/// let prelude = ufunc_runtime::cuda_prelude();
/// assert!(prelude.contains("#define __UFUNC_PANIC_DIV_ZERO 1"));
/// ```
pub fn cuda_prelude() -> &'static str {
    static PRELUDE: OnceLock<String> = OnceLock::new();
    PRELUDE.get_or_init(|| {
        let mut codes: String = PANICS
            .iter()
            .map(|(code, name, _)| format!("#define __UFUNC_PANIC_{name} {code}\n"))
            .collect();
        codes.push_str(&format!(
            "#define __UFUNC_PANIC_SITE_BASE {}\n#define __UFUNC_HELPER_SITE_BASE {}\n",
            super::panics::SITE_CODE_BASE,
            super::panics::HELPER_SITE_CODE_BASE
        ));
        include_str!("prelude.cuh").replace("// @PANIC_CODES@\n", &codes)
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_panic_code_is_defined_and_worded() {
        let prelude = super::cuda_prelude();
        assert!(!prelude.contains("@PANIC_CODES@"));
        for (code, name, message) in super::PANICS {
            assert!(prelude.contains(&format!("#define __UFUNC_PANIC_{name} {code}\n")));
            assert_eq!(super::panic_message(*code), *message);
        }
    }
}
