//! Where a ufunc runs.

use std::fmt;

/// The execution target of a ufunc, fixed in `#[vectorize(target = ...)]` or chosen at call time
/// with `f::on(target, ...)` among the function's `targets`.
///
/// ```
/// use ufunc_runtime::Target;
/// assert_eq!(Target::Parallel.to_string(), "parallel");
/// assert_eq!("cpu".parse::<Target>(), Ok(Target::Cpu));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Target {
    /// One thread, SIMD.
    Cpu,
    /// All cores (rayon), SIMD on each.
    Parallel,
    /// An NVIDIA GPU: the body translated to CUDA C++ and compiled with NVRTC.
    Cuda,
}

impl Target {
    /// The name used in `#[vectorize(target = "...")]`.
    pub const fn name(self) -> &'static str {
        match self {
            Target::Cpu => "cpu",
            Target::Parallel => "parallel",
            Target::Cuda => "cuda",
        }
    }
}

/// `Ok` if `target` is among the targets `function` was compiled for.
pub(crate) fn ensure_compiled(
    function: &'static str,
    target: Target,
    compiled: &'static [Target],
) -> crate::Result<()> {
    if compiled.contains(&target) {
        Ok(())
    } else {
        Err(crate::Error::TargetNotCompiled {
            function,
            target,
            compiled,
        })
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "cpu" => Ok(Target::Cpu),
            "parallel" => Ok(Target::Parallel),
            "cuda" => Ok(Target::Cuda),
            other => Err(format!(
                "unknown target `{other}`; expected `cpu`, `parallel` or `cuda`"
            )),
        }
    }
}
