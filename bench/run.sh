#!/usr/bin/env bash
# Runs a benchmark suite with its Python peers and writes a Markdown report under bench/out/:
#   bash bench/run.sh [--quick]        #[vectorize]/#[guvectorize] vs NumPy/numexpr/Numba -> report.md
#   bash bench/run.sh fft [--quick]    ufunc::fft and ufunc::signal vs NumPy/SciPy/pyFFTW/mkl_fft -> fft.md
# `--quick` for a smoke run.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
suite=ufuncs
extra=()
for arg in "$@"; do
    case "$arg" in
        --quick) extra=(--quick) ;;
        fft) suite=fft ;;
        *) echo "run.sh: unknown argument '$arg'" >&2; exit 2 ;;
    esac
done
mkdir -p bench/out

bash bench/setup_venv.sh
if [[ "$suite" == fft ]]; then
    echo "run: Rust bench -> bench/out/fft-rust.jsonl" >&2
    cargo bench --bench fft -- --json "${extra[@]}" > bench/out/fft-rust.jsonl
    echo "run: peers -> bench/out/fft-peers.jsonl" >&2
    bench/.venv/bin/python bench/peers_fft.py "${extra[@]}" > bench/out/fft-peers.jsonl
    bench/.venv/bin/python bench/report.py --title "ufunc::fft and ufunc::signal vs NumPy, SciPy, pyFFTW, mkl_fft" \
        --vs mkl_fft --vs scipy --vs pyfftw bench/out/fft-rust.jsonl bench/out/fft-peers.jsonl | tee bench/out/fft.md
    exit 0
fi
echo "run: Rust bench -> bench/out/rust.jsonl" >&2
cargo bench --bench vectorize -- --json "${extra[@]}" > bench/out/rust.jsonl
echo "run: Rust bench built with -C target-cpu=native (the dispatch check)" >&2
RUSTFLAGS="-C target-cpu=native" CARGO_TARGET_DIR=target/native \
    cargo bench --bench vectorize -- --json --suffix @native "${extra[@]}" >> bench/out/rust.jsonl
echo "run: Rust gufunc bench -> bench/out/rust.jsonl" >&2
cargo bench --bench guvectorize -- --json "${extra[@]}" >> bench/out/rust.jsonl
echo "run: peers -> bench/out/peers.jsonl" >&2
bench/.venv/bin/python bench/peers.py "${extra[@]}" > bench/out/peers.jsonl
bench/.venv/bin/python bench/report.py bench/out/rust.jsonl bench/out/peers.jsonl | tee bench/out/report.md
