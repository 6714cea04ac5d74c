//! The `cuda` target. Without a GPU (CI): every kernel generated here is compiled by a real NVRTC
//! (PTX for compute_90, and a cubin for sm_90 with ptxas's register report), the translation is
//! checked on its text, and calls return `Error::NoCudaDevice`. With a GPU, the same functions
//! run on cpu and cuda and must agree within the stated bound; `UFUNC_REQUIRE_GPU=1` turns the
//! "no device" skip into a failure, and `UFUNC_REQUIRE_NVRTC=1` (or `CI`) the NVRTC skip.

#[path = "../common/mod.rs"]
mod common;

mod agree;
mod cache;
mod convolve;
mod device;
mod differential;
mod fft;
// Written by scripts/kernelgen.py: regenerate rather than reformat.
#[rustfmt::skip]
mod generated;
mod kernels;
mod methods;
// Numba's test kernels, shared with tests/numba_ports.rs (the CPU targets).
#[path = "../numba_kernels/mod.rs"]
#[macro_use]
mod numba_kernels;
mod numba_ports;
mod ports;
mod registration;
mod regressions;
mod reliability;
mod translate;
mod views;

use kernels::square_sum;
use ndarray::array;
use ufunc::prelude::*;

/// Held by every test that may use the device, so that the transfer counters one reads are
/// its own.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1") || std::env::var_os("CI").is_some()
}

/// Runs `check` against a GPU (or the simulator, with UFUNC_CUDA_SIM=1), or reports a visible
/// skip (a failure with UFUNC_REQUIRE_GPU=1). One check at a time: they count transfers.
fn on_gpu(test: &str, check: impl FnOnce()) {
    let _serial = one_at_a_time();
    match square_sum::on(Target::Cuda, &array![1.0f32], 1.0f32) {
        Err(Error::NoCudaDevice { reason }) => {
            assert!(
                std::env::var("UFUNC_REQUIRE_GPU").map_or(true, |v| v != "1"),
                "{test}: a GPU is required (UFUNC_REQUIRE_GPU=1) but: {reason}"
            );
            eprintln!("SKIPPED {test}: no CUDA device ({reason})");
        }
        _ => check(),
    }
}
