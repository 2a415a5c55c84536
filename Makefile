# jaxlite: `make demo` runs the chapter's programs, `make test` runs the test suite.
# Both create .venv and install what they need on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: demo test bench fuzz install clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $(STAMP)

$(TEST_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(TEST_STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m jaxlite demo

test: $(TEST_STAMP)
	$(BIN)/python -m pytest tests

fuzz: $(TEST_STAMP)
	$(BIN)/python tests/run_fuzz.py -n $${FUZZ_N:-10000}

bench: $(TEST_STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info
