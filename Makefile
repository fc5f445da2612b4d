# The two commands that matter: `make demo` runs the demo mesh, `make test` runs every check.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test lint typecheck unit bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/asya demo

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/python -m pytest tests/unit

test: lint typecheck
	$(BIN)/python -m pytest

bench: install
	$(BIN)/python -m bench.sidecar_hop

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache cdk.out
