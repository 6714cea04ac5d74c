//! The `cuda` target under hostile input: sizes that overflow, a kernel cache whose files were
//! damaged or swapped, and cache directories that cannot be used. The cache cases run the
//! simulator in child processes (each with its own `UFUNC_CACHE_DIR`), so they run in CI.

use super::kernels::*;
use super::on_gpu;
use ndarray::array;
use std::path::{Path, PathBuf};
use std::process::Command;
use ufunc::prelude::*;

#[test]
fn huge_device_views_are_errors_not_tiny_buffers() {
    on_gpu("huge_device_views_are_errors_not_tiny_buffers", || {
        let d = ufunc::cuda::to_device(&array![1.0f64]).unwrap();
        // 2^61 f64: the byte size overflows; the call must not allocate a wrapped size.
        let v = d.view().broadcast(1usize << 61).unwrap();
        let e = fused_poly::on_device(v.clone()).unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{e}");
        let e = v.copy_to_host().unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    });
}

/// Run by the tests below in a child process: one simulated call of `UFUNC_TEST_KERNEL`,
/// checked, then the compile count.
#[test]
fn sim_cache_child() {
    let Ok(kernel) = std::env::var("UFUNC_TEST_KERNEL") else {
        return;
    };
    let x = array![1.0f32, 2.0, 3.0];
    match kernel.as_str() {
        "square_sum" => {
            let y = square_sum::on(Target::Cuda, &x, 1.0f32).unwrap();
            assert_eq!(y, array![4.0f32, 9.0, 16.0]);
        }
        _ => {
            let y = gaussian_pdf::on(Target::Cuda, &x, 0.0f32, 1.0f32).unwrap();
            let z = gaussian_pdf::on(Target::Cpu, &x, 0.0f32, 1.0f32).unwrap();
            assert!(y.iter().zip(&z).all(|(a, b)| (a - b).abs() < 1e-6));
        }
    }
    println!("COMPILES={}", ufunc::cuda::cuda_counters().compiles);
}

/// Runs `sim_cache_child` for `kernel` with `cache` as `UFUNC_CACHE_DIR`; returns its compile
/// count and stderr.
fn child(kernel: &str, cache: &Path) -> (usize, String) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "reliability::sim_cache_child", "--nocapture"])
        .env("UFUNC_TEST_KERNEL", kernel)
        .env("UFUNC_CUDA_SIM", "1")
        .env("UFUNC_CACHE_DIR", cache)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}{stderr}");
    let compiles = stdout
        .lines()
        .find_map(|l| l.split("COMPILES=").nth(1))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count in {stdout}"));
    (compiles, stderr)
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ufunc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The one entry a cache directory holds.
fn only_entry(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

#[test]
fn damaged_or_swapped_cache_entries_are_rebuilt() {
    let (dir, other) = (temp_dir("cache-damaged"), temp_dir("cache-other"));
    assert_eq!(child("square_sum", &dir).0, 1, "a cold cache builds");
    assert_eq!(
        child("square_sum", &dir).0,
        0,
        "a warm cache builds nothing"
    );
    let entry = only_entry(&dir);
    let good = std::fs::read(&entry).unwrap();
    assert_eq!(child("gaussian_pdf", &other).0, 1);
    let swapped = std::fs::read(only_entry(&other)).unwrap();
    let mut random = good.clone();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for b in &mut random {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        *b = state as u8;
    }
    let damages: [(&str, Vec<u8>); 4] = [
        ("random bytes", random),
        ("truncated to half", good[..good.len() / 2].to_vec()),
        ("empty", Vec::new()),
        ("another function's valid entry", swapped),
    ];
    for (what, bytes) in damages {
        std::fs::write(&entry, bytes).unwrap();
        assert_eq!(child("square_sum", &dir).0, 1, "{what}: rebuilt");
        assert_eq!(
            child("square_sum", &dir).0,
            0,
            "{what}: the entry was repaired"
        );
    }
    // A directory where the entry should be: the call still works, from memory.
    std::fs::remove_file(&entry).unwrap();
    std::fs::create_dir(&entry).unwrap();
    let (compiles, stderr) = child("square_sum", &dir);
    assert_eq!(compiles, 1);
    assert!(stderr.contains("cannot write the kernel cache"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&other);
}

#[test]
fn an_unusable_cache_directory_costs_one_warning() {
    // Not creatable, even by root; and a regular file where a directory should be.
    for dir in ["/proc/ufunc-no-such-dir/kernels", "/proc/self/status"] {
        let (compiles, stderr) = child("square_sum", Path::new(dir));
        assert_eq!(compiles, 1, "{dir}");
        assert_eq!(
            stderr
                .matches("ufunc: cannot write the kernel cache")
                .count(),
            1,
            "{dir}: {stderr}"
        );
    }
}

/// Run by `an_empty_cache_variable_means_unset` in a child process.
#[test]
fn cache_dir_child() {
    if std::env::var_os("UFUNC_TEST_CACHE_DIR_CHILD").is_none() {
        return;
    }
    println!("DIR={:?}", ufunc::cuda::kernel_cache_dir());
}

#[test]
fn an_empty_cache_variable_means_unset() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "reliability::cache_dir_child", "--nocapture"])
        .env("UFUNC_TEST_CACHE_DIR_CHILD", "1")
        .env("UFUNC_CACHE_DIR", "")
        .env("XDG_CACHE_HOME", "/xdg")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(r#"DIR=Some("/xdg/ufunc/kernels")"#),
        "{stdout}"
    );
}

