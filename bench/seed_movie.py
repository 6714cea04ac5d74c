"""Writes a seed-sized movie for the end-to-end timing of the drift-correction program: 89
frames of 2048x2048 float32 (1.4 GiB) as .npy, a smooth random specimen drifting along a known
sub-pixel path (Fourier shifts) with Poisson shot noise, and its true shifts as CSV.

    bench/.venv/bin/python bench/seed_movie.py OUT.npy [--frames 89] [--size 2048] [--dose 2]
"""
import argparse

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--frames", type=int, default=89)
parser.add_argument("--size", type=int, default=2048)
parser.add_argument("--dose", type=float, default=2.0, help="mean counts per pixel per frame")
args = parser.parse_args()

rng = np.random.default_rng(2026)
n = args.size
ky = np.fft.fftfreq(n)[:, None]
kx = np.fft.rfftfreq(n)[None, :]
# A specimen with structure at several scales: white noise under a 1/f envelope.
envelope = 1.0 / np.maximum(np.hypot(ky, kx), 1.0 / n) * np.exp(-((ky**2 + kx**2) / 0.05))
specimen = np.fft.rfft2(rng.standard_normal((n, n))) * envelope
t = np.arange(args.frames) / max(args.frames - 1, 1)
truth = np.stack([6.0 * t + 1.5 * np.sin(3 * t), -4.0 * t + 1.0 * np.cos(2 * t) - 1.0], 1)
truth -= truth[0]
base = np.fft.irfft2(specimen, s=(n, n))
lo, hi = base.min(), base.max()
movie = np.lib.format.open_memmap(args.out, mode="w+", dtype=np.float32,
                                  shape=(args.frames, n, n))
for i, (dy, dx) in enumerate(truth):
    # Frame i shows the specimen moved by (dy, dx); registering it onto frame 0 gives -(dy, dx).
    shifted = np.fft.irfft2(specimen * np.exp(-2j * np.pi * (ky * dy + kx * dx)), s=(n, n))
    intensity = np.clip((shifted - lo) / (hi - lo), 0.0, None)
    movie[i] = rng.poisson(args.dose * 2 * intensity).astype(np.float32)
movie.flush()
np.savetxt(args.out.rsplit(".", 1)[0] + ".truth.csv", -truth, delimiter=",",
           header="dy,dx (the shift that registers each frame onto frame 0)", comments="")
print(f"wrote {args.out}: {args.frames} frames of {n}x{n}")
