# Sourced by tests/accelerator/run.sh and bench/accelerator.sh: sets PY to a Python that
# can import jaxlite from this checkout.
#
# With a .venv made by `make`, that one.  Otherwise (a TPU machine without network) the
# machine's python3, with what jaxlite needs beyond it (numba, llvmlite, optree;
# pytest-timeout for the tests) installed from the machine's own package index
# (/opt/pypi/simple) into /tmp/jaxlite-site, jaxlite read from src/ and its C extension
# built in place.  The machine's own NumPy and JAX stay first on the path.
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
            || { echo "could not install numba, optree, pytest-timeout" >&2; exit 1; }
    fi
    export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}:$SITE
    if ! ls src/jaxlite/core/_eager_ops*.so >/dev/null 2>&1; then
        $PY setup.py -q build_ext --inplace >/dev/null 2>&1 \
            || echo "C extension not built (the Python path is used)" >&2
    fi
fi
