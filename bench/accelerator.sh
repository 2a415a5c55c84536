#!/usr/bin/env bash
# make bench-accelerator: the accelerator workloads T0-T8 (bench/_workloads_tpu.py), jaxlite
# and real JAX back to back on this machine's accelerator, one process at a time; the table
# goes into bench/RESULTS.md (section "Accelerator (T0-T8)").
#
#   JAXLITE_TEST_PLATFORM   the platform (default tpu)
#
# On a TPU machine without network it installs what jaxlite needs from the machine's own
# package index first (tests/accelerator/env.sh).  Extra arguments go to the script
# (--quick, --libs jaxlite, --out results.json).
set -uo pipefail
cd "$(dirname "$0")/.."
PLATFORM=${JAXLITE_TEST_PLATFORM:-tpu}
source tests/accelerator/env.sh
echo "== bench-accelerator on platform $PLATFORM ($($PY --version))"
exec $PY bench/_workloads_tpu.py --platform "$PLATFORM" --write "$@"
