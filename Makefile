# The two commands that matter: `make demo` runs the demo mesh on the local stack, `make test` runs
# every check. Both install what they need on first use (.venv from PyPI, the CDK CLI from npm; for
# the tests, Debian's Chromium, which the console's browser tests drive).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NPM_STAMP := node_modules/.installed
# The console's browser tests run Debian's Chromium, never a browser a test tool downloads.
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
MESH ?= examples/catalogue/mesh.yaml
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_VERSION_CHECK := 1

.PHONY: install demo flow-demo up test lint typecheck unit integration synth bench chaos conformance screenshots clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# setuptools' notice that an editable install of packages mapped from several folders imports through
	# a finder ("Editable installation."): informational, and always printed for this layout
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install --quiet --no-compile -e ".[dev]"
	# pip compiles the installed modules one after another; compileall does it on every core (63 s -> 42 s
	# for the whole install). Compiled ahead because where PYTHONDONTWRITEBYTECODE is set (as on CI),
	# nothing compiled on import is kept. A library file that does not compile is pip's case too: ignored
	$(BIN)/python -m compileall -q -j 0 $(VENV)/lib > /dev/null || true
	touch $(STAMP)

$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $(NPM_STAMP)

$(CHROMIUM):
	$(SUDO) apt-get install -y -q --no-install-recommends chromium || ($(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q --no-install-recommends chromium)

install: $(STAMP) $(NPM_STAMP)

demo: install
	$(BIN)/asya demo --config $(MESH)

# the answers example: a flow written as a Python program (a model's confidence decides, a judge loops
# a draft back to be refined, a failing model falls back); prints the path each task took
flow-demo: install
	$(BIN)/asya demo --config examples/answers/mesh.yaml

up: install
	$(BIN)/asya up --config $(MESH)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

# `make unit` runs the unit and template tests on every core, a file's tests on one worker (their module
# fixtures made once); the integration tests, which start stacks and time what they wait for, run one at
# a time.
PARALLEL := -n auto --dist loadfile
# the slowest tests of each run, so that where the suite's time goes is in every CI log
DURATIONS := --durations=15

unit: install
	$(BIN)/python -m pytest $(PARALLEL) tests/unit tests/cdk

integration: install $(CHROMIUM)
	$(BIN)/python -m pytest tests/integration

# `make test`: the integration tests keep about one core busy (they mostly wait on the stacks they
# start), so the unit and template tests run beside them, in one process, on the other; the integration
# run's report is printed when both have ended. Both must pass.
INTEGRATION_LOG := $(VENV)/integration.log
test: lint typecheck $(CHROMIUM)
	$(BIN)/python -m pytest $(DURATIONS) tests/integration > $(INTEGRATION_LOG) 2>&1 & integration=$$!; \
	$(BIN)/python -m pytest $(DURATIONS) tests/unit tests/cdk; unit=$$?; \
	wait $$integration; integrated=$$?; \
	echo "--- the integration tests, run beside the unit tests:"; cat $(INTEGRATION_LOG); \
	test $$unit -eq 0 && test $$integrated -eq 0

synth: install
	PATH="$(CURDIR)/$(BIN):$$PATH" npx cdk synth -q -c mesh=$(MESH)

bench: install
	$(BIN)/python -m bench.sidecar_hop
	$(BIN)/python -m bench.local_mesh
	$(BIN)/python -m bench.moto_sqs_depth
	$(BIN)/python -m bench.status_writes
	$(BIN)/python -m bench.spark_actor
	$(BIN)/python -m bench.cost_per_hop
	$(BIN)/python -m bench.hop_latency
	$(BIN)/python -m bench.claim_check
	$(BIN)/python -m bench.local_start
	$(BIN)/python -m bench.wide_fan
	$(BIN)/python -m bench.cold_start

# the local-stack tests against an endpoint with moto's fidelity patches alone (asya_local/endpoint/patches.py):
# what to run first when moto is upgraded
conformance: install
	ASYA_LOCAL_SPEED_PATCHES=off $(BIN)/pytest -q tests/integration/test_local_mesh.py tests/integration/test_gateway.py tests/integration/test_local_iam.py

# 1,002 envelopes (334 tasks, 3 branches each) through the chaos mesh under every fault, then 300 more
# (100 tasks) run by a flow program (a try/except, a loop and a branch), then 120 (40 tasks) through a
# container actor whose consumers are killed too; prints counts, fails unless nothing is lost,
# duplicated, stuck or disagreeing (docs/faults.md)
chaos: install
	$(BIN)/python -m bench.chaos --tasks 334
	$(BIN)/python -m bench.chaos --tasks 100 --flow program
	$(BIN)/python -m bench.chaos --tasks 40 --flow container

# docs/console/*.png: the console's pages, from the reviews example on the local stack (headless Chromium)
screenshots: install $(CHROMIUM)
	$(BIN)/python -m asya_local.console.screenshots docs/console

clean:
	rm -rf $(VENV) node_modules .pytest_cache .mypy_cache .ruff_cache cdk.out .asya
