#!/usr/bin/env bash
# make test-accelerator: jaxlite's accelerator tests on this machine's accelerator.
#
#   JAXLITE_TEST_PLATFORM   the platform (default tpu; xla_cpu runs the same on the CPU plugin)
#
# Works on a TPU machine without network: when `make` has made no .venv, it uses python3 and
# installs what jaxlite needs beyond it (numba, llvmlite, optree) from the machine's own
# package index (/opt/pypi/simple; pytest-timeout too) into a folder under /tmp, and builds the C extension in
# place.  Then, one program at a time (one process may hold a chip):
#   1. real JAX, when installed, runs tests/accelerator/programs.py on the chip and saves
#      its results (reference.py);
#   2. jaxlite runs the accelerator tests on the chip in one process, compared with those;
#   3. the chapter's example programs run with the platform as the default device;
#   4. the demo (make demo's program) runs with it as the default device.
# It prints the counts of each part and fails when any part failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
PLATFORM=${JAXLITE_TEST_PLATFORM:-tpu}
export JAXLITE_TEST_PLATFORM=$PLATFORM
TMP=$(mktemp -d)
if [ -x .venv/bin/python ]; then
    PY=.venv/bin/python
else
    PY=python3
    SITE=/tmp/jaxlite-site
    if ! $PY -c "import numba, optree, pytest_timeout" 2>/dev/null; then
        if [ -d /opt/pypi/simple ]; then
            INDEX=(--index-url file:///opt/pypi/simple)
        else
            INDEX=()
        fi
        PIP_CONFIG_FILE=/dev/null $PY -m pip install --isolated -q --only-binary=:all: \
            "${INDEX[@]}" --target "$SITE" "numba>=0.68,<0.70" "optree>=0.11,<1" \
            "pytest-timeout>=2.3,<3" \
            || { echo "test-accelerator: could not install numba, optree, pytest-timeout" >&2; exit 1; }
    fi
    # the machine's own numpy/JAX stay first; jaxlite is read from src/
    export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}:$SITE
    if ! ls src/jaxlite/core/_eager_ops*.so >/dev/null 2>&1; then
        $PY setup.py -q build_ext --inplace >/dev/null 2>&1 \
            || echo "test-accelerator: C extension not built (the Python path is used)" >&2
    fi
fi
failed=""
echo "== test-accelerator on platform $PLATFORM ($($PY --version))"
REF=(env)
if $PY -c "import jax" 2>/dev/null && [ "$PLATFORM" != xla_cpu ]; then
    echo "== 1. real JAX's results on the chip"
    if JAX_PLATFORMS=$PLATFORM $PY tests/accelerator/reference.py --impl jax \
            --out "$TMP/ref.npz"; then
        REF=(env JAXLITE_ACCEL_REFERENCE="$TMP/ref.npz")
    else
        failed="$failed reference"
    fi
fi
echo "== 2. jaxlite's accelerator tests on $PLATFORM"
"${REF[@]}" JAX_PLATFORMS=$PLATFORM,cpu $PY -m pytest -p no:xdist -p no:cacheprovider -q \
    -o addopts="" --timeout=600 tests/accelerator tests/test_pjrt_pieces.py \
    ${JAXLITE_ACCEL_PYTEST_ARGS:-} \
    || failed="$failed tests/accelerator"
echo "== 3. the chapter's programs with $PLATFORM as the default device"
JAX_PLATFORMS=cpu $PY -m pytest -p no:xdist -p no:cacheprovider -q -o addopts="" \
    --timeout=600 tests/test_examples_pjrt.py || failed="$failed examples"
echo "== 4. the demo (python -m jaxlite demo) with $PLATFORM as the default device"
JAX_PLATFORMS=$PLATFORM,cpu $PY -m jaxlite demo || failed="$failed demo"
rm -rf "$TMP"
if [ -n "$failed" ]; then echo "test-accelerator: failed:$failed" >&2; exit 1; fi
echo "test-accelerator: all parts passed"
