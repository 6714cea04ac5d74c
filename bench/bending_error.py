"""The error of the drift-correction program's shifts on bench/bending_movie.py's movie: the
RMS distance, over a grid of pixels inside the outermost patch centres and every frame, of the
shift that registers each pixel (the whole frame's, plus the local model's where the report
has one: RELION's third-order polynomial) from the truth (s solving s = -d(t, p - s)).
Usage: python bench/bending_error.py MOVIE.truth.npz NAME.shifts.json [NAME.shifts.json ...]
(bending_movie.py makes square movies only, as this assumes.)
"""
import json
import sys

import numpy as np

truth = np.load(sys.argv[1])
frames, size = int(truth["frames"]), int(truth["size"])
turn, dome = float(truth["turn"]), float(truth["dome"])


def motion(t, y, x):
    s = 1 - np.exp(-t / 6)
    c = size / 2
    k = t / (frames - 1)
    return (3.7 * s + 0.05 * t + k * turn * (x - c),
            -2.9 * s + 0.11 * t - k * turn * (y - c) + k * dome * ((y - c) / c) ** 2)


def relion(c, z, y, x):
    """RELION's ThirdOrderPolynomialModel::getShiftAt for one axis (normalised x, y)."""
    terms = [np.ones_like(x), x, x * x, y, y * y, x * y]
    return sum((c[3 * j] * z + c[3 * j + 1] * z**2 + c[3 * j + 2] * z**3) * terms[j] for j in range(6))


y, x = np.mgrid[size // 10:size - size // 10:32, size // 10:size - size // 10:32].astype(float)
for path in sys.argv[2:]:
    report = json.load(open(path))
    local = report.get("local") or {}
    sq = []
    for t, row in enumerate(report["shifts"]):
        sy, sx = np.full_like(y, row["dy"]), np.full_like(x, row["dx"])
        if local.get("fitted"):
            sy = sy + relion(local["coefficients_y"], t, y / size - 0.5, x / size - 0.5)
            sx = sx + relion(local["coefficients_x"], t, y / size - 0.5, x / size - 0.5)
        dy, dx = motion(t, y, x)
        for _ in range(8):  # the fixed point s = -d(p - s)
            dy, dx = motion(t, y + dy, x + dx)
        sq.append((sy + dy) ** 2 + (sx + dx) ** 2)
    timing = report["timing"]
    fit = f", fit rms {local['fit_rms_px']}" if local.get("fitted") else ""
    print(f"{path}: rms error {np.sqrt(np.mean(sq)):.3f} px, align {timing['align_s']:.2f} s, "
          f"dose weighting {timing['dose_weighting_s']:.2f} s{fit}")
