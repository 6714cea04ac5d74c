"""The Python peers of benches/fft.rs, case for case: 2-D transforms of a 2048x2048 float32
image (complex64 c2c, r2c, c2r), 1-D transforms of 4096 rows of 4096, the real transform of the
image along its outer axis and back, and FFT convolution of the
image with a 31x31 kernel (`same`) and a 2048x2048 one (`full`).

Peers: numpy.fft, scipy.fft with all workers, pyfftw (threads = cores, its cache on), mkl_fft
(MKL's threads), and scipy.signal's fftconvolve/oaconvolve under `scipy.fft.set_workers(CORES)`.
Median milliseconds after warm-up, one JSON object per line like the Rust bench; `--quick` for
fewer repetitions. Where CuPy imports and sees a GPU, its cuFFT rows too (device data, each
call synchronised); `--cupy-only` runs just those (the GPU bundle's runner).
"""

import json
import os
import sys
import time

import numpy as np

REPS = 3 if "--quick" in sys.argv else 15
# The cores this process may run on (`taskset` limits them; `os.cpu_count()` ignores it).
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def image(ny, nx, seed):
    return np.random.default_rng(seed).random((ny, nx), dtype=np.float32)


def timed(case, n, name, work, reps=REPS):
    work()  # warm-up: plans, caches, thread pools
    t = []
    for _ in range(reps):
        start = time.perf_counter()
        work()
        t.append((time.perf_counter() - start) * 1e3)
    print(json.dumps({"case": case, "n": n, "impl": name, "ms": round(float(np.median(t)), 3)}), flush=True)


def transforms(name, fft2, rfft2, irfft2, fft_rows, rfft_rows, axis0, img, cimg, half, rows):
    timed("fft2_c2c_2048_f32", 2048, name, lambda: fft2(cimg))
    timed("rfft2_r2c_2048_f32", 2048, name, lambda: rfft2(img))
    timed("irfft2_c2r_2048_f32", 2048, name, lambda: irfft2(half, (2048, 2048)))
    timed("fft_rows_4096x4096_f32", 4096, name, lambda: fft_rows(rows))
    timed("rfft_rows_4096x4096_f32", 4096, name, lambda: rfft_rows(rows))
    # Along the outer axis: `rfft(img, axis=0)` and its inverse back to 2048 rows.
    rfft0, irfft0 = axis0
    columns = rfft0(img)
    timed("rfft_axis0_2048_f32", 2048, name, lambda: rfft0(img))
    timed("irfft_axis0_2048_f32", 2048, name, lambda: irfft0(columns, 2048))


def cupy_rows(img, cimg):
    """cuFFT through CuPy on device data: the reference of the device transforms."""
    try:
        import cupy as cp

        cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # no CuPy, or no GPU
        print(f"peers_fft: cupy unavailable: {e}", file=sys.stderr)
        return
    import cupyx.scipy.signal as csig

    d_img, d_cimg = cp.asarray(img), cp.asarray(cimg)
    d_small = cp.asarray(image(31, 31, 3))

    def synced(f):
        def run():
            f()
            cp.cuda.get_current_stream().synchronize()
        return run

    timed("fft2_c2c_2048_f32", 2048, "cupy.fft", synced(lambda: cp.fft.fft2(d_cimg)))
    timed("rfft2_r2c_2048_f32", 2048, "cupy.fft", synced(lambda: cp.fft.rfft2(d_img)))
    d_half = cp.fft.rfft2(d_img)
    timed("irfft2_c2r_2048_f32", 2048, "cupy.fft",
          synced(lambda: cp.fft.irfft2(d_half, s=(2048, 2048))))
    timed("fftconvolve_2048_k31_same", 2048, "cupyx.scipy.signal.fftconvolve",
          synced(lambda: csig.fftconvolve(d_img, d_small, mode="same")))


def main():
    img = image(2048, 2048, 1)
    cimg = (img + 1j * (0.5 - img)).astype(np.complex64)
    half = np.fft.rfft2(img).astype(np.complex64)
    cupy_rows(img, cimg)
    if "--cupy-only" in sys.argv:
        return
    rows = image(4096, 4096, 2)

    # NumPy 2 keeps float32 as float32 (complex64 out).
    transforms(
        "numpy.fft",
        np.fft.fft2,
        np.fft.rfft2,
        lambda a, s: np.fft.irfft2(a, s=s),
        lambda a: np.fft.fft(a, axis=1),
        lambda a: np.fft.rfft(a, axis=1),
        (lambda a: np.fft.rfft(a, axis=0), lambda a, n: np.fft.irfft(a, n=n, axis=0)),
        img, cimg, half, rows,
    )

    import scipy.fft as sfft
    import scipy.signal as ssig

    transforms(
        f"scipy.fft workers={CORES}",
        lambda a: sfft.fft2(a, workers=CORES),
        lambda a: sfft.rfft2(a, workers=CORES),
        lambda a, s: sfft.irfft2(a, s=s, workers=CORES),
        lambda a: sfft.fft(a, axis=1, workers=CORES),
        lambda a: sfft.rfft(a, axis=1, workers=CORES),
        (
            lambda a: sfft.rfft(a, axis=0, workers=CORES),
            lambda a, n: sfft.irfft(a, n=n, axis=0, workers=CORES),
        ),
        img, cimg, half, rows,
    )

    try:
        import pyfftw
        import pyfftw.interfaces.numpy_fft as pfft

        pyfftw.interfaces.cache.enable()
        pyfftw.interfaces.cache.set_keepalive_time(60)
        transforms(
            f"pyfftw threads={CORES}",
            lambda a: pfft.fft2(a, threads=CORES),
            lambda a: pfft.rfft2(a, threads=CORES),
            lambda a, s: pfft.irfft2(a, s=s, threads=CORES),
            lambda a: pfft.fft(a, axis=1, threads=CORES),
            lambda a: pfft.rfft(a, axis=1, threads=CORES),
            (
                lambda a: pfft.rfft(a, axis=0, threads=CORES),
                lambda a, n: pfft.irfft(a, n=n, axis=0, threads=CORES),
            ),
            img, cimg, half, rows,
        )
    except ImportError as e:
        print(f"peers_fft: pyfftw unavailable: {e}", file=sys.stderr)

    try:
        import mkl_fft

        transforms(
            "mkl_fft",
            mkl_fft.fft2,
            mkl_fft.rfft2,
            lambda a, s: mkl_fft.irfft2(a, s=s),
            lambda a: mkl_fft.fft(a, axis=1),
            lambda a: mkl_fft.rfft(a, axis=1),
            (lambda a: mkl_fft.rfft(a, axis=0), lambda a, n: mkl_fft.irfft(a, n=n, axis=0)),
            img, cimg, half, rows,
        )
    except ImportError as e:
        print(f"peers_fft: mkl_fft unavailable: {e}", file=sys.stderr)

    small = image(31, 31, 3)
    big = image(2048, 2048, 4)
    with sfft.set_workers(CORES):
        for case, kernel, mode in [
            ("fftconvolve_2048_k31_same", small, "same"),
            ("fftconvolve_2048_k2048_full", big, "full"),
        ]:
            for name, f in [("fftconvolve", ssig.fftconvolve), ("oaconvolve", ssig.oaconvolve)]:
                out = f(img, kernel, mode=mode)
                assert out.dtype == np.float32, out.dtype
                timed(case, 2048, f"scipy.signal.{name} workers={CORES}",
                      lambda: f(img, kernel, mode=mode), reps=min(REPS, 5))


if __name__ == "__main__":
    main()
