#!/usr/bin/env bash
# Runs the Rust and Python (NumPy/numexpr/Numba) benchmarks and writes bench/out/report.md; `--quick` for a smoke run.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
extra=()
if [[ "${1:-}" == "--quick" ]]; then
    extra=(--quick)
fi
mkdir -p bench/out

bash bench/setup_venv.sh
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