#[test]
fn each_launch_reports_its_own_panic() {
    on_gpu("each_launch_reports_its_own_panic", || {
        use ndarray::Array1;
        use ufunc::cuda::Stream;
        let a = Array1::from_shape_fn(64, |i| i as i32 + 1);
        let good = Array1::from_elem(64, 3i32);
        let mut bad = good.clone();
        bad[17] = 0;
        let expected = int_ops::on(Target::Cpu, &a, &good).unwrap();
        // Many threads, panicking and good calls of the same kernel interleaved.
        std::thread::scope(|s| {
            for t in 0..6 {
                let (a, good, bad, expected) = (&a, &good, &bad, &expected);
                s.spawn(move || {
                    for k in 0..12 {
                        let panics = (t + k) % 3 == 0;
                        let r = int_ops::on(Target::Cuda, a, if panics { bad } else { good });
                        match r {
                            Err(Error::KernelPanic { message, .. }) if panics => {
                                assert_eq!(message, "attempt to divide by zero")
                            }
                            Ok(y) if !panics => assert_eq!(&y, expected),
                            other => panic!("thread {t} call {k} (panics: {panics}): {other:?}"),
                        }
                    }
                });
            }
        });
        // A panic queued on one stream belongs to that stream alone.
        let (s1, s2) = (Stream::new().unwrap(), Stream::new().unwrap());
        int_ops::on_stream(&s1, &a, &bad).unwrap();
        assert_eq!(int_ops::on(Target::Cuda, &a, &good).unwrap(), expected);
        let y = int_ops::on_stream(&s2, &a, &good).unwrap();
        s2.synchronize().unwrap();
        assert_eq!(y.copy_to_host().unwrap(), expected);
        assert!(matches!(s1.synchronize(), Err(Error::KernelPanic { .. })));
        s1.synchronize().unwrap();
        // A stream dropped with a pending panic poisons nothing.
        {
            let s3 = Stream::new().unwrap();
            int_ops::on_stream(&s3, &a, &bad).unwrap();
        }
        assert_eq!(int_ops::on(Target::Cuda, &a, &good).unwrap(), expected);
    });
}

#[test]
fn many_threads_with_their_own_streams_each_get_their_own_results() {
    on_gpu("many_threads_with_their_own_streams", || {
        use ndarray::Array1;
        use ufunc::cuda::Stream;
        let a = Array1::from_shape_fn(257, |i| i as i32 - 100);
        std::thread::scope(|s| {
            for t in 0..8i32 {
                let a = &a;
                s.spawn(move || {
                    let stream = Stream::new().unwrap();
                    // Each call is queued with its own divisor; every third one divides by zero.
                    let mut queued = Vec::new();
                    for k in 0..9i32 {
                        let divisor = if (t + k) % 3 == 0 { 0 } else { t + k };
                        let b = Array1::from_elem(a.len(), divisor);
                        let y = int_ops::on_stream(&stream, a, &b).unwrap();
                        let panics = divisor == 0;
                        if panics {
                            // The panic is the stream's, reported once by its synchronize.
                            let e = stream.synchronize().unwrap_err();
                            assert!(matches!(e, Error::KernelPanic { .. }), "{e:?}");
                            stream.synchronize().unwrap();
                        } else {
                            queued.push((y, int_ops::on(Target::Cpu, a, &b).unwrap()));
                        }
                    }
                    stream.synchronize().unwrap();
                    for (device, host) in queued {
                        assert_eq!(device.copy_to_host().unwrap(), host, "thread {t}");
                    }
                });
            }
        });
    });
}
