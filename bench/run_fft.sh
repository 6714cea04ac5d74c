#!/usr/bin/env bash
# Runs the FFT and FFT-convolution benchmarks (benches/fft.rs) and their Python peers
# (bench/peers_fft.py) in one go and writes bench/out/fft.md; `--quick` for a smoke run.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
extra=()
if [[ "${1:-}" == "--quick" ]]; then
    extra=(--quick)
fi
mkdir -p bench/out

bash bench/setup_venv.sh
echo "run_fft: Rust bench -> bench/out/fft-rust.jsonl" >&2
cargo bench --bench fft -- --json "${extra[@]}" > bench/out/fft-rust.jsonl
echo "run_fft: peers -> bench/out/fft-peers.jsonl" >&2
bench/.venv/bin/python bench/peers_fft.py "${extra[@]}" > bench/out/fft-peers.jsonl
bench/.venv/bin/python bench/report.py --title "ufunc::fft and ufunc::signal vs NumPy, SciPy, pyFFTW, mkl_fft" \
    --vs mkl_fft --vs scipy --vs pyfftw bench/out/fft-rust.jsonl bench/out/fft-peers.jsonl | tee bench/out/fft.md
