//! `#[vectorize]` benchmarks, run side by side with NumPy, numexpr and Numba by `bench/run.sh`.
//!
//! `cargo bench --bench vectorize -- [--json] [--quick] [--suffix S]`: prints a table, or one JSON
//! object per measurement (`{"case", "n", "impl", "ms" | "ns", ["gbps"]}`) for `bench/report.py`.

mod common;
use ndarray::{Array1, Array2};
use rayon::prelude::*;
use std::hint::black_box;
use ufunc::prelude::*;

// The seeds' bodies are the example's own, so that what is measured is what users copy.
#[path = "../examples/vectorize.rs"]
#[allow(dead_code)]
mod seeds;

use seeds::{foo as square_sum, gaussian_pdf, polar_distance};

#[vectorize(targets = ["cpu", "parallel"])]
fn hypot_like(a: f32, b: f32) -> f32 {
    let x = a.abs();
    let y = b.abs();
    let hi = x.max(y);
    let lo = x.min(y);
    let t = lo / hi.max(f32::MIN_POSITIVE);
    hi * (1.0 + t * t).sqrt()
}

/// Declared associative, so that `accumulate` may run as a blocked, parallel scan (NumPy's
/// `add.accumulate` is a running sum; ours regroups as its `add.reduce` does).
#[vectorize(targets = ["cpu", "parallel"], identity = 0.0, associative = true)]
fn add(a: f32, b: f32) -> f32 {
    a + b
}

/// NumPy's `maximum`: NaN propagates. Reorderable, as NumPy's, so `reduce` may regroup it.
#[vectorize(targets = ["cpu", "parallel"], associative = true)]
fn maximum(a: f32, b: f32) -> f32 {
    if a > b || a.is_nan() {
        a
    } else {
        b
    }
}

/// The ufunc methods: `add.reduce` of 16M float32 over all axes and over each axis of a
/// 4000x4000 array, `maximum.reduce` of all, `add.accumulate` of 16M (GB/s of the bytes read,
/// and written for `accumulate`), and `add.at` of 2^22 points into 512x512 bins.
///
/// Each case runs on input in 4 KiB pages (a plain `Vec`'s memory, this host's default) and on
/// the same input in transparent huge pages, the memory NumPy gives its own large arrays (it
/// asks for huge pages on Linux for arrays of 4 MiB and more): the `-hugepages` rows compare
/// with NumPy reading the same kind of memory.
fn methods(b: &Bench) {
    for huge in [false, true] {
        methods_on(b, huge);
    }
}

