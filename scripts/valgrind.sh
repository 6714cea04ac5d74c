#!/usr/bin/env bash
# A subset of the test suite under valgrind memcheck, zero errors required: the loop engine,
# the gufunc runner, the hostile-shape and reliability tests, with few property cases so the
# whole run takes a few minutes. Installs valgrind (Debian package) when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v valgrind >/dev/null; then
    echo "valgrind.sh: installing valgrind"
    if [[ $(id -u) -eq 0 ]]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update -qq && $sudo apt-get install -y -qq valgrind >/dev/null
fi
# `cuda` runs on the host simulator: device memory is host memory there, so memcheck sees
# every kernel's reads and writes.
tests=(reliability vectorize_api guvectorize fuzz engine_props guvectorize_props cuda)
args=()
for t in "${tests[@]}"; do args+=(--test "$t"); done
# The test binaries cargo builds, by name.
mapfile -t bins < <(cargo test --release "${args[@]}" --no-run --message-format=json 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["executable"])')
if [[ ${#bins[@]} -ne ${#tests[@]} ]]; then
    echo "valgrind.sh: expected ${#tests[@]} test binaries, found ${#bins[@]}" >&2
    exit 1
fi
export PROPTEST_CASES="${PROPTEST_CASES:-16}" UFUNC_CUDA_SIM=1 UFUNC_REQUIRE_GPU=1
# NVRTC is a whole compiler: under memcheck one kernel takes minutes. Its tests run (and must
# pass) in the main suite; here they skip, as on a machine without NVRTC.
# (CI=true would make them required.)
unset UFUNC_REQUIRE_NVRTC CI
export LD_LIBRARY_PATH=""
for bin in "${bins[@]}"; do
    echo "valgrind.sh: $(basename "$bin")"
    # Child processes (tests that re-run their own binary) are checked too, the simulator's C++
    # compiler is not; any memory error fails the run. Skipped: a test of how a missing
    # compiler's exec failure reads, which valgrind's exec wrapper words differently.
    valgrind -q --error-exitcode=99 --leak-check=no --trace-children=yes \
        --trace-children-skip='*/c++,*/g++*,*/cc1plus,*/as,*/ld,*/ld.*,*/collect2,*/gcc*,*-linux-gnu-*' \
        "$bin" --test-threads=2 -q \
        --skip cache::the_simulator_reports_its_compiler_failing
done
echo "valgrind.sh: no memory errors"
