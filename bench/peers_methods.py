# NumPy's ufunc methods on the Rust bench's sizes (benches/vectorize.rs); prints one JSON object per
# line. NumPy alone: this runs where Numba and numexpr are missing (the GPU host's `cpu2` step of
# scripts/gpu-bundle.sh); bench/peers.py runs the same cases through `methods`.
"""Usage: peers_methods.py [--only CASE[,CASE...]]"""
import argparse
import json
import statistics
import time

import numpy as np

CASES = ["add_reduce_all", "add_reduce_axis0", "add_reduce_axis1", "max_reduce_all", "add_accumulate",
         "add_accumulate_l2", "add_at", "add_at_2d"]


def median_ms(f, reps, first_s=None):
    """Median wall time in ms of `reps` runs after one warm-up call (skipped when the caller already
    made one, taking first_s seconds); 3 runs if a call takes >1 s, 1 run if >5 s."""
    if first_s is None:
        t0 = time.perf_counter()
        f()
        first_s = time.perf_counter() - t0
    reps = 1 if first_s > 5.0 else 3 if first_s > 1.0 else reps
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def methods(data, want, emit, median_ms):
    """The cases: 16M float32, flat or 4000x4000 (`want(case, False)`: run unless a quick run)."""
    flat = data(16_000_000)
    square = flat.reshape(4000, 4000)
    cases = {
        "add_reduce_all": lambda: np.add.reduce(flat),
        "add_reduce_axis0": lambda: np.add.reduce(square, axis=0),
        "add_reduce_axis1": lambda: np.add.reduce(square, axis=1),
        "max_reduce_all": lambda: np.maximum.reduce(flat),
        "add_accumulate": lambda: np.add.accumulate(flat),
    }
    for case, fn in cases.items():
        if want(case, False):
            emit(case, flat.size, "numpy", ms=round(median_ms(fn), 4))
    if want("add_accumulate", False):
        out = np.empty_like(flat)
        emit("add_accumulate", flat.size, "numpy-out",
             ms=round(median_ms(lambda: np.add.accumulate(flat, out=out)), 4))
    if want("add_at", False) or want("add_at_2d", False):
        # A weighted histogram: 2^22 points into 512x512 float32 bins, by flat index and by (y, x).
        points = 1 << 22
        weights = flat[:points]
        ys, xs = (((data(points) + 2.0) * 128.0).astype(np.int64) % 512 for _ in range(2))
        index = ys * 512 + xs
        bins = np.zeros((512, 512), dtype=np.float32)
        if want("add_at", False):
            flat_bins = bins.reshape(-1)
            emit("add_at", points, "numpy", ms=round(median_ms(lambda: np.add.at(flat_bins, index, weights)), 4))
        if want("add_at_2d", False):
            emit("add_at_2d", points, "numpy", ms=round(median_ms(lambda: np.add.at(bins, (ys, xs), weights)), 4))
    if want("add_accumulate_l2", False):
        # 64K float32 in and out (512 KiB), in cache: the scan's own speed.
        small, out = flat[:65_536].copy(), np.empty(65_536, dtype=np.float32)
        emit("add_accumulate_l2", small.size, "numpy-out",
             ms=round(median_ms(lambda: np.add.accumulate(small, out=out)), 4))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", action="append", metavar="CASE", help="run only these cases (repeatable, or a,b)")
    args = ap.parse_args()
    only = {c for arg in args.only for c in arg.split(",")} if args.only else None
    if only and not only <= set(CASES):
        ap.error(f"unknown case(s) {sorted(only - set(CASES))}; known: {CASES}")

    def want(case, _quick_too=True):
        return only is None or case in only

    def emit(case, n, impl, **value):
        print(json.dumps({"case": case, "n": n, "impl": impl, **value}), flush=True)

    rng = np.random.default_rng(12345)
    data = lambda *shape: rng.uniform(-2.0, 2.0, size=shape).astype(np.float32)  # noqa: E731
    methods(data, want, emit, lambda f: median_ms(f, 7))


if __name__ == "__main__":
    main()
