"""Writes a seed-sized movie for the end-to-end timing of the drift-correction program: 89
frames of 2048x2048 float32 (1.4 GiB) as .npy, a smooth random specimen drifting along a known
sub-pixel path (Fourier shifts) with Poisson shot noise, and its true shifts as CSV.

    bench/.venv/bin/python bench/seed_movie.py OUT.npy [--frames 89] [--size 2048] [--dose 2]
"""
import argparse

import numpy as np


class Specimen:
    """A specimen with structure at several scales (white noise under a 1/f envelope) on an
    n x n canvas, and its intensity moved by sub-pixel shifts, scaled to 0..1 unmoved."""

    def __init__(self, n, rng):
        self.n = n
        self.ky = np.fft.fftfreq(n)[:, None]
        self.kx = np.fft.rfftfreq(n)[None, :]
        envelope = 1.0 / np.maximum(np.hypot(self.ky, self.kx), 1.0 / n) * np.exp(
            -((self.ky**2 + self.kx**2) / 0.05)
        )
        self.spectrum = np.fft.rfft2(rng.standard_normal((n, n))) * envelope
        base = np.fft.irfft2(self.spectrum, s=(n, n))
        self.lo, self.hi = base.min(), base.max()

    def moved(self, dy, dx):
        """The intensity with the specimen moved by (dy, dx) pixels; registering it onto the
        unmoved one takes -(dy, dx)."""
        phase = np.exp(-2j * np.pi * (self.ky * dy + self.kx * dx))
        shifted = np.fft.irfft2(self.spectrum * phase, s=(self.n, self.n))
        return np.clip((shifted - self.lo) / (self.hi - self.lo), 0.0, None)


def drift(steps):
    """The specimen's path: `steps` (dy, dx) from (0, 0), some 8 px in all."""
    t = np.arange(steps) / max(steps - 1, 1)
    path = np.stack([6.0 * t + 1.5 * np.sin(3 * t), -4.0 * t + 1.0 * np.cos(2 * t) - 1.0], 1)
    return path - path[0]


def write_truth(out, truth, what):
    np.savetxt(out.rsplit(".", 1)[0] + ".truth.csv", -truth, delimiter=",",
               header=f"dy,dx (the shift that registers each {what} onto the first)",
               comments="")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--frames", type=int, default=89)
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--dose", type=float, default=2.0, help="mean counts per pixel per frame")
    args = parser.parse_args()

    rng = np.random.default_rng(2026)
    specimen = Specimen(args.size, rng)
    truth = drift(args.frames)
    movie = np.lib.format.open_memmap(args.out, mode="w+", dtype=np.float32,
                                      shape=(args.frames, args.size, args.size))
    for i, (dy, dx) in enumerate(truth):
        movie[i] = rng.poisson(args.dose * 2 * specimen.moved(dy, dx)).astype(np.float32)
    movie.flush()
    write_truth(args.out, truth, "frame")
    print(f"wrote {args.out}: {args.frames} frames of {args.size}x{args.size}")
