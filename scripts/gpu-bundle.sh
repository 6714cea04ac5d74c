#!/usr/bin/env bash
# Builds the CUDA test binary and the GPU benchmark here and copies them into .gpu/ (ignored by
# git) for a GPU machine without a Rust toolchain (with the device tool: carry `.gpu`). The GPU
# machine has CUDA 13.0, hence libnvrtc.so.13 (e.g. in /usr/local/cuda/lib64). There, run
#   export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH
#   UFUNC_REQUIRE_GPU=1 .gpu/cuda-tests --test-threads=1
#   .gpu/cuda-bench
set -euo pipefail
cd "$(dirname "$0")/.."
exclude="$(git rev-parse --git-path info/exclude)"
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >> "$exclude"
rm -rf .gpu && mkdir -p .gpu
tests=$(cargo test --release --test cuda --no-run 2>&1 | grep -o 'target/release/deps/cuda-[0-9a-f]*' | head -1)
bench=$(cargo bench --bench cuda --no-run 2>&1 | grep -o 'target/release/deps/cuda-[0-9a-f]*' | head -1)
cp "$tests" .gpu/cuda-tests
cp "$bench" .gpu/cuda-bench
du -sh .gpu