fn methods_on(b: &Bench, huge: bool) {
    let n = 16_000_000;
    let flat = if huge {
        in_huge_pages(&data(n, 9))
    } else {
        data(n, 9)
    };
    let square = flat.view().into_shape_with_order((4000, 4000)).unwrap();
    let mut triad = Triad::new(n, huge);
    let cases: [(&str, &dyn Fn(Target)); 5] = [
        ("add_reduce_all", &|t| {
            black_box(add::reduce_on(t, &flat, 0).unwrap());
        }),
        ("add_reduce_axis0", &|t| {
            black_box(add::reduce_on(t, square, 0).unwrap());
        }),
        ("add_reduce_axis1", &|t| {
            black_box(add::reduce_on(t, square, 1).unwrap());
        }),
        ("max_reduce_all", &|t| {
            black_box(maximum::reduce_on(t, &flat, 0).unwrap());
        }),
        ("add_accumulate", &|t| {
            black_box(add::accumulate_on(t, &flat, 0).unwrap());
        }),
    ];
    for (case, call) in cases {
        if !b.wanted(case) {
            continue;
        }
        let bytes = if case == "add_accumulate" {
            8 * n
        } else {
            4 * n
        };
        let pages = if huge { "-hugepages" } else { "" };
        let ms = b.time(|| call(Target::Cpu));
        let gbps = Some(bytes as f64 / ms / 1e6);
        b.report(case, n, &format!("ufunc-cpu{pages}"), ms, gbps);
        let (ms, of_triad) = triad.interleaved(b, bytes, || call(Target::Parallel));
        b.report_of_triad(
            case,
            n,
            &format!("ufunc-parallel{pages}"),
            ms,
            bytes,
            of_triad,
        );
        if case == "add_accumulate" {
            // Into a preallocated output, as the triad writes: a fresh 64 MB output costs its
            // page faults (zeroing) on every call.
            let mut out = flat.clone();
            let ms = b.time(|| add::accumulate_out_on(Target::Cpu, &flat, 0, &mut out).unwrap());
            let gbps = Some(bytes as f64 / ms / 1e6);
            b.report(case, n, &format!("ufunc-cpu-out{pages}"), ms, gbps);
            let (ms, of_triad) = triad.interleaved(b, bytes, || {
                add::accumulate_out_on(Target::Parallel, &flat, 0, &mut out).unwrap()
            });
            let imp = format!("ufunc-parallel-out{pages}");
            b.report_of_triad(case, n, &imp, ms, bytes, of_triad);
        }
    }
    if !huge && (b.wanted("add_at") || b.wanted("add_at_2d")) {
        // A weighted histogram: 2^22 points into 512x512 float32 bins by flat index
        // (`np.add.at(h, idx, w)`) and by (row, column) (`np.add.at(h, (y, x), w)`).
        let points = 1 << 22;
        let weights = flat.slice(ndarray::s![..points]);
        let coordinate = |seed| data(points, seed).mapv(|v| ((v + 2.0) * 128.0) as i64 % 512);
        let (ys, xs) = (coordinate(3), coordinate(4));
        let index = &ys * 512 + &xs;
        let mut bins = Array2::<f32>::zeros((512, 512));
        if b.wanted("add_at") {
            let mut flat_bins = Array1::<f32>::zeros(512 * 512);
            let ms = b.time(|| add::at(&mut flat_bins, &index, weights).unwrap());
            b.report("add_at", points, "ufunc-cpu", ms, None);
        }
        if b.wanted("add_at_2d") {
            let ms = b.time(|| add::at(&mut bins, (&ys, &xs), weights).unwrap());
            b.report("add_at_2d", points, "ufunc-cpu", ms, None);
        }
    }
    if b.wanted("add_accumulate_l2") && !huge {
        // 64K float32 in and out (512 KiB), in cache: the scan's own speed, not memory's.
        let small = flat.slice(ndarray::s![..65_536]).to_owned();
        let mut out = small.clone();
        let calls = 100;
        let ms = b.time(|| {
            for _ in 0..calls {
                add::accumulate_out_on(Target::Cpu, &small, 0, &mut out).unwrap();
            }
        }) / calls as f64;
        let gbps = Some(8.0 * 65_536.0 / ms / 1e6);
        b.report("add_accumulate_l2", 65_536, "ufunc-cpu-out", ms, gbps);
    }
}

/// The triad `z = x + s * y` on every rayon thread (two here), on arrays in the same kind of
/// pages as a case's input,
/// timed in turn with the case: the goal is a fraction of the triad's bandwidth, and on
/// a shared host both drift by tens of percent within seconds, so each case is compared with
/// the triad run just before it rather than with one measured a minute earlier.
struct Triad {
    x: Array1<f32>,
    y: Array1<f32>,
    z: Array1<f32>,
}

impl Triad {
    fn new(n: usize, huge: bool) -> Triad {
        let pages = |a: Array1<f32>| if huge { in_huge_pages(&a) } else { a };
        Triad {
            x: pages(data(n, 1)),
            y: pages(data(n, 2)),
            z: pages(Array1::zeros(n)),
        }
    }

    /// Bytes moved per run, as STREAM counts them (two reads and a write).
    fn bytes(&self) -> usize {
        12 * self.x.len()
    }

    /// `z = x + 1.5 y` over `z`, `x` and `y` alike.
    fn kernel(z: &mut [f32], x: &[f32], y: &[f32]) {
        for ((z, x), y) in z.iter_mut().zip(x).zip(y) {
            *z = x + 1.5 * y;
        }
    }

    /// The triad on one thread.
    fn run_serial(&mut self) {
        let (x, y) = (self.x.as_slice().unwrap(), self.y.as_slice().unwrap());
        Triad::kernel(self.z.as_slice_mut().unwrap(), x, y);
    }

    /// The triad on rayon's threads.
    fn run(&mut self) {
        let chunk = self.x.len().div_ceil(rayon::current_num_threads() * 4);
        let (x, y) = (self.x.as_slice().unwrap(), self.y.as_slice().unwrap());
        self.z
            .as_slice_mut()
            .unwrap()
            .par_chunks_mut(chunk)
            .zip(x.par_chunks(chunk).zip(y.par_chunks(chunk)))
            .for_each(|(z, (x, y))| Triad::kernel(z, x, y));
    }

