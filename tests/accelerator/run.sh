#!/usr/bin/env bash
# make test-accelerator: jaxlite's accelerator tests on this machine's accelerator.
#
#   JAXLITE_TEST_PLATFORM   the platform (default tpu; xla_cpu runs the same on the CPU plugin)
#
# Works on a TPU machine without network: when `make` has made no .venv, it uses python3 and
# installs what jaxlite needs beyond it from the machine's own package index
# (tests/accelerator/env.sh).  Then, one program at a time (one process may hold a chip):
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
source tests/accelerator/env.sh
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
