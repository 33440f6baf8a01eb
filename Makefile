# distill — the README's commands. Only Python >= 3.11 and make are assumed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export DAGSTER_HOME := $(CURDIR)/data/.dagster
export DISTILL_DATA_DIR ?= $(CURDIR)/data
# the public development player key is allowed only here (make run/test); see docs/privacy.md#player-ids
export DISTILL_ENV ?= development
# test files run in this many processes (pytest-xdist; a file's tests stay in one process), in
# the order tests/conftest.py gives them (the slowest files first), not xdist's most-tests-first
TEST_WORKERS ?= 2

.PHONY: run test test-integration test-clients test-clients-tfds ui bench lint format clean stale backfill backfill-stale ui-check

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "distill needs Python >= 3.11"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The project's instance config, copied into DAGSTER_HOME (run/event/schedule storage there).
$(DAGSTER_HOME)/dagster.yaml: dagster.yaml
	mkdir -p $(DAGSTER_HOME)
	cp dagster.yaml $(DAGSTER_HOME)/dagster.yaml

## run: materialize every sample partition of every source, then publish the release
run: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/distill run

## test: the whole test suite
test: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=25

## test-integration: PostgreSQL storage and the S3 lake/hub against real servers on localhost
test-integration: $(VENV)/.installed-integration
	DISTILL_INTEGRATION=1 $(BIN)/python -m pytest -q tests/integration

$(VENV)/.installed-integration: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,test-integration]'
	touch $@

## test-clients: the sample release loaded and trained with TRL/transformers (own venv; not in `test`)
CLIENTS_VENV := .venv-clients
CLIENTS_RELEASE := $(DISTILL_DATA_DIR)/hub/$(or $(DISTILL_DATASET_NAME),distill)/latest
test-clients: $(CLIENTS_VENV)/.installed $(DAGSTER_HOME)/dagster.yaml
	$(CLIENTS_VENV)/bin/distill run
	DISTILL_CLIENTS=1 DISTILL_CLIENTS_RELEASE=$(CLIENTS_RELEASE) $(CLIENTS_VENV)/bin/python -m pytest -q -p no:xdist tests/clients

$(CLIENTS_VENV)/.installed: pyproject.toml
	test -x $(CLIENTS_VENV)/bin/python || $(PYTHON) -m venv $(CLIENTS_VENV)
	$(CLIENTS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(CLIENTS_VENV)/bin/python -m pip install --quiet -e '.[dev,clients]'
	touch $@

## test-clients-tfds: load the rlds release with tensorflow-datasets and check it with rlds (own venv)
CLIENTS_TFDS_VENV := .venv-clients-tfds
test-clients-tfds: $(CLIENTS_TFDS_VENV)/.installed $(DAGSTER_HOME)/dagster.yaml
	$(CLIENTS_TFDS_VENV)/bin/python -m pytest -q -p no:xdist tests/clients/test_tfds.py

# TensorFlow 2.15 pins NumPy < 2: a venv of its own keeps `make test`'s venv free of it
$(CLIENTS_TFDS_VENV)/.installed: pyproject.toml
	test -x $(CLIENTS_TFDS_VENV)/bin/python || $(PYTHON) -m venv $(CLIENTS_TFDS_VENV)
	$(CLIENTS_TFDS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(CLIENTS_TFDS_VENV)/bin/python -m pip install --quiet -e '.[dev,clients-tfds]'
	touch $@

## ui: the Dagster UI on http://127.0.0.1:3000 (settings checked first: one line, exit 2)
# Dagster's dev command warns on every start that `dg dev` supersedes it (dagster-dg-cli is not
# installed): that one warning is hidden
UI_WARNINGS := ignore:Function `dev_command` is superseded
ui: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	@$(BIN)/distill check
	cd $(DAGSTER_HOME) && PYTHONWARNINGS='$(UI_WARNINGS)' $(CURDIR)/$(BIN)/dagster dev -w $(CURDIR)/workspace.yaml -h 127.0.0.1 -p 3000

## stale: asset partitions built under rules that changed since (and everything downstream)
stale: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/distill stale

## backfill: rebuild the ingest dates FROM..TO, then release (make backfill FROM=2026-11-19 TO=2026-11-20)
backfill: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	@test -n "$(FROM)" -a -n "$(TO)" || { echo "usage: make backfill FROM=YYYY-MM-DD TO=YYYY-MM-DD"; exit 2; }
	$(BIN)/distill backfill --from $(FROM) --to $(TO)

## backfill-stale: rebuild exactly what `make stale` lists, then release
backfill-stale: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/distill backfill --stale

## ui-check: real-browser smoke check of the UI (Debian chromium + Playwright); not part of `test`
ui-check: $(STAMP)
	@command -v chromium >/dev/null || apt-get install -y -qq chromium >/dev/null 2>&1 || { echo "make ui-check needs Debian's chromium: apt-get install chromium"; exit 1; }
	@$(BIN)/python -c 'import playwright' 2>/dev/null || $(BIN)/python -m pip install --quiet -e '.[ui]'
	$(BIN)/python tools/ui_check.py

## bench: benchmarks with their extras (results in bench/results; recorded runs: bench/history); make bench ARGS=--quick: tiny sizes
bench: $(VENV)/.installed-bench
	$(BIN)/python -m bench $(ARGS)

$(VENV)/.installed-bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $@

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf data/raw data/lake data/hub data/.dagster