    /// Runs the triad and `case` in turn, `3 * reps` times each after a warm-up, and returns
    /// the case's median milliseconds and the median over rounds of its bandwidth (`bytes` per
    /// run) as a percentage of the triad's in the same round.
    fn interleaved(&mut self, b: &Bench, bytes: usize, mut case: impl FnMut()) -> (f64, f64) {
        let ms = |f: &mut dyn FnMut()| {
            let start = std::time::Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        };
        self.run();
        case();
        let rounds = 3 * b.reps;
        let mut times = Vec::with_capacity(rounds);
        let mut percents = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            let triad_ms = ms(&mut || self.run());
            let case_ms = ms(&mut case);
            times.push(case_ms);
            let triad_gbps = self.bytes() as f64 / triad_ms;
            percents.push(100.0 * (bytes as f64 / case_ms) / triad_gbps);
        }
        (median(times), median(percents))
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A copy of `a` in memory the kernel is asked to back with transparent huge pages (Linux's
/// `madvise(MADV_HUGEPAGE)`, as NumPy does for its large arrays; elsewhere a plain copy).
fn in_huge_pages(a: &Array1<f32>) -> Array1<f32> {
    let mut v: Vec<f32> = Vec::with_capacity(a.len());
    #[cfg(target_os = "linux")]
    {
        extern "C" {
            fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
        }
        const MADV_HUGEPAGE: i32 = 14;
        let start = (v.as_mut_ptr() as usize).next_multiple_of(4096);
        let end = (v.as_mut_ptr() as usize + 4 * a.len()) & !4095;
        // SAFETY: the range lies inside the vector's allocation; madvise only changes the
        // paging policy of memory not yet touched.
        unsafe { madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE) };
    }
    v.extend(a.iter());
    Array1::from_vec(v)
}

struct Bench {
    json: bool,
    reps: usize,
    suffix: String,
    /// `--only CASE`: run one case.
    only: Option<String>,
}

impl Bench {
    /// Median milliseconds of `self.reps` runs after one warm-up.
    fn time(&self, f: impl FnMut()) -> f64 {
        common::median_ms(self.reps, f)
    }

    fn wanted(&self, case: &str) -> bool {
        self.only.as_deref().is_none_or(|o| o == case)
    }

    fn report(&self, case: &str, n: usize, imp: &str, ms: f64, gbps: Option<f64>) {
        let imp = format!("{imp}{}", self.suffix);
        if self.json {
            let extra = gbps.map_or(String::new(), |g| format!(", \"gbps\": {g:.2}"));
            println!(
                "{{\"case\": \"{case}\", \"n\": {n}, \"impl\": \"{imp}\", \"ms\": {ms:.4}{extra}}}"
            );
        } else {
            let extra = gbps.map_or(String::new(), |g| format!("  {g:6.2} GB/s"));
            println!("{case:16} n={n:>9} {imp:28} {ms:9.3} ms{extra}");
        }
    }

    /// A report line with the bandwidth as a percentage of the triad's, measured in turn
    /// ([`Triad::interleaved`]).
    fn report_of_triad(&self, case: &str, n: usize, imp: &str, ms: f64, bytes: usize, pct: f64) {
        let imp = format!("{imp}{}", self.suffix);
        let gbps = bytes as f64 / ms / 1e6;
        if self.json {
            println!(
                "{{\"case\": \"{case}\", \"n\": {n}, \"impl\": \"{imp}\", \"ms\": {ms:.4}, \"gbps\": {gbps:.2}, \"of_triad\": {pct:.1}}}"
            );
        } else {
            println!(
                "{case:16} n={n:>9} {imp:28} {ms:9.3} ms  {gbps:6.2} GB/s  {pct:5.1}% of triad"
            );
        }
    }

