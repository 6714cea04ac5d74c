# Merges bench JSON lines (Rust and peers.py) into one Markdown table per case; stdlib only.
"""Usage: python3 bench/report.py [--vs PREFIX ...] [--title TEXT] FILE.jsonl [FILE.jsonl ...] > report.md

Each line: {"case": ..., "n": ..., "impl": ..., "ms" or "ns": ..., ["gbps": ...], ["gflops": ...]}. Later
files win on duplicates. A GB/s or GFLOP/s column appears when a case's lines carry that field. Speedups
(>1 means faster) are given for the `ufunc*` impls only, against the fastest impl whose name starts with
each `--vs` prefix (default: `numpy` and `numba`).
"""
import json
import sys

ORDER = ["numpy", "numexpr", "numba-cpu", "numba-parallel", "numba-njit-parallel", "numba-gu-cpu",
         "numba-gu-parallel"]
CASES = ["square_sum", "gaussian_pdf", "polar_distance", "hypot_like", "broadcast_add", "contiguous_add",
         "triad", "tiny_call", "matmul_small", "matmul_4x4", "matmul_256", "polygon_mask"]
RATES = [("gbps", "GB/s"), ("of_triad", "% of triad"), ("gflops", "GFLOP/s")]  # optional per-line fields, shown as columns


def load(paths):
    rows = {}  # (case, n, impl) -> record, insertion-ordered
    for path in paths:
        with open(path) as f:
            for lineno, line in enumerate(f, 1):
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    r = json.loads(line)
                    rows[(r["case"], int(r["n"]), r["impl"])] = r
                except (ValueError, KeyError) as e:
                    print(f"report: {path}:{lineno}: skipped ({e})", file=sys.stderr)
    return rows


def value(r):
    """(time, unit) of a record."""
    return (r["ms"], "ms") if "ms" in r else (r["ns"], "ns")


def ratio(base, r):
    if base is None or value(base)[1] != value(r)[1] or value(r)[0] <= 0:
        return "–"
    return f"{value(base)[0] / value(r)[0]:.2f}x"


def fastest(at_n, prefix):
    matching = [r for i, r in at_n.items() if i.startswith(prefix)]
    return min(matching, key=lambda r: value(r)[0]) if matching else None


def table(case, recs, baselines):
    rates = [(key, title) for key, title in RATES if any(key in r for r in recs)]
    cols = ["N", "impl", "time"] + [title for _, title in rates] + [f"speedup vs {b}" for b in baselines]
    out = [f"## {case}", "", "| " + " | ".join(cols) + " |", "|---:|:---|" + "---:|" * (len(cols) - 2)]
    for n in sorted({r["n"] for r in recs}):
        at_n = {r["impl"]: r for r in recs if r["n"] == n}
        bases = [fastest(at_n, b) for b in baselines]
        impls = [i for i in ORDER if i in at_n] + [i for i in at_n if i not in ORDER]
        for imp in impls:
            r = at_n[imp]
            t, unit = value(r)
            shown = f"{t:.3f} ms" if unit == "ms" else f"{t:.1f} ns"
            speedups = [ratio(b, r) if imp.startswith("ufunc") else "" for b in bases]
            cells = [f"{n:,}", imp, shown] + [f"{r[key]:.1f}" if key in r else "" for key, _ in rates]
            out.append("| " + " | ".join(cells + speedups) + " |")
    return "\n".join(out)


def main():
    args, baselines, files = sys.argv[1:], [], []
    title = "ufunc vs NumPy / numexpr / Numba"
    while args:
        a = args.pop(0)
        if a == "--vs" and args:
            baselines.append(args.pop(0))
        elif a == "--title" and args:
            title = args.pop(0)
        else:
            files.append(a)
    if not files:
        sys.exit(__doc__)
    baselines = baselines or ["numpy", "numba"]
    rows = load(files)
    seen = dict.fromkeys(case for case, _, _ in rows)
    cases = [c for c in CASES if c in seen] + [c for c in seen if c not in CASES]
    print(f"# {title}\n")
    print("\n\n".join(table(c, [r for (case, _, _), r in rows.items() if case == c], baselines) for c in cases))


if __name__ == "__main__":
    main()
