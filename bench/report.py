# Merges bench JSON lines (Rust and peers.py) into one Markdown table per case; stdlib only.
"""Usage: python3 bench/report.py FILE.jsonl [FILE.jsonl ...] > report.md

Each line: {"case": ..., "n": ..., "impl": ..., "ms" or "ns": ..., ["gbps": ...], ["gflops": ...]}. Later
files win on duplicates. A GB/s or GFLOP/s column appears when a case's lines carry that field. Speedups
(>1 means faster) are given for the `ufunc*` impls only, against numpy and the fastest `numba*` impl.
"""
import json
import sys

ORDER = ["numpy", "numexpr", "numba-cpu", "numba-parallel", "numba-njit-parallel", "numba-gu-cpu",
         "numba-gu-parallel"]
CASES = ["square_sum", "gaussian_pdf", "polar_distance", "hypot_like", "broadcast_add", "contiguous_add",
         "triad", "tiny_call", "matmul_small", "matmul_4x4", "matmul_256", "polygon_mask"]
RATES = [("gbps", "GB/s"), ("gflops", "GFLOP/s")]  # optional per-line fields, shown as columns


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


def table(case, recs):
    rates = [(key, title) for key, title in RATES if any(key in r for r in recs)]
    cols = ["N", "impl", "time"] + [title for _, title in rates] + ["speedup vs numpy", "speedup vs best numba"]
    out = [f"## {case}", "", "| " + " | ".join(cols) + " |", "|---:|:---|" + "---:|" * (len(cols) - 2)]
    for n in sorted({r["n"] for r in recs}):
        at_n = {r["impl"]: r for r in recs if r["n"] == n}
        numba = [r for i, r in at_n.items() if i.startswith("numba")]
        best_numba = min(numba, key=lambda r: value(r)[0]) if numba else None
        impls = [i for i in ORDER if i in at_n] + [i for i in at_n if i not in ORDER]
        for imp in impls:
            r = at_n[imp]
            t, unit = value(r)
            shown = f"{t:.3f} ms" if unit == "ms" else f"{t:.1f} ns"
            vs_np = vs_nb = ""
            if imp.startswith("ufunc"):
                vs_np, vs_nb = ratio(at_n.get("numpy"), r), ratio(best_numba, r)
            cells = [f"{n:,}", imp, shown] + [f"{r[key]:.1f}" if key in r else "" for key, _ in rates]
            out.append("| " + " | ".join(cells + [vs_np, vs_nb]) + " |")
    return "\n".join(out)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows = load(sys.argv[1:])
    seen = dict.fromkeys(case for case, _, _ in rows)
    cases = [c for c in CASES if c in seen] + [c for c in seen if c not in CASES]
    print("# ufunc vs NumPy / numexpr / Numba\n")
    print("\n\n".join(table(c, [r for (case, _, _), r in rows.items() if case == c]) for c in cases))


if __name__ == "__main__":
    main()
