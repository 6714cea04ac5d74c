//! The process-wide plan cache: one rustfft and one realfft planner per float type, behind a
//! mutex, and the real transforms of even length made here on the complex ones. Every plan is
//! kept, keyed by length and direction, so the plain functions plan each length once per
//! process.

use super::real::{Forward, Inverse};
use super::FftReal;
use crate::error::{Error, Result};
use num_complex::Complex;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::{Fft, FftDirection, FftPlanner};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

struct Planners<T: FftReal> {
    complex: FftPlanner<T>,
    /// The real transforms of odd length.
    real: RealFftPlanner<T>,
    forward: HashMap<usize, Arc<dyn RealToComplex<T>>>,
    inverse: HashMap<usize, Arc<dyn ComplexToReal<T>>>,
}

/// The planners of every float type, found by the type's id.
static PLANNERS: OnceLock<Mutex<HashMap<TypeId, Box<dyn Any + Send>>>> = OnceLock::new();

fn with_planners<T: FftReal, R>(f: impl FnOnce(&mut Planners<T>) -> R) -> R {
    let map = PLANNERS.get_or_init(Default::default);
    // A panic while planning leaves the planners usable: they only ever gain entries.
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    let entry = map.entry(TypeId::of::<T>()).or_insert_with(|| {
        Box::new(Planners::<T> {
            complex: FftPlanner::new(),
            real: RealFftPlanner::new(),
            forward: HashMap::new(),
            inverse: HashMap::new(),
        })
    });
    match entry.downcast_mut::<Planners<T>>() {
        Some(p) => f(p),
        None => unreachable!("the entry of a type id holds that type's planners"),
    }
}

/// An error where a plan of `n` points could not be allocated: rustfft allocates its twiddles
/// (`n` complex numbers or more) infallibly, and a failure there aborts the process (a
/// transform of 2^44 points, asked for by a convolution whose result is small, say). The
/// probe reserves `n` elements, the least a plan takes, so a size it lets through may still
/// be too large; and where the kernel grants any reservation (`vm.overcommit_memory = 1`)
/// only lengths beyond the address space are caught.
fn plannable<T: FftReal>(n: usize) -> Result<()> {
    let mut probe: Vec<Complex<T>> = Vec::new();
    // Reserved, never written: no page is touched.
    probe.try_reserve_exact(n).map_err(|_| Error::OutOfMemory {
        shape: vec![n],
        bytes: n.saturating_mul(size_of::<Complex<T>>()),
    })
}

/// The complex transform of length `n` in `direction`, planned once per process.
pub(crate) fn complex<T: FftReal>(n: usize, direction: FftDirection) -> Result<Arc<dyn Fft<T>>> {
    plannable::<T>(n)?;
    Ok(with_planners::<T, _>(|p| p.complex.plan_fft(n, direction)))
}

/// The real-to-complex transform of `n` real points.
pub(crate) fn real_forward<T: FftReal>(n: usize) -> Result<Arc<dyn RealToComplex<T>>> {
    plannable::<T>(n)?;
    Ok(with_planners::<T, _>(|p| {
        if n % 2 == 1 || n == 0 {
            return p.real.plan_fft_forward(n);
        }
        let complex = &mut p.complex;
        let plan = p
            .forward
            .entry(n)
            .or_insert_with(|| Arc::new(Forward::new(n, complex.plan_fft_forward(n / 2))));
        Arc::clone(plan)
    }))
}

/// The complex-to-real transform giving `n` real points.
pub(crate) fn real_inverse<T: FftReal>(n: usize) -> Result<Arc<dyn ComplexToReal<T>>> {
    plannable::<T>(n)?;
    Ok(with_planners::<T, _>(|p| {
        if n % 2 == 1 || n == 0 {
            return p.real.plan_fft_inverse(n);
        }
        let complex = &mut p.complex;
        let plan = p
            .inverse
            .entry(n)
            .or_insert_with(|| Arc::new(Inverse::new(n, complex.plan_fft_inverse(n / 2))));
        Arc::clone(plan)
    }))
}
