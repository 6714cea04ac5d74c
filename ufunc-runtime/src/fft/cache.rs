//! The process-wide plan cache: one rustfft and one realfft planner per float type, behind a
//! mutex. The planners keep every plan they made, keyed by length and direction, so the plain
//! functions plan each length once per process.

use super::FftReal;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::{Fft, FftDirection, FftPlanner};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

struct Planners<T: FftReal> {
    complex: FftPlanner<T>,
    real: RealFftPlanner<T>,
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
        })
    });
    match entry.downcast_mut::<Planners<T>>() {
        Some(p) => f(p),
        None => unreachable!("the entry of a type id holds that type's planners"),
    }
}

/// The complex transform of length `n` in `direction`, planned once per process.
pub(crate) fn complex<T: FftReal>(n: usize, direction: FftDirection) -> Arc<dyn Fft<T>> {
    with_planners::<T, _>(|p| p.complex.plan_fft(n, direction))
}

/// The real-to-complex transform of `n` real points.
pub(crate) fn real_forward<T: FftReal>(n: usize) -> Arc<dyn RealToComplex<T>> {
    with_planners::<T, _>(|p| p.real.plan_fft_forward(n))
}

/// The complex-to-real transform giving `n` real points.
pub(crate) fn real_inverse<T: FftReal>(n: usize) -> Arc<dyn ComplexToReal<T>> {
    with_planners::<T, _>(|p| p.real.plan_fft_inverse(n))
}
