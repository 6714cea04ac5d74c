"""Writes an EER movie of Falcon 4 size for timing the program's EER reader: PAGES detector
frames of 4096x4096 (compression 65001: 7-bit runs, 2+2 sub-pixel bits), a smooth random
specimen drifting along a known path in steps of GROUP pages, electrons drawn at DOSE per
pixel per page (0.02 is a typical Falcon 4 rate: some 335,000 electrons a page), and the true
shift of each group of pages as CSV.

    ~/.cache/ufunc/fixtures-venv/bin/python bench/eer_movie.py OUT.eer [--pages 400]
        [--group 40] [--dose 0.02] [--size 4096]
"""
import argparse
import sys
from pathlib import Path

import numpy as np
from seed_movie import Specimen, drift, write_truth

# The BigTIFF writer that the EER fixtures use too.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "fixtures"))
from bigtiff import BigTiff, page_tags  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--pages", type=int, default=400)
parser.add_argument("--group", type=int, default=40)
parser.add_argument("--dose", type=float, default=0.02, help="electrons per pixel per page")
parser.add_argument("--size", type=int, default=4096)
args = parser.parse_args()

rng = np.random.default_rng(2026)
n = args.size
specimen = Specimen(n, rng)
groups = args.pages // args.group
truth = drift(groups)


def encode(pixels, symbols, total):
    """The 65001 stream of events at `pixels` (sorted) with 4-bit `symbols` (stored form)."""
    gaps = np.diff(np.concatenate([[-1], pixels])) - 1
    rest = total - (pixels[-1] + 1 if len(pixels) else 0)
    full, part = gaps // 127, gaps % 127
    # Each event: its full runs, the rest of its gap, its symbol; then the runs to the end.
    counts = full + 2
    ends = np.cumsum(counts)
    values = np.full(ends[-1] if len(ends) else 0, 127, np.int64)
    widths = np.full(len(values), 7, np.int64)
    values[ends - 2], values[ends - 1], widths[ends - 1] = part, symbols, 4
    tail = [127] * (rest // 127) + ([rest % 127] if rest % 127 or rest == 0 else [])
    values = np.concatenate([values, tail])
    widths = np.concatenate([widths, [7] * len(tail)])
    bits = (values[:, None] >> np.arange(7)) & 1
    bits = bits[np.arange(7)[None, :] < widths[:, None]]
    stream = np.packbits(bits.astype(np.uint8), bitorder="little").tobytes()
    return stream + b"\0" * (len(stream) % 2)


pages = 0
with BigTiff(args.out) as tif:
    for g, (dy, dx) in enumerate(truth):
        chance = (args.dose * 2 * specimen.moved(dy, dx)).ravel()
        for page in range(args.group):
            pixels = np.flatnonzero(rng.random(n * n) < chance)
            symbols = rng.integers(0, 16, len(pixels)) ^ 0x0A
            tags = page_tags(n, n, 65001)
            if pages == 0:
                tags.append((65001, 7, b"<metadata></metadata>"))  # as EPU's, which tifffile looks for
            tif.add(encode(pixels, symbols, n * n), tags)
            pages += 1
        print(f"group {g + 1}/{groups}", flush=True)
write_truth(args.out, truth, "group of pages")
print(f"wrote {args.out}: {pages} pages of {n}x{n}")
