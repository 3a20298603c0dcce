# The two commands a new user needs: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Installing prints nothing but errors: no upgrade notice, no root-user warning, no notes.
PIP := PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore $(BIN)/python -m pip -qq

.PHONY: run test bench lint clean

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/pcscope

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2

# `make bench planted` runs one section: the words after `bench` are its arguments.
ifeq (bench,$(firstword $(MAKECMDGOALS)))
BENCH_ARGS := $(wordlist 2,$(words $(MAKECMDGOALS)),$(MAKECMDGOALS))
$(eval $(BENCH_ARGS):;@:)
endif

bench: $(STAMP)
	$(BIN)/python -m bench $(BENCH_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
