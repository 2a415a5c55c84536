# jaxlite: `make demo` runs the chapter's programs, `make test` runs the test suite.
# Both create .venv and install what they need on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
DEMO_STAMP := $(VENV)/.installed-demo

.PHONY: demo test test-slow test-all test-accelerator bench bench-accelerator fuzz install clean

$(STAMP): pyproject.toml setup.py src/jaxlite/core/_eager_ops.c src/jaxlite/primitives/_f32math.c
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $(STAMP)

$(TEST_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(TEST_STAMP)

# the demo's several-process section runs under MPI (the mpi extra: mpi4py and MPICH); on a
# TPU machine (a TPU VM shows its chips as /dev/accel<n> or /dev/vfio/<n>) the tpu extra
# (libtpu) too, so that the demo runs on the chip
comma := ,
DEMO_EXTRAS := mpi$(if $(wildcard /dev/accel0 /dev/vfio/0),$(comma)tpu)
$(DEMO_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install -q -e '.[$(DEMO_EXTRAS)]'
	touch $(DEMO_STAMP)

install: $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/python -m jaxlite demo

# the fast tier (a fixed sample of the big oracle tables); test-slow runs the rest of them
# and the differential harnesses (against JAX, and the xla_cpu platform against the
# interpreter) on all of their inputs; test-all runs both (as CI does).  Each
# test runs under a time limit, so a test that waits forever fails instead of hanging.
# Test files are shared out among TEST_WORKERS processes (pytest-xdist; a file's tests stay
# in one process, in order); TEST_WORKERS=0 runs everything in this process.
TEST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

MULTI := JAX_NUM_CPU_DEVICES=8 $(PYTEST)

# tests/multidevice runs in processes of its own, with 8 CPU devices (jaxlite and JAX);
# tests/multiprocess starts MPI jobs of 2 ranks (mpiexec, each under a timeout) from the
# first run's workers.  Every part runs even when an earlier one failed (a failure never
# hides the others'); the target fails at the end, naming the parts that failed.
# In test-slow, pytest's status 5 (no test selected) of tests/multidevice is a pass.
test: $(TEST_STAMP)
	failed=""; \
	$(PYTEST) -m "not slow" --timeout=300 --ignore=tests/multidevice tests \
	    || failed="$$failed tests"; \
	$(MULTI) -m "not slow" --timeout=300 tests/multidevice \
	    || failed="$$failed tests/multidevice"; \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed" >&2; exit 1; fi

test-slow: $(TEST_STAMP)
	failed=""; \
	$(PYTEST) -m slow --timeout=900 --ignore=tests/multidevice tests \
	    || failed="$$failed tests"; \
	$(MULTI) -m slow --timeout=900 tests/multidevice; rc=$$?; \
	    [ $$rc -eq 0 ] || [ $$rc -eq 5 ] || failed="$$failed tests/multidevice"; \
	JAXLITE_DIFF_FULL=1 $(BIN)/python -m pytest --timeout=1800 tests/test_differential.py \
	    || failed="$$failed tests/test_differential.py"; \
	JAXLITE_DIFF_FULL=1 $(BIN)/python -m pytest --timeout=1800 \
	    tests/test_differential_pjrt.py || failed="$$failed tests/test_differential_pjrt.py"; \
	if [ -n "$$failed" ]; then echo "make test-slow: failed:$$failed" >&2; exit 1; fi

test-all: test test-slow

# on a machine with an accelerator (a TPU by default; JAXLITE_TEST_PLATFORM=xla_cpu for the
# XLA:CPU plugin): real JAX's results on the chip, then jaxlite's accelerator tests and the
# chapter's programs there, one process at a time.  It needs no network: without a .venv it
# installs what it lacks from the machine's own package index (tests/accelerator/run.sh).
test-accelerator:
	tests/accelerator/run.sh

# on a machine with an accelerator: the accelerator workloads T0-T8, jaxlite and real JAX
# back to back, into bench/RESULTS.md (bench/accelerator.sh)
bench-accelerator:
	bench/accelerator.sh

fuzz: $(TEST_STAMP)
	$(BIN)/python tests/run_fuzz.py -n $${FUZZ_N:-10000}

bench: $(TEST_STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info
