"""Writes an EER movie of Falcon 4 size for timing the program's EER reader: PAGES detector
frames of 4096x4096 (compression 65001: 7-bit runs, 2+2 sub-pixel bits), a smooth random
specimen drifting along a known path in steps of GROUP pages, electrons drawn at DOSE per
pixel per page (0.02 is a typical Falcon 4 rate: some 335,000 electrons a page), and the true
shift of each group of pages as CSV.

    ~/.cache/ufunc/fixtures-venv/bin/python bench/eer_movie.py OUT.eer [--pages 400]
        [--group 40] [--dose 0.02] [--size 4096]
"""
import argparse
import struct

import numpy as np
from seed_movie import Specimen, drift, write_truth

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


with open(args.out, "wb") as f:
    f.write(b"II" + struct.pack("<HHHQ", 43, 8, 0, 0))
    strips = []
    for g, (dy, dx) in enumerate(truth):
        chance = (args.dose * 2 * specimen.moved(dy, dx)).ravel()
        for page in range(args.group):
            pixels = np.flatnonzero(rng.random(n * n) < chance)
            symbols = rng.integers(0, 16, len(pixels)) ^ 0x0A
            stream = encode(pixels, symbols, n * n)
            strips.append((f.tell(), len(stream)))
            f.write(stream)
        print(f"group {g + 1}/{groups}", flush=True)
    # The page directories, after all the data, each pointing at the next.
    first = f.tell()
    for i, (offset, size) in enumerate(strips):
        at = f.tell()
        tags = [(256, 4, n), (257, 4, n), (259, 3, 65001), (262, 3, 1), (273, 16, offset),
                (278, 4, n), (279, 16, size)]
        entries = b"".join(struct.pack("<HHQQ", tag, kind, 1, v) for tag, kind, v in tags)
        last = i + 1 == len(strips)
        f.write(struct.pack("<Q", len(tags)) + entries
                + struct.pack("<Q", 0 if last else at + 8 + 20 * len(tags) + 8))
    f.seek(8)
    f.write(struct.pack("<Q", first))
write_truth(args.out, truth, "group of pages")
print(f"wrote {args.out}: {len(strips)} pages of {n}x{n}")
