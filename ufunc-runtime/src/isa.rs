//! Instruction-set selection: which compiled copy of a loop runs, chosen once per process.
//!
//! Every ufunc loop is instantiated inside one `#[target_feature]` entry function per instruction
//! set (AVX-512, AVX2+FMA, SSE2 on x86-64; NEON on aarch64). The loop body is `#[inline(always)]`
//! all the way down, so it is compiled, and vectorized, for that entry's features. The best entry
//! the CPU supports is picked at run time; `UFUNC_ISA=avx512|avx2|sse2|neon|scalar` overrides the
//! choice (for tests and benchmarks) as long as the CPU supports it.

use std::sync::atomic::{AtomicU8, Ordering};

/// A compile-time description of the instruction set a lane body is instantiated for.
pub trait Isa: Copy + 'static {
    /// Whether a fused multiply-add instruction is available (math functions use it when so).
    const FMA: bool;
}

/// Instruction sets with fused multiply-add (AVX2+FMA, AVX-512, NEON).
#[derive(Clone, Copy, Debug)]
pub struct WithFma;
impl Isa for WithFma {
    const FMA: bool = true;
}

/// Instruction sets without fused multiply-add (SSE2, generic targets).
#[derive(Clone, Copy, Debug)]
pub struct NoFma;
impl Isa for NoFma {
    const FMA: bool = false;
}

/// The instruction-set levels this build knows, best last.
///
/// ```
/// use ufunc_runtime::IsaLevel;
/// assert!(IsaLevel::Baseline.is_supported());
/// assert_eq!(IsaLevel::supported()[0], IsaLevel::Baseline);
/// assert_eq!(IsaLevel::Avx2.name(), "avx2");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum IsaLevel {
    /// Portable code for the build's baseline target (SSE2 on x86-64).
    Baseline,
    /// x86-64 AVX2 with FMA.
    Avx2,
    /// x86-64 AVX-512 F/BW/CD/DQ/VL with FMA.
    Avx512,
    /// aarch64 Advanced SIMD (always present there), with FMA.
    Neon,
}

impl IsaLevel {
    /// The name accepted by `UFUNC_ISA`.
    pub const fn name(self) -> &'static str {
        match self {
            IsaLevel::Baseline => "baseline",
            IsaLevel::Avx2 => "avx2",
            IsaLevel::Avx512 => "avx512",
            IsaLevel::Neon => "neon",
        }
    }

    /// Whether the running CPU can execute this level.
    pub fn is_supported(self) -> bool {
        match self {
            IsaLevel::Baseline => true,
            #[cfg(target_arch = "x86_64")]
            IsaLevel::Avx2 => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
            #[cfg(target_arch = "x86_64")]
            IsaLevel::Avx512 => {
                IsaLevel::Avx2.is_supported()
                    && is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512bw")
                    && is_x86_feature_detected!("avx512cd")
                    && is_x86_feature_detected!("avx512dq")
                    && is_x86_feature_detected!("avx512vl")
            }
            #[cfg(target_arch = "aarch64")]
            IsaLevel::Neon => true,
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// Every level the running CPU supports, baseline first.
    pub fn supported() -> Vec<IsaLevel> {
        [
            IsaLevel::Baseline,
            IsaLevel::Avx2,
            IsaLevel::Avx512,
            IsaLevel::Neon,
        ]
        .into_iter()
        .filter(|l| l.is_supported())
        .collect()
    }

    fn from_u8(v: u8) -> IsaLevel {
        match v {
            1 => IsaLevel::Avx2,
            2 => IsaLevel::Avx512,
            3 => IsaLevel::Neon,
            _ => IsaLevel::Baseline,
        }
    }

    fn to_u8(self) -> u8 {
        match self {
            IsaLevel::Baseline => 0,
            IsaLevel::Avx2 => 1,
            IsaLevel::Avx512 => 2,
            IsaLevel::Neon => 3,
        }
    }
}

const UNSET: u8 = u8::MAX;
static ACTIVE: AtomicU8 = AtomicU8::new(UNSET);

/// The level ufunc loops run at: the best the CPU supports, or `UFUNC_ISA` if set and supported.
///
/// ```
/// let level = ufunc_runtime::active_isa();
/// assert!(level.is_supported());
/// ```
pub fn active_isa() -> IsaLevel {
    let v = ACTIVE.load(Ordering::Relaxed);
    if v != UNSET {
        return IsaLevel::from_u8(v);
    }
    let level = detect();
    ACTIVE.store(level.to_u8(), Ordering::Relaxed);
    level
}

/// Forces the level ufunc loops run at (tests and benchmarks compare levels this way).
/// Returns `false`, changing nothing, if the CPU does not support `level`.
///
/// ```
/// use ufunc_runtime::{set_active_isa, IsaLevel};
/// assert!(set_active_isa(IsaLevel::Baseline));
/// ```
pub fn set_active_isa(level: IsaLevel) -> bool {
    if !level.is_supported() {
        return false;
    }
    ACTIVE.store(level.to_u8(), Ordering::Relaxed);
    true
}

fn detect() -> IsaLevel {
    let best = *IsaLevel::supported()
        .last()
        .expect("baseline is always supported");
    match std::env::var("UFUNC_ISA") {
        Ok(wanted) => requested_isa(&wanted, &IsaLevel::supported()).unwrap_or_else(|why| {
            eprintln!("ufunc: UFUNC_ISA ignored: {why}; using `{}`", best.name());
            best
        }),
        Err(_) => best,
    }
}

/// The level `UFUNC_ISA=wanted` asks for among the `supported` ones, or why it cannot be had.
fn requested_isa(wanted: &str, supported: &[IsaLevel]) -> Result<IsaLevel, String> {
    const ALL: [IsaLevel; 4] = [
        IsaLevel::Baseline,
        IsaLevel::Avx2,
        IsaLevel::Avx512,
        IsaLevel::Neon,
    ];
    let names = |levels: &[IsaLevel]| {
        levels
            .iter()
            .map(|l| format!("`{}`", l.name()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match ALL.iter().find(|l| l.name() == wanted) {
        None => Err(format!(
            "`{wanted}` is not a level; expected one of {}",
            names(&ALL)
        )),
        Some(l) if !supported.contains(l) => Err(format!(
            "this CPU does not support `{wanted}`; it supports {}",
            names(supported)
        )),
        Some(l) => Ok(*l),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_or_unsupported_requests_say_what_is_valid() {
        let supported = [IsaLevel::Baseline, IsaLevel::Avx2];
        assert_eq!(requested_isa("avx2", &supported), Ok(IsaLevel::Avx2));
        assert_eq!(
            requested_isa("sse2", &supported).unwrap_err(),
            "`sse2` is not a level; expected one of `baseline`, `avx2`, `avx512`, `neon`"
        );
        assert_eq!(
            requested_isa("avx512", &supported).unwrap_err(),
            "this CPU does not support `avx512`; it supports `baseline`, `avx2`"
        );
    }
}
