# Times the bench cases with NumPy, numexpr and Numba (cpu/parallel); prints one JSON object per line.
"""Usage: peers.py [--quick] [--only CASE[,CASE...]]"""
import argparse
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

import peers_methods

F32 = np.float32
SQRT_2PI = F32(2.5066283)
TINY = F32(1.1754944e-38)  # float32 min positive normal (f32::MIN_POSITIVE)
HALF_NEG = F32(-0.5)
ONE = F32(1.0)
MEAN, SIGMA = F32(0.0), F32(1.0)
NE = {"SQRT_2PI": SQRT_2PI, "TINY": TINY, "HALF_NEG": HALF_NEG, "mean": MEAN, "sigma": SIGMA}

ELEMENTWISE = ["square_sum", "gaussian_pdf", "polar_distance", "hypot_like", "broadcast_add", "contiguous_add",
               "tiny_call"]
METHODS = peers_methods.CASES
GUFUNC = ["matmul_small", "matmul_4x4", "matmul_256", "polygon_mask"]
_ap = argparse.ArgumentParser(description=__doc__)
_ap.add_argument("--quick", action="store_true", help="small sizes and 3 reps: a smoke run")
_ap.add_argument("--only", action="append", metavar="CASE", help="run only these cases (repeatable, or a,b)")
ARGS = _ap.parse_args()
ONLY = {c for arg in ARGS.only for c in arg.split(",")} if ARGS.only else None
if ONLY and not ONLY <= set(ELEMENTWISE + GUFUNC + METHODS):
    _ap.error(f"unknown case(s) {sorted(ONLY - set(ELEMENTWISE + GUFUNC + METHODS))}; known: {ELEMENTWISE + GUFUNC + METHODS}")
QUICK = ARGS.quick
REPS = 3 if QUICK else 7
SIZES = (1_000_000,) if QUICK else (1_000_000, 16_000_000)
failures = []


def emit(case, n, impl, **value):
    print(json.dumps({"case": case, "n": n, "impl": impl, **value}), flush=True)


def want(case, quick_too=True):
    """Whether to run `case`: named by --only, or else not excluded by --quick."""
    return case in ONLY if ONLY else quick_too or not QUICK


def note(msg):
    print(f"peers: {msg}", file=sys.stderr, flush=True)


def median_ms(f, first_s=None):
    """peers_methods.median_ms with REPS fresh-output runs."""
    return peers_methods.median_ms(f, REPS, first_s)


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
    if not want(case):
        return
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


# --- Generalized ufuncs (@guvectorize): batched matmul and an inside-polygon mask, float32 throughout.
ZERO = F32(0.0)


def matmul_k(a, b, c):
    m, n = a.shape
    p = b.shape[1]
    for i in range(m):
        for j in range(p):
            acc = ZERO
            for k in range(n):
                acc += a[i, k] * b[k, j]
            c[i, j] = acc


MATMUL = {
    t: numba.guvectorize(["void(float32[:,:], float32[:,:], float32[:,:])"], "(m,n),(n,p)->(m,p)", target=t)(
        matmul_k
    )
    for t in ("cpu", "parallel")
}


@numba.njit
def point_in_poly(x, y, poly):
    """Even-odd ray-crossing test of the point (x, y) against the polygon's (n, 2) vertices."""
    n = poly.shape[0]
    inside = False
    j = n - 1
    for i in range(n):
        xi, yi = poly[i, 0], poly[i, 1]
        xj, yj = poly[j, 0], poly[j, 1]
        if ((yi > y) != (yj > y)) and (x < (xj - xi) * (y - yi) / (yj - yi) + xi):
            inside = not inside
        j = i
    return inside


def inside_k(x, y, poly, out):
    out[0] = point_in_poly(x, y, poly)


# Numba's layout parser takes no literal sizes, so "(n,2)" is spelled "(n,k)".
INSIDE = {
    t: numba.guvectorize(["void(float32, float32, float32[:,:], boolean[:])"], "(),(),(n,k)->()", target=t)(
        inside_k
    )
    for t in ("cpu", "parallel")
}


@numba.njit("boolean[:,:](float32[:], float32[:], float32[:,:])", parallel=True)
def polygon_mask_njit(xs, ys, poly):
    out = np.empty((ys.size, xs.size), dtype=np.bool_)
    for r in numba.prange(ys.size):
        for c in range(xs.size):
            out[r, c] = point_in_poly(xs[c], ys[r], poly)
    return out


def polygon_mask_np(xs, ys, poly):
    """xs (1, W), ys (H, 1): the same test vectorized over the grid, one pass per edge."""
    inside = np.zeros(np.broadcast_shapes(xs.shape, ys.shape), dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):  # horizontal edges; masked out by `crosses`
        for (xi, yi), (xj, yj) in zip(poly, np.roll(poly, 1, axis=0)):
            crosses = (yi > ys) != (yj > ys)
            np.logical_xor(inside, crosses & (xs < (xj - xi) * (ys - yi) / (yj - yi) + xi), out=inside)
    return inside


