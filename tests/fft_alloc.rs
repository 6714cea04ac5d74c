//! Plan reuse allocates nothing: a counting global allocator (this test binary's own) around
//! repeated `execute_into` and `execute_inplace` calls of held plans on the `cpu` target.
//! Only the calling thread's allocations count: other threads of the process (the test
//! harness's, a thread pool starting up) allocate when they please.

use ndarray::{Array2, Array3};
use num_complex::Complex;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use ufunc::fft::{FftOptions, FftPlan};
use ufunc::Target;

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether this thread's allocations are being counted.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn count() {
    if COUNTING.with(Cell::get) {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
    }
}

// SAFETY: forwards to the system allocator, counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The allocations this thread makes in `f`.
fn allocations_of(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.load(Ordering::SeqCst) - before
}

#[test]
fn a_second_call_allocates_nothing() {
    let cpu = FftOptions::new().target(Target::Cpu);
    let image = Array2::from_shape_fn((96, 80), |(y, x)| ((y * 7 + x * 3) % 11) as f32);
    let forward = FftPlan::rfftn(&[96, 80], &cpu).unwrap();
    // A padded inverse: its column pass needs a temporary, held by the plan.
    let inverse = FftPlan::irfftn(&[96, 41], &cpu.clone().s(&[100, 80])).unwrap();
    let mut spectrum = Array2::<Complex<f32>>::zeros((96, 41));
    let mut back = Array2::<f32>::zeros((100, 80));
    let mut volume = Array3::<Complex<f64>>::from_elem((6, 10, 14), Complex::new(1.0, -0.5));
    let complex = FftPlan::fftn(&[6, 10, 14], &cpu).unwrap();
    let mut run = || {
        forward.execute_into(&image, &mut spectrum).unwrap();
        inverse.execute_into(&spectrum, &mut back).unwrap();
        complex.execute_inplace(&mut volume).unwrap();
        forward
            .execute_into(&image.t().t(), &mut spectrum.view_mut())
            .unwrap();
    };
    run(); // The first call sizes the scratch.
    assert_eq!(
        allocations_of(&mut run),
        0,
        "a second call of held plans allocates"
    );
    // `execute` allocates its output and nothing else.
    let n = allocations_of(|| drop(forward.execute(&image).unwrap()));
    assert_eq!(n, 1, "execute: only the output");
}
