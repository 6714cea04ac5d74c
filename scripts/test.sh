#!/usr/bin/env bash
# The whole test suite: installs NVRTC 13.0 (pip package, cached, idempotent) so that every
# generated CUDA kernel is compiled for real even without a GPU, then runs the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
nvrtc_dir="${UFUNC_NVRTC_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ufunc/nvrtc-13.0}"
lib="$nvrtc_dir/nvidia/cu13/lib"
if [[ ! -e "$lib/libnvrtc.so.13" ]]; then
    echo "test.sh: installing nvidia-cuda-nvrtc==13.0.* into $nvrtc_dir"
    python3 -m pip install --quiet --no-input --disable-pip-version-check --no-deps \
        --target "$nvrtc_dir" "nvidia-cuda-nvrtc==13.0.*"
fi
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export UFUNC_REQUIRE_NVRTC=1
cargo test --workspace --release "$@"
# The CUDA tests again with their output, so that skips ("no CUDA device") and ptxas's register
# report are visible in the log.
echo "test.sh: CUDA checks (NVRTC compile of every kernel; GPU tests skip without a device)"
cargo test --release --test cuda -- --nocapture --test-threads=1 2>&1 |
    grep -E "SKIPPED|^test result|registers" || true
# And once more on the host simulator, where the GPU tests run for real (none may skip): the
# generated CUDA C++ is built by the host C++ compiler and its results compared with the CPU's.
echo "test.sh: CUDA tests on the host simulator (UFUNC_CUDA_SIM=1)"
UFUNC_CUDA_SIM=1 UFUNC_REQUIRE_GPU=1 cargo test --release --test cuda
# The registration's one-block kernels on crafted candidates (unit tests of the runtime).
UFUNC_CUDA_SIM=1 UFUNC_REQUIRE_GPU=1 cargo test --release -p ufunc-runtime --lib registration::device
# The FFT convolution example end to end (device FFTs and the product kernel on the simulator).
UFUNC_CUDA_SIM=1 cargo run --release --example fft_convolution -- --size 256 --kernel 15
# The drift-correction program on its built-in movie with the cuda target (on the simulator).
UFUNC_CUDA_SIM=1 cargo run --release --example phase_correlation -- --target cuda \
    --out "${CARGO_TARGET_DIR:-target}/phase_correlation_cuda"
# Its exit status: a batch with a truncated movie aligns the other movie, leaves nothing for
# the bad one and exits non-zero; the rerun skips the finished movie and exits 0.
exit_dir="${CARGO_TARGET_DIR:-target}/phase_correlation_exit"
rm -rf "$exit_dir"
batch=(tests/fixtures/movie/movie_f32.npy tests/fixtures/movie/bad_truncated.npy)
if cargo run --release --example phase_correlation -- "${batch[@]}" --out "$exit_dir"; then
    echo "test.sh: the program exited 0 after a movie failed" >&2
    exit 1
fi
if [[ ! -s "$exit_dir/movie_f32.shifts.csv" ]] || compgen -G "$exit_dir/bad_truncated*" >/dev/null; then
    echo "test.sh: the batch's outputs are not the good movie's alone: $(ls "$exit_dir")" >&2
    exit 1
fi
cargo run --release --example phase_correlation -- "${batch[0]}" --out "$exit_dir"
# A subset under valgrind memcheck (host paths, the simulator's device paths, the fuzz corpus).
echo "test.sh: valgrind memcheck subset"
bash scripts/valgrind.sh
