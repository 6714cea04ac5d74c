#!/usr/bin/env bash
# Builds the CUDA test binary and the GPU benchmark here and copies them, with a runner, into
# .gpu/ (ignored by git) for a GPU machine without a Rust toolchain (with the device tool: carry
# `.gpu`). There, one command runs the GPU tests (failing, not skipping, without a device) and
# the GPU benchmarks:
#   bash .gpu/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
exclude="$(git rev-parse --git-path info/exclude)"
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >> "$exclude"
rm -rf .gpu && mkdir -p .gpu
tests=$(cargo test --release --test cuda --no-run 2>&1 | grep -o '[^ (]*/release/deps/cuda-[0-9a-f]*' | head -1)
lib_tests=$(cargo test --release -p ufunc-runtime --lib --no-run 2>&1 |
    grep -o '[^ (]*/release/deps/ufunc_runtime-[0-9a-f]*' | head -1)
bench=$(cargo bench --bench cuda --no-run 2>&1 | grep -o '[^ (]*/release/deps/cuda-[0-9a-f]*' | head -1)
fft_bench=$(cargo bench --bench fft --no-run 2>&1 | grep -o '[^ (]*/release/deps/fft-[0-9a-f]*' | head -1)
reg_bench=$(cargo bench --bench registration --no-run 2>&1 |
    grep -o '[^ (]*/release/deps/registration-[0-9a-f]*' | head -1)
vec_bench=$(cargo bench --bench vectorize --no-run 2>&1 |
    grep -o '[^ (]*/release/deps/vectorize-[0-9a-f]*' | head -1)
cargo build --release --example phase_correlation
program="${CARGO_TARGET_DIR:-target}/release/examples/phase_correlation"
cp "$tests" .gpu/cuda-tests
cp "$lib_tests" .gpu/runtime-tests
cp "$bench" .gpu/cuda-bench
cp "$fft_bench" .gpu/fft-bench
cp "$reg_bench" .gpu/registration-bench
cp "$vec_bench" .gpu/vectorize-bench
cp "$program" .gpu/phase_correlation
cp bench/peers_fft.py bench/peers_registration.py bench/peers_methods.py bench/seed_movie.py .gpu/
cat > .gpu/run.sh <<'RUN'
#!/usr/bin/env bash
# GPU tests and benchmarks of the cuda target (CUDA 13.0: libnvrtc.so.13 beside the toolkit).
#   bash .gpu/run.sh [STEP...]   steps: tests bench fft registration seed (default: all, about
#                                3 minutes on an H100; a lent session has 15 in all), and, not
#                                by default: slow (20 frames of a slow camera length, 3838 =
#                                2 x 19 x 101, on cuda and on all cores, about a minute) and cpu2
#                                (the CPU goals on two of this host's cores, a quieter stand-in
#                                for CI's 2-core machine, about 2 minutes)
# Every step runs even when one before it failed; each step's output is also kept in
# $OUT (the device tool's folder) or ./logs, and the exit status is that of the tests.
set -uo pipefail
cd "$(dirname "$0")"
logs="${OUT:-$PWD/logs}"
mkdir -p "$logs"
for d in /usr/local/cuda/lib64 /usr/local/cuda-13.0/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    if [[ -e "$d/libnvrtc.so.13" ]]; then
        export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
done
step() { # step NAME SECONDS COMMAND...: runs COMMAND under a time limit, its output teed to a log
    local name=$1 limit=$2
    shift 2
    echo "== $name: $*"
    timeout "$limit" "$@" 2>&1 | tee "$logs/$name.log"
    local rc=${PIPESTATUS[0]}
    echo "== $name: exit $rc"
    return "$rc"
}
steps=("$@")
[[ ${#steps[@]} -gt 0 ]] || steps=(tests bench fft registration seed)
wanted() { [[ " ${steps[*]} " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
status=0
if wanted tests; then
    UFUNC_REQUIRE_GPU=1 UFUNC_REQUIRE_NVRTC=1 step tests 180 ./cuda-tests --test-threads=1
    status=$?
    # The runtime's unit tests that launch kernels on crafted data (the registration's folds).
    UFUNC_REQUIRE_GPU=1 UFUNC_REQUIRE_NVRTC=1 step runtime-tests 60 ./runtime-tests registration::device
    runtime=$?
    [[ $status -ne 0 ]] || status=$runtime
fi
wanted bench && step cuda-bench 60 ./cuda-bench
# Device FFTs on device data, then cuFFT's own time through CuPy where it is installed (the
# goal: the 2048x2048 c2c row within 10% of CuPy's).
wanted fft && step fft 60 sh -c './fft-bench --device-only --json; python3 peers_fft.py --cupy-only'
# Registration per frame on the device against the frame's copy (goal: within 1.2x), alone and
# inside a movie held in memory, and the CPU peers on this host's cores; then the seed job end
# to end (89 frames of 2048x2048 from a 1.4 GiB .npy) on cuda (both references) and on all cores.
wanted registration &&
    step registration 120 sh -c './registration-bench --device-only; python3 peers_registration.py --quick'
if wanted seed && step seed-movie 90 python3 seed_movie.py seed.npy; then
    for run in "cuda sum" "cuda first" "parallel sum"; do
        set -- $run
        step "seed-$1-$2" 60 ./phase_correlation seed.npy --target "$1" --reference "$2" \
            --out "out-$1-$2" --force
    done
fi
# Frames of a length whose transforms are slow, aligned at the fast length within it (3780) on
# both targets: the device keeps the full spectra and reads the movie once.
if wanted slow && step slow-movie 90 python3 seed_movie.py slow.npy --frames 20 --size 3838; then
    for target in cuda parallel; do
        step "slow-$target" 90 ./phase_correlation slow.npy --target "$target" \
            --out "out-slow-$target" --force
    done
fi
# The CPU benchmarks and their peers pinned to two cores, each peer limited to the cores it
# may use (the peers count them with `os.sched_getaffinity`).
if wanted cpu2; then
    two="taskset -c 0,1"
    step cpu2-methods 90 sh -c "for c in triad add_reduce_all add_reduce_axis0 add_reduce_axis1 \
        max_reduce_all add_accumulate; do $two ./vectorize-bench --only \$c; done; \
        $two python3 peers_methods.py --only add_reduce_all,add_reduce_axis0,add_reduce_axis1,max_reduce_all,add_accumulate"
    step cpu2-fft 150 sh -c "$two ./fft-bench --quick; $two python3 peers_fft.py --quick"
    step cpu2-registration 150 sh -c "$two ./registration-bench --quick; \
        $two python3 peers_registration.py --quick"
fi
exit "$status"
RUN
du -sh .gpu
