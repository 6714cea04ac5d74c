"""Writes a K3-sized counting movie as SerialEM and EPU save them, for timing the program's
TIFF reader: FRAMES frames of 4092x5760 (or --shape) uint8 counts (Poisson, DOSE electrons per pixel per
frame, of a smooth random specimen drifting along a known path), LZW-compressed in strips of
ROWS rows, and the true shifts as CSV. Then it times tifffile (with imagecodecs) reading the
whole movie, on one thread and on all, for the side-by-side comparison.

    ~/.cache/ufunc/fixtures-venv/bin/python bench/k3_tiff_movie.py OUT.tif [--frames 20]
        [--dose 0.8] [--rows 64] [--shape 4092x5760]

`--shape 3710x3838` makes a K2-sized movie instead.
"""
import argparse
import os
import time

import numpy as np
import tifffile
from seed_movie import Specimen, drift, write_truth

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--frames", type=int, default=20)
parser.add_argument("--dose", type=float, default=0.8, help="electrons per pixel per frame")
parser.add_argument("--rows", type=int, default=64, help="rows per strip")
parser.add_argument("--shape", default="4092x5760", help="ROWSxCOLS (K3's by default)")
args = parser.parse_args()

rows, cols = (int(n) for n in args.shape.split("x"))
rng = np.random.default_rng(2026)
specimen = Specimen(max(rows, cols), rng)
truth = drift(args.frames)


def frames():
    for dy, dx in truth:
        mean = args.dose * 2 * specimen.moved(dy, dx)[:rows, :cols]
        yield np.minimum(rng.poisson(mean), 255).astype(np.uint8)


tifffile.imwrite(args.out, frames(), shape=(args.frames, rows, cols), dtype=np.uint8,
                 compression="lzw", rowsperstrip=args.rows, photometric="minisblack")
write_truth(args.out, truth, "frame")
print(f"wrote {args.out}: {args.frames} frames of {rows}x{cols}, "
      f"{os.path.getsize(args.out) / 1e6:.0f} MB")
for workers in (1, os.cpu_count()):
    start = time.perf_counter()
    tifffile.imread(args.out, maxworkers=workers)
    seconds = time.perf_counter() - start
    print(f"tifffile, {workers} thread(s): {seconds:.2f} s, "
          f"{1e3 * seconds / args.frames:.0f} ms a frame")
