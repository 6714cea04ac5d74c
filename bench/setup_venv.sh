#!/usr/bin/env bash
# Creates bench/.venv with pinned NumPy, numexpr and Numba for peers.py, and SciPy, scikit-image,
# pyFFTW and mkl_fft for peers_registration.py; idempotent, non-interactive.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
stamp="$venv/.bench-requirements"
# Wheels exist for CPython 3.11 on manylinux_2_28 x86_64; numba 0.68.1 needs numpy <2.6 and llvmlite 0.50.
reqs="numpy==2.4.6
numexpr==2.14.2
llvmlite==0.50.0
numba==0.68.1
scipy==1.17.1
scikit-image==0.26.0
pyfftw==0.15.1
mkl_fft==2.3.2"

if [[ ! -x "$venv/bin/python" ]]; then
    echo "setup_venv: creating $venv"
    python3 -m venv "$venv"
else
    echo "setup_venv: $venv exists"
fi

if [[ -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$reqs" ]]; then
    echo "setup_venv: requirements already installed ($(echo $reqs))"
else
    echo "setup_venv: installing $(echo $reqs)"
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pip install --no-input --disable-pip-version-check --only-binary=:all: $reqs
    printf '%s' "$reqs" > "$stamp"
    echo "setup_venv: done"
fi
