"""A synthetic movie whose specimen drifts, turns and bends, for the local (patch) alignment's
benchmark (bench/RESULTS.md): frame t shows the specimen's point p at p + d(t, p), with

    d = drift(t) + k (turn (x - cx), -turn (y - cy) + dome ((y - cy) / cy)^2),  k = t / (T - 1),

a smooth random specimen (Gaussian-filtered noise, sigma 3 px, 30% contrast) sampled by linear
interpolation with Poisson noise. Writes MOVIE.npy (float32) and MOVIE.truth.npz (the arguments,
to evaluate d anywhere). Usage: python bench/bending_movie.py OUT.npy [frames] [size] [dose]
"""
import sys

import numpy as np
from scipy.ndimage import gaussian_filter, map_coordinates

out = sys.argv[1]
frames = int(sys.argv[2]) if len(sys.argv) > 2 else 24
size = int(sys.argv[3]) if len(sys.argv) > 3 else 2048
dose = float(sys.argv[4]) if len(sys.argv) > 4 else 1.5
turn, dome = 1.5 / (size / 2), 1.5  # 1.5 px at the corners, and at the top and bottom, by the end

rng = np.random.default_rng(1)
spec = gaussian_filter(rng.standard_normal((size, size)), 3)
spec = 1 + 0.3 * spec / spec.std()


def drift(t):
    s = 1 - np.exp(-t / 6)
    return np.array([3.7 * s + 0.05 * t, -2.9 * s + 0.11 * t])


def motion(t, y, x):
    """d(t, p) for arrays of rows y and columns x."""
    c = size / 2
    k = t / (frames - 1)
    g = drift(t)
    return (g[0] + k * turn * (x - c), g[1] - k * turn * (y - c) + k * dome * ((y - c) / c) ** 2)


y, x = np.mgrid[0:size, 0:size].astype(np.float64)
movie = np.empty((frames, size, size), np.float32)
for t in range(frames):
    # The pixel q shows the specimen at q - d(q) (d varies slowly: one step of the fixed point).
    dy, dx = motion(t, y, x)
    sample = map_coordinates(spec, [y - dy, x - dx], order=1, mode="wrap")
    movie[t] = rng.poisson(dose * sample.clip(0))
np.save(out, movie)
np.savez(out.removesuffix(".npy") + ".truth.npz", frames=frames, size=size, turn=turn, dome=dome)
print(f"wrote {out}: {frames} frames of {size}x{size}, {dose} counts per pixel per frame")
