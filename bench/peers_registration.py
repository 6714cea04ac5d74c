"""The Python peers of benches/registration.rs: per-frame phase correlation at 2048x2048
float32 against a fixed reference (its spectrum made once), with sub-pixel refinement at
upsample 20, after warm-up. One JSON object per line, like the Rust bench.

Pipelines: the seed's (numpy.fft + NumExpr for the cross-power normalisation), scipy.fft with
all workers, pyfftw (threads = cores), mkl_fft, each with real transforms and the upsampled
matrix-multiply DFT on the half spectrum (complex64 BLAS); and scikit-image's
phase_cross_correlation as users call it. `--quick` for fewer repetitions.
"""

import json
import os
import sys
import time

import numpy as np

N = 2048
U = 20
REPS = 3 if "--quick" in sys.argv else 9
# The cores this process may run on (`taskset` limits them; `os.cpu_count()` ignores it).
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def images():
    rng = np.random.default_rng(12345)
    noise = rng.random((N, N), dtype=np.float32)
    y, x = np.mgrid[0:N, 0:N] // 16
    smooth = (np.sin(y * 0.37 + x * 0.61) + np.cos(y * 0.13 - x * 0.29)).astype(np.float32)
    ref = smooth + noise
    return ref, np.roll(ref, (7, -3), axis=(0, 1))


def signed(n):
    return np.fft.fftfreq(n) * n


def refine(product, nx, coarse):
    """The upsampled DFT around the coarse peak on the half spectrum (Hermitian symmetry)."""
    ny, m = product.shape
    region = int(np.ceil(1.5 * U))
    centre = np.fix(region / 2)
    off = centre - np.round(np.asarray(coarse) * U)
    r = np.arange(region)
    ey = np.exp(2j * np.pi * np.outer(r - off[0], signed(ny)) / (ny * U)).astype(np.complex64)
    ex = np.exp(2j * np.pi * np.outer(r - off[1], signed(nx)) / (nx * U)).astype(np.complex64)
    g = ey @ product
    b = np.empty((region, nx), np.complex64)
    b[:, :m] = g
    mirror = np.conj(g[:, 1 : nx - m + 1][:, ::-1])
    if ny % 2 == 0:
        mirror = mirror + (2j * ey[:, ny // 2].imag)[:, None] * np.conj(product[ny // 2, 1 : nx - m + 1][::-1])
    b[:, m:] = mirror
    cc = b @ ex.T
    at = np.unravel_index(np.argmax(np.abs(cc)), cc.shape)
    return np.round(np.asarray(coarse) * U) / U + (np.asarray(at) - centre) / U


def pipeline(rfft2, irfft2, normalise):
    ref, mov = images()
    ref_f = rfft2(ref)

    def frame():
        f = rfft2(mov)
        product = normalise(ref_f, f)
        cc = irfft2(product, s=(N, N))
        peak = np.unravel_index(np.argmax(np.abs(cc)), cc.shape)
        coarse = [p - n if p > n // 2 else p for p, n in zip(peak, cc.shape)]
        return refine(product, N, coarse)

    return frame


def numpy_normalise(r, f):
    p = r * np.conj(f)
    return p / np.maximum(np.abs(p), 100 * np.finfo(np.float32).eps)


def timed(name, frame, check=True):
    shift = frame()  # warm-up: plans, caches
    if check:
        assert abs(shift[0] + 7) < 0.06 and abs(shift[1] - 3) < 0.06, (name, shift)
    t = []
    for _ in range(REPS):
        s = time.perf_counter()
        frame()
        t.append((time.perf_counter() - s) * 1e3)
    print(json.dumps({"case": "pcc_frame_2048_u20", "n": N, "impl": name, "ms": round(float(np.median(t)), 3)}), flush=True)


def main():
    try:
        import numexpr as ne

        def seed_normalise(r, f):
            p = ne.evaluate("r * conj(f)")
            return ne.evaluate("p / (abs(p) + 1e-30)").astype(np.complex64)

        timed("numpy.fft + numexpr (seed)", pipeline(np.fft.rfft2, np.fft.irfft2, seed_normalise))
    except ImportError as e:
        print(f"peers_registration: numexpr unavailable: {e}", file=sys.stderr)

    import scipy.fft as sfft

    timed(
        f"scipy.fft workers={CORES}",
        pipeline(
            lambda a: sfft.rfft2(a, workers=CORES),
            lambda a, s: sfft.irfft2(a, s=s, workers=CORES),
            numpy_normalise,
        ),
    )
    try:
        import pyfftw
        import pyfftw.interfaces.numpy_fft as pfft

        pyfftw.interfaces.cache.enable()
        timed(
            f"pyfftw threads={CORES}",
            pipeline(
                lambda a: pfft.rfft2(a, threads=CORES),
                lambda a, s: pfft.irfft2(a, s=s, threads=CORES),
                numpy_normalise,
            ),
        )
    except ImportError as e:
        print(f"peers_registration: pyfftw unavailable: {e}", file=sys.stderr)
    try:
        import mkl_fft

        timed(
            "mkl_fft",
            pipeline(mkl_fft.rfft2, lambda a, s: mkl_fft.irfft2(a, s=s), numpy_normalise),
        )
    except (ImportError, AttributeError) as e:
        print(f"peers_registration: mkl_fft unavailable: {e}", file=sys.stderr)
    from skimage.registration import phase_cross_correlation

    ref, mov = images()
    timed(
        "scikit-image phase_cross_correlation",
        lambda: phase_cross_correlation(ref, mov, upsample_factor=U)[0],
    )


if __name__ == "__main__":
    main()
