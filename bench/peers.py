# Times the bench cases with NumPy, numexpr and Numba (cpu/parallel); prints one JSON object per line.
import json
import math
import os
import platform
import statistics
import sys
import time

import numba
import numexpr as ne
import numpy as np

F32 = np.float32
SQRT_2PI = F32(2.5066283)
TINY = F32(1.1754944e-38)  # float32 min positive normal (f32::MIN_POSITIVE)
HALF_NEG = F32(-0.5)
ONE = F32(1.0)
MEAN, SIGMA = F32(0.0), F32(1.0)
NE = {"SQRT_2PI": SQRT_2PI, "TINY": TINY, "HALF_NEG": HALF_NEG, "mean": MEAN, "sigma": SIGMA}

QUICK = "--quick" in sys.argv[1:]
REPS = 3 if QUICK else 7
SIZES = (1_000_000,) if QUICK else (1_000_000, 16_000_000)
failures = []


def emit(case, n, impl, **value):
    print(json.dumps({"case": case, "n": n, "impl": impl, **value}), flush=True)


def median_ms(f):
    """Warm up once, then the median wall time in ms of REPS fresh-output runs (3 if a run takes >1 s)."""
    t0 = time.perf_counter()
    f()
    reps = 3 if time.perf_counter() - t0 > 1.0 else REPS
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


# --- Numba kernels: float32 signatures, float32 constants (a bare 0.5 or 1 would promote to float64).
SIG2 = ["float32(float32, float32)"]
SIG3 = ["float32(float32, float32, float32)"]
SIG4 = ["float32(float32, float32, float32, float32)"]


def square_sum_k(a, b):
    s = a + b
    return s * s


def gaussian_pdf_k(x, mean, sigma):
    z = (x - mean) / sigma
    return math.exp(HALF_NEG * z * z) / (sigma * SQRT_2PI)


@numba.njit
def polar_to_cartesian(rho, theta):
    return rho * math.cos(theta), rho * math.sin(theta)


def polar_distance_k(rho1, theta1, rho2, theta2):
    x1, y1 = polar_to_cartesian(rho1, theta1)
    x2, y2 = polar_to_cartesian(rho2, theta2)
    dx, dy = x1 - x2, y1 - y2
    return math.sqrt(dx * dx + dy * dy)


def hypot_like_k(a, b):
    x, y = abs(a), abs(b)
    hi, lo = max(x, y), min(x, y)
    t = lo / max(hi, TINY)
    return hi * math.sqrt(ONE + t * t)


def add_k(a, b):
    return a + b


def numba_pair(kernel, sig):
    return {t: numba.vectorize(sig, target=t)(kernel) for t in ("cpu", "parallel")}


# --- NumPy and numexpr versions; all-float32 operands so nothing upcasts.
def hypot_like_np(a, b):
    x, y = np.abs(a), np.abs(b)
    hi, lo = np.maximum(x, y), np.minimum(x, y)
    t = lo / np.maximum(hi, TINY)
    return hi * np.sqrt(ONE + t * t)


def polar_distance_np(r1, t1, r2, t2):
    x1, y1 = r1 * np.cos(t1), r1 * np.sin(t1)
    x2, y2 = r2 * np.cos(t2), r2 * np.sin(t2)
    return np.sqrt((x1 - x2) ** 2 + (y1 - y2) ** 2)


_HI = "where(abs(a) > abs(b), abs(a), abs(b))"
_LO = "where(abs(a) > abs(b), abs(b), abs(a))"
NE_EXPR = {
    "square_sum": "(a + b)**2",
    "gaussian_pdf": "exp(HALF_NEG * ((x - mean) / sigma)**2) / (sigma * SQRT_2PI)",
    "polar_distance": "sqrt((r1*cos(t1) - r2*cos(t2))**2 + (r1*sin(t1) - r2*sin(t2))**2)",
    "hypot_like": f"{_HI} * sqrt(1 + ({_LO} / where({_HI} > TINY, {_HI}, TINY))**2)",
    "add": "a + b",
}


