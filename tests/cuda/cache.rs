//! Compiled kernels cached in memory and on disk, transfers counted, the simulator's compiler.

use super::kernels::*;
use super::{on_gpu, required};
use ndarray::{array, Array1};
use ufunc::prelude::*;

#[test]
fn transfers_are_counted_and_kernels_cached() {
    on_gpu("transfers_are_counted_and_kernels_cached", || {
        let x = Array1::from_elem(1000, 1.0f32);
        let _ = square_sum::on(Target::Cuda, &x, &x).unwrap();
        let before = ufunc::cuda::cuda_counters();
        let _ = square_sum::on(Target::Cuda, &x, &x).unwrap();
        let after = ufunc::cuda::cuda_counters();
        assert_eq!(after.host_to_device - before.host_to_device, 2);
        assert_eq!(after.device_to_host - before.device_to_host, 1);
        assert_eq!(
            after.compiles, before.compiles,
            "the second call compiles nothing"
        );
    });
}

/// Run by `a_second_process_compiles_nothing` in a child process: compiles (or loads from the
/// disk cache) one kernel and prints how many NVRTC compilations that took.
#[test]
fn cache_child() {
    let Some(dir) = std::env::var_os("UFUNC_TEST_CACHE_CHILD") else {
        return;
    };
    assert_eq!(
        Some(std::path::PathBuf::from(&dir)),
        ufunc::cuda::kernel_cache_dir()
    );
    let cubin = ufunc::cuda::cached_cubin(&gaussian_pdf::cuda_source(), "sm_90", &["--fmad=false"])
        .unwrap();
    assert!(cubin.starts_with(b"\x7fELF"));
    println!("NVRTC_COMPILES={}", ufunc::cuda::cuda_counters().compiles);
}

#[test]
fn a_second_process_compiles_nothing() {
    if !ufunc::cuda::nvrtc_available() {
        assert!(!required("UFUNC_REQUIRE_NVRTC"), "NVRTC is required here");
        eprintln!("SKIPPED a_second_process_compiles_nothing: libnvrtc.so.13 not found");
        return;
    }
    let dir = std::env::temp_dir().join(format!("ufunc-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = || {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "cache::cache_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("UFUNC_CACHE_DIR", &dir)
            .env("UFUNC_TEST_CACHE_CHILD", &dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text.lines()
            .find_map(|l| l.split("NVRTC_COMPILES=").nth(1))
            .map(|n| n.trim().parse::<usize>().unwrap())
            .unwrap()
    };
    assert_eq!(run(), 1, "a cold cache compiles once");
    assert_eq!(run(), 0, "a second process loads the cubin from disk");
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(files.len(), 1, "one cubin, no leftover temporary files");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Run by `the_simulator_reports_its_compiler_failing` in a child process.
#[test]
fn sim_child() {
    if std::env::var_os("UFUNC_TEST_SIM_CHILD").is_none() {
        return;
    }
    let e = square_sum::on(Target::Cuda, &array![1.0f32], 1.0f32).unwrap_err();
    println!("SIM_ERROR={e}");
}

#[test]
fn the_simulator_reports_its_compiler_failing() {
    let dir = std::env::temp_dir().join(format!("ufunc-sim-test-{}", std::process::id()));
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "cache::sim_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("UFUNC_TEST_SIM_CHILD", "1")
        .env("UFUNC_CUDA_SIM", "1")
        .env("CXX", "/nonexistent/c++")
        .env("UFUNC_CACHE_DIR", &dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        text.contains("SIM_ERROR=the CUDA simulator's compiler `/nonexistent/c++` failed")
            && text.contains("cannot run `/nonexistent/c++`")
            && text.contains("--- source ---"),
        "{text}"
    );
}
