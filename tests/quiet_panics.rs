//! Issue 13, item 10: a panicking body is the call's `Err` and prints nothing (Numba prints
//! nothing), while the user's own panic hook still sees the user's other panics. One test in
//! its own binary: the panic hook is process-wide.

use ndarray::Array1;
use std::sync::Mutex;
use ufunc::prelude::*;

static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

#[vectorize(targets = ["cpu", "parallel"])]
fn checked_sqrt(v: f64) -> f64 {
    assert!(v >= 0.0, "Value must be positive");
    v.sqrt()
}

#[guvectorize("(n)->()", targets = ["cpu", "parallel"])]
fn first_positive(a: ArrayView1<f64>, out: &mut f64) {
    for i in 0..a.len() {
        if a[i] > 0.0 {
            *out = a[i];
            return;
        }
    }
    panic!("no positive value");
}

#[test]
fn caught_panics_are_quiet_and_the_users_hook_still_fires() {
    // The user's hook, set before any ufunc call; it records instead of printing, so a
    // message reaching it is what the default hook would have printed to stderr.
    std::panic::set_hook(Box::new(|info| {
        SEEN.lock().unwrap().push(info.to_string());
    }));
    let mut big = Array1::from_elem(1 << 18, 1.0);
    big[(1 << 18) - 5] = -1.0;
    let rows = ndarray::Array2::from_elem((4096, 8), -1.0);
    for target in [Target::Cpu, Target::Parallel] {
        match checked_sqrt::on(target, &big) {
            Err(Error::KernelPanic { message, .. }) => {
                assert_eq!(message, "Value must be positive")
            }
            other => panic!("{target:?}: expected a kernel panic, got {other:?}"),
        }
        match first_positive::on(target, &rows) {
            Err(Error::KernelPanic { message, .. }) => assert_eq!(message, "no positive value"),
            other => panic!("{target:?}: expected a kernel panic, got {other:?}"),
        }
    }
    assert!(
        SEEN.lock().unwrap().is_empty(),
        "caught panics reached the hook: {:?}",
        SEEN.lock().unwrap()
    );
    // The user's own panics, outside any ufunc call (also on a rayon worker), still reach it.
    let _ = std::panic::catch_unwind(|| panic!("mine"));
    let _ = std::thread::spawn(|| panic!("on a thread")).join();
    let seen = SEEN.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(
        seen[0].contains("mine") && seen[1].contains("on a thread"),
        "{seen:?}"
    );
}
