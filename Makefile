# The README's quick start: `make serve` and `make test` on a fresh machine.
# `make serve ARGS="--http-port 9000 --log-verbose 1"` passes more tritonserver flags.
# The interpreter .venv is built with: python3, or the system's when python3 is an unoptimised
# build (tools/pick-python says why); `make PYTHON=python3.12 ...` chooses another.
PYTHON ?= $(shell tools/pick-python)
VENV := .venv
BIN := $(VENV)/bin
# Two installs share .venv: Tritium alone (what `make serve` needs) and the test extra on top.
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# PyTorch's CPU index: its `2.13.0+cpu` wheel outranks PyPI's CUDA build of the same version, so
# the test venv gets CPU torch without NVIDIA's runtime wheels. Where that index is out of reach
# (a machine with no network but PyPI), pip goes on with PyPI and its find-links; `make
# TORCH_INDEX= test` drops it (a GPU machine then gets PyPI's CUDA build).
TORCH_INDEX ?= --extra-index-url https://download.pytorch.org/whl/cpu

.PHONY: serve lint test test-all test-gpu bench install install-test clean native

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# `make serve`: Tritium and its dependencies only; no framework (the example models are a
# python-backend model, the built-in identity backend and an example custom backend).
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $(STAMP)

# `make test`: torch first, alone, as the CPU build (TORCH_INDEX; on this project's build
# machine `torch==2.13.0` also resolves to the CPU wheel on its disk), so nothing installed after
# it can pull a CUDA torch; then the test extra (frameworks, Ray, clients, linters).
$(TEST_STAMP): $(STAMP)
	$(BIN)/pip install -q torch==2.13.0 $(TORCH_INDEX)
	$(BIN)/pip install -q -e '.[test]'
	touch $(TEST_STAMP)

install: $(STAMP)
install-test: $(TEST_STAMP)

# Tritium's libtritonserver.so for compiled Triton backends (native backends), built ahead of
# first use; without a C++ compiler only native backends are unavailable, so a failure is ignored.
# And the sources' bytecode: an editable install writes none, and CPython 3.11.2 (Debian 12's)
# can fail "AST constructor recursion depth mismatch" when model-load threads compile modules
# imported for the first time side by side (CPython gh-106905).
native: $(STAMP)
	$(BIN)/python -m compileall -q src
	-$(BIN)/python -c "import sys; from tritium.backend.native import build; sys.exit(build.main())"

serve: $(STAMP) native
	$(BIN)/tritium serve --model-repository examples/model_repository \
		--backend-directory examples/backends $(ARGS)

# ruff (style, import order) over the code, mypy (types) and lint-imports (the layering of
# docs/design.md, contracts in pyproject.toml) over src/. PYTHONPATH: the checks read this tree's src/
# even when the venv's editable install points at another checkout.
lint: $(TEST_STAMP)
	$(BIN)/ruff check src tests bench examples
	$(BIN)/mypy
	PYTHONPATH=src $(BIN)/lint-imports

# One pytest-xdist worker per core (WORKERS=1 runs in one process); then the Ray tests on
# their own: a simulated Ray cluster starting beside another worker's servers could time out.
# The slowest tests are listed at the end: where the suite's time goes, in every CI log.
WORKERS ?= auto
PYTEST_PARALLEL := $(BIN)/pytest -q -n $(WORKERS) --dist loadgroup --durations=25 \
	--ignore=tests/ray_placement
test: lint native
	$(PYTEST_PARALLEL)
	$(BIN)/pytest -q tests/ray_placement

# Everything, including the slow soak/fuzz runs that `make test` skips.
test-all: lint native
	$(PYTEST_PARALLEL) -m ''
	$(BIN)/pytest -q -m '' tests/ray_placement

# The tests that need a CUDA GPU (marked `gpu`; `make test` skips them, with the reason, where
# there is none). tools/gpu-check.sh runs this on the GPU machine.
test-gpu: native
	$(BIN)/pytest -q -m gpu -rs

# Load comes from wrk (HTTP) and h2load (gRPC), installed from Debian when missing.
bench: $(TEST_STAMP) native
	$(BIN)/pip install -q -e '.[test,bench]'
	command -v wrk >/dev/null && command -v h2load >/dev/null || \
		(apt-get update && apt-get install -y wrk nghttp2-client)
	$(BIN)/python bench/bench.py

clean:
	rm -rf $(VENV) build src/*.egg-info
