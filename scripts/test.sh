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
status=0
cargo run --release --example phase_correlation -- "${batch[@]}" --out "$exit_dir" || status=$?
if [[ $status -ne 1 ]]; then
    echo "test.sh: the program exited $status, not 1, after a movie failed" >&2
    exit 1
fi
outputs=$(ls -A "$exit_dir" | tr '\n' ' ')
expected="movie_f32.aligned.mrc movie_f32.aligned.png movie_f32.drift.png movie_f32.shifts.csv movie_f32.shifts.json "
if [[ $outputs != "$expected" ]]; then
    echo "test.sh: the batch left $outputs, not the good movie's five results alone" >&2
    exit 1
fi
rerun=$(cargo run --release --example phase_correlation -- "${batch[0]}" --out "$exit_dir")
if [[ $rerun != *"0 done, 1 skipped, 0 failed"* ]]; then
    echo "test.sh: the rerun did not skip the finished movie: $rerun" >&2
    exit 1
fi
# A subset under valgrind memcheck (host paths, the simulator's device paths, the fuzz corpus).
echo "test.sh: valgrind memcheck subset"
bash scripts/valgrind.sh