def numexpr_fn(name, argnames):
    expr = NE_EXPR[name]
    return lambda *args: ne.evaluate(expr, local_dict={**NE, **dict(zip(argnames, args))})


CASES = {  # name -> (numpy fn, numexpr arg names, numba kernel, numba signature)
    "square_sum": (lambda a, b: (a + b) ** 2, "ab", square_sum_k, SIG2),
    "gaussian_pdf": (
        lambda x, m, s: np.exp(HALF_NEG * ((x - m) / s) ** 2) / (s * SQRT_2PI),
        ("x", "mean", "sigma"),
        gaussian_pdf_k,
        SIG3,
    ),
    "polar_distance": (polar_distance_np, ("r1", "t1", "r2", "t2"), polar_distance_k, SIG4),
    "hypot_like": (hypot_like_np, "ab", hypot_like_k, SIG2),
    "add": (lambda a, b: a + b, "ab", add_k, SIG2),
}
NUMBA = {name: numba_pair(c[2], c[3]) for name, c in CASES.items()}


def impls(name):
    np_fn, ne_args, _, _ = CASES[name]
    nb = NUMBA[name]
    return {
        "numpy": np_fn,
        "numexpr": numexpr_fn(name, ne_args),
        "numba-cpu": nb["cpu"],
        "numba-parallel": nb["parallel"],
    }


def bench(case, n, name, args):
    """Times every implementation of `name` on `args`, checking each result against NumPy's."""
    ref = None
    for impl, fn in impls(name).items():
        out = fn(*args)
        if out.dtype != np.float32 or out.shape != np.broadcast_shapes(*(np.shape(a) for a in args)):
            failures.append(f"{case} n={n} {impl}: got {out.dtype} {out.shape}")
        if ref is None:
            ref = out
        elif not np.allclose(out, ref, rtol=1e-5, atol=1e-6):
            err = np.max(np.abs(out.astype(np.float64) - ref) / (1e-6 + np.abs(ref)))
            failures.append(f"{case} n={n} {impl}: differs from numpy (max rel err {err:.3g})")
        del out
        emit(case, n, impl, ms=round(median_ms(lambda: fn(*args)), 4))


def tiny_call():
    one = np.ones(1, dtype=F32)
    calls = 100_000
    for impl in ("numpy", "numba-cpu"):
        fn = impls("square_sum")[impl]
        fn(one, one)
        runs = []
        for _ in range(REPS):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn(one, one)
            runs.append((time.perf_counter() - t0) * 1e9 / calls)
        emit("tiny_call", 1, impl, ns=round(statistics.median(runs), 1))


def machine_info():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(
        f"peers: {platform.python_implementation()} {platform.python_version()} on {platform.machine()}, "
        f"{cpu}, {os.cpu_count()} cpus; numpy {np.__version__}, numexpr {ne.__version__} "
        f"({ne.get_num_threads()} threads), numba {numba.__version__} ({numba.config.NUMBA_NUM_THREADS} threads)",
        file=sys.stderr,
    )


def main():
    ne.set_num_threads(os.cpu_count())
    machine_info()
    rng = np.random.default_rng(12345)

    def data(*shape):
        return rng.uniform(-2.0, 2.0, size=shape).astype(F32)

    for n in SIZES:
        a, b = data(n), data(n)
        bench("square_sum", n, "square_sum", (a, b))
        bench("gaussian_pdf", n, "gaussian_pdf", (a, MEAN, SIGMA))
        bench("polar_distance", n, "polar_distance", (data(n), data(n), data(n), data(n)))
        bench("hypot_like", n, "hypot_like", (a, b))
    if not QUICK:
        big, big2, row = data(4000, 4000), data(4000, 4000), data(4000)
        bench("broadcast_add", big.size, "add", (big, row))
        bench("contiguous_add", big.size, "add", (big, big2))
    tiny_call()
    print(f"peers: numba threading layer {numba.threading_layer()}", file=sys.stderr)
    if failures:
        print("peers: RESULT MISMATCH\n  " + "\n  ".join(failures), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