def star(size, k=24):
    """A k-vertex star centred in a size x size grid, radii alternating 0.45 and 0.2 of size; float32."""
    angle = np.arange(k, dtype=F32) * F32(2 * math.pi) / F32(k)
    radius = np.where(np.arange(k) % 2 == 0, F32(0.45), F32(0.2)).astype(F32) * F32(size)
    c = F32(size / 2)
    return np.stack([c + radius * np.cos(angle), c + radius * np.sin(angle)], axis=1)


def matmul_agree(case, impl, out, ref):
    if out.dtype != np.float32 or out.shape != ref.shape:
        return f"got {out.dtype} {out.shape}, want float32 {ref.shape}"
    atol = 1e-4 * np.sqrt(np.mean(np.square(ref)))  # for entries that cancel to near zero
    if not np.allclose(out, ref, rtol=1e-4, atol=atol):
        return f"max abs err {np.max(np.abs(out - ref)):.3g} (max |ref| {np.max(np.abs(ref)):.3g})"
    return None


def mask_agree(case, impl, out, ref):
    if out.dtype != np.bool_ or out.shape != ref.shape:
        return f"got {out.dtype} {out.shape}, want bool {ref.shape}"
    diff = np.count_nonzero(out != ref)
    if diff and impl == "numpy" and diff <= 1e-4 * ref.size:  # float evaluation order at the boundary
        note(f"{case}: numpy differs from numba on {diff} boundary pixels (allowed: <= 0.01%)")
    elif diff:
        return f"{diff} pixels differ"
    return None


def bench_gu(case, n, fns, args, agree, flops=None):
    """Times each impl -> fn of `fns` on `args`; its first call is the warm-up and is checked against the
    first impl's result by agree(case, impl, out, ref) -> error or None. A call over 20 s is not timed;
    after one over 5 s, numba-gu-parallel is skipped."""
    ref, slow = None, False
    for impl, fn in fns.items():
        if slow and impl == "numba-gu-parallel":
            note(f"{case}: {impl} skipped (a call above took >5 s)")
            continue
        t0 = time.perf_counter()
        out = fn(*args)
        first_s = time.perf_counter() - t0
        if ref is None:
            ref = out
        elif err := agree(case, impl, out, ref):
            failures.append(f"{case} n={n} {impl}: {err}")
        del out
        if first_s > 20.0:
            note(f"{case}: {impl} not timed (one call took {first_s:.1f} s)")
            continue
        slow |= first_s > 5.0
        ms = median_ms(lambda: fn(*args), first_s)
        extra = {"gflops": round(flops / ms / 1e6, 2)} if flops else {}
        emit(case, n, impl, ms=round(ms, 4), **extra)


def gufunc_cases():
    rng = np.random.default_rng(2024)
    mm = {"numpy": np.matmul, "numba-gu-cpu": MATMUL["cpu"], "numba-gu-parallel": MATMUL["parallel"]}
    for case, (batch, m, k, p), quick_too in [
        ("matmul_small", (1000, 2, 4, 5), True),
        ("matmul_4x4", (100_000, 4, 4, 4), False),
        ("matmul_256", (64, 256, 256, 256), False),
    ]:
        a = rng.uniform(-1.0, 1.0, size=(batch, m, k)).astype(F32)
        b = rng.uniform(-1.0, 1.0, size=(batch, k, p)).astype(F32)
        if want(case, quick_too):
            flops = 2 * batch * m * k * p if case == "matmul_256" else None
            bench_gu(case, batch, mm, (a, b), matmul_agree, flops)

    size = 1024
    poly = star(size)
    xs = np.arange(size, dtype=F32) + F32(0.5)  # pixel centres
    ys = xs.copy()
    fns = {
        "numba-njit-parallel": lambda: polygon_mask_njit(xs, ys, poly),
        "numba-gu-cpu": lambda: INSIDE["cpu"](xs[None, :], ys[:, None], poly),
        "numba-gu-parallel": lambda: INSIDE["parallel"](xs[None, :], ys[:, None], poly),
        "numpy": lambda: polygon_mask_np(xs[None, :], ys[:, None], poly),
    }
    if want("polygon_mask"):
        note(f"polygon_mask: {np.count_nonzero(polygon_mask_njit(xs, ys, poly))} of {size * size} pixels inside")
        bench_gu("polygon_mask", size * size, fns, (), mask_agree)


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

    for n in SIZES if any(map(want, ELEMENTWISE[:4])) else ():
        a, b = data(n), data(n)
        bench("square_sum", n, "square_sum", (a, b))
        bench("gaussian_pdf", n, "gaussian_pdf", (a, MEAN, SIGMA))
        bench("polar_distance", n, "polar_distance", (data(n), data(n), data(n), data(n)))
        bench("hypot_like", n, "hypot_like", (a, b))
    if want("broadcast_add", False) or want("contiguous_add", False):
        big, big2, row = data(4000, 4000), data(4000, 4000), data(4000)
        bench("broadcast_add", big.size, "add", (big, row))
        bench("contiguous_add", big.size, "add", (big, big2))
    if want("tiny_call"):
        tiny_call()
    peers_methods.methods(data, want, emit, median_ms)
    gufunc_cases()
    print(f"peers: numba threading layer {numba.threading_layer()}", file=sys.stderr)
    if failures:
        print("peers: RESULT MISMATCH\n  " + "\n  ".join(failures), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
