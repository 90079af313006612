# The README's quick start: `make serve` and `make test` on a fresh machine.
# `make serve ARGS="--http-port 9000 --log-verbose 1"` passes more tritonserver flags.
# The interpreter .venv is built with: python3, or the system's when python3 is an unoptimised
# build (tools/pick-python says why); `make PYTHON=python3.12 ...` chooses another.
PYTHON ?= $(shell tools/pick-python)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: serve lint test test-all test-gpu bench install clean native

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch first, alone: `torch==2.13.0` resolves to the CPU wheel on disk, so nothing installed
# after it can pull a CUDA torch.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Tritium's libtritonserver.so for compiled Triton backends (native backends), built ahead of
# first use; without a C++ compiler only native backends are unavailable, so a failure is ignored.
native: $(STAMP)
	-$(BIN)/python -c "import sys; from tritium.backend.native import build; sys.exit(build.main())"

serve: $(STAMP) native
	$(BIN)/tritium serve --model-repository examples/model_repository \
		--backend-directory examples/backends $(ARGS)

# ruff (style, import order) over the code, mypy (types) and lint-imports (the layering of
# DESIGN.md, contracts in pyproject.toml) over src/. PYTHONPATH: the checks read this tree's src/
# even when the venv's editable install points at another checkout.
lint: $(STAMP)
	$(BIN)/ruff check src tests bench examples
	$(BIN)/mypy
	PYTHONPATH=src $(BIN)/lint-imports

test: lint native
	$(BIN)/pytest -q

# Everything, including the slow soak/fuzz runs that `make test` skips.
test-all: lint native
	$(BIN)/pytest -q -m ''

# The tests that need a CUDA GPU (marked `gpu`; `make test` skips them, with the reason, where
# there is none). tools/gpu-check.sh runs this on the GPU machine.
test-gpu: native
	$(BIN)/pytest -q -m gpu -rs

# Load comes from wrk (HTTP) and h2load (gRPC), installed from Debian when missing.
bench: $(STAMP) native
	$(BIN)/pip install -q -e '.[test,bench]'
	command -v wrk >/dev/null && command -v h2load >/dev/null || \
		(apt-get update && apt-get install -y wrk nghttp2-client)
	$(BIN)/python bench/bench.py

clean:
	rm -rf $(VENV) build src/*.egg-info