    /// Times fresh-output calls on both targets and `out` calls into a preallocated array.
    fn ufunc<R>(
        &self,
        case: &str,
        n: usize,
        bytes: usize,
        call: impl Fn(Target) -> R,
        call_out: impl Fn(Target),
    ) {
        if !self.wanted(case) {
            return;
        }
        for target in [Target::Cpu, Target::Parallel] {
            let ms = self.time(|| drop(black_box(call(target))));
            self.report(
                case,
                n,
                &format!("ufunc-{target}"),
                ms,
                Some(bytes as f64 / ms / 1e6),
            );
            let ms = self.time(|| call_out(target));
            self.report(
                case,
                n,
                &format!("ufunc-{target}-out"),
                ms,
                Some(bytes as f64 / ms / 1e6),
            );
        }
    }
}

fn data(n: usize, seed: u32) -> Array1<f32> {
    // A small LCG: deterministic, no extra dependency.
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(12345);
    Array1::from_shape_fn(n, |_| {
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (s >> 8) as f32 / (1u32 << 24) as f32 * 4.0 - 2.0
    })
}

fn triad(b: &Bench, n: usize) {
    if !b.wanted("triad") {
        return;
    }
    let mut t = Triad::new(n, false);
    let bytes = t.bytes();
    let ms = b.time(|| t.run_serial());
    b.report(
        "triad",
        n,
        "triad-1thread",
        ms,
        Some(bytes as f64 / ms / 1e6),
    );
    let ms = b.time(|| t.run());
    b.report(
        "triad",
        n,
        &format!("triad-{}threads", rayon::current_num_threads()),
        ms,
        Some(bytes as f64 / ms / 1e6),
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let suffix = args
        .iter()
        .position(|a| a == "--suffix")
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_default();
    let b = Bench {
        json: args.iter().any(|a| a == "--json"),
        reps: if quick { 3 } else { 7 },
        suffix,
        only: args
            .iter()
            .position(|a| a == "--only")
            .and_then(|i| args.get(i + 1).cloned()),
    };
    eprintln!(
        "ufunc bench: isa {:?}, {} rayon threads",
        ufunc::active_isa(),
        rayon::current_num_threads()
    );
    let sizes: &[usize] = if quick {
        &[1_000_000]
    } else {
        &[1_000_000, 16_000_000]
    };
    for &n in sizes {
        let (a, c) = (data(n, 3), data(n, 4));
        let (r1, t1, r2, t2) = (data(n, 5), data(n, 6), data(n, 7), data(n, 8));
        let mut out = Array1::<f32>::zeros(n);
        let o = std::cell::RefCell::new(&mut out);
        b.ufunc(
            "square_sum",
            n,
            12 * n,
            |t| square_sum::on(t, &a, &c).unwrap(),
            |t| square_sum::out_on(t, &a, &c, &mut **o.borrow_mut()).unwrap(),
        );
        b.ufunc(
            "gaussian_pdf",
            n,
            8 * n,
            |t| gaussian_pdf::on(t, &a, 0.0f32, 1.0f32).unwrap(),
            |t| gaussian_pdf::out_on(t, &a, 0.0f32, 1.0f32, &mut **o.borrow_mut()).unwrap(),
        );
        b.ufunc(
            "polar_distance",
            n,
            20 * n,
            |t| polar_distance::on(t, &r1, &t1, &r2, &t2).unwrap(),
            |t| polar_distance::out_on(t, &r1, &t1, &r2, &t2, &mut **o.borrow_mut()).unwrap(),
        );
        b.ufunc(
            "hypot_like",
            n,
            12 * n,
            |t| hypot_like::on(t, &a, &c).unwrap(),
            |t| hypot_like::out_on(t, &a, &c, &mut **o.borrow_mut()).unwrap(),
        );
    }
    if !quick {
        let big = Array2::from_shape_fn((4000, 4000), |(i, j)| (i + j) as f32);
        let big2 = big.clone() * 0.5;
        let row = Array1::from_shape_fn(4000, |j| j as f32);
        let mut out = Array2::<f32>::zeros((4000, 4000));
        let o = std::cell::RefCell::new(&mut out);
        let n = 16_000_000;
        b.ufunc(
            "broadcast_add",
            n,
            8 * n,
            |t| add::on(t, &big, &row).unwrap(),
            |t| add::out_on(t, &big, &row, &mut **o.borrow_mut()).unwrap(),
        );
        b.ufunc(
            "contiguous_add",
            n,
            12 * n,
            |t| add::on(t, &big, &big2).unwrap(),
            |t| add::out_on(t, &big, &big2, &mut **o.borrow_mut()).unwrap(),
        );
        triad(&b, n);
        methods(&b);
    }
    // Per-call overhead on a 1-element array.
    let one = Array1::from_elem(1, 1.0f32);
    let calls = 100_000;
    let ms = b.time(|| {
        for _ in 0..calls {
            black_box(square_sum(black_box(&one), black_box(&one)).unwrap());
        }
    });
    let ns = ms * 1e6 / calls as f64;
    if b.json {
        println!(
            "{{\"case\": \"tiny_call\", \"n\": 1, \"impl\": \"ufunc-cpu{}\", \"ns\": {ns:.1}}}",
            b.suffix
        );
    } else {
        println!(
            "tiny_call        n=        1 ufunc-cpu{:19} {ns:9.1} ns",
            b.suffix
        );
    }
}
