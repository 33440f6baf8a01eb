# distill — the README's commands. Only Python >= 3.11 and make are assumed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export DAGSTER_HOME := $(CURDIR)/data/.dagster
export DISTILL_DATA_DIR ?= $(CURDIR)/data

.PHONY: run test ui bench lint format clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "distill needs Python >= 3.11"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(DAGSTER_HOME)/dagster.yaml: dagster.yaml
	mkdir -p $(DAGSTER_HOME)
	cp dagster.yaml $(DAGSTER_HOME)/dagster.yaml

## run: materialize every sample partition of every source, then publish the release
run: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/distill run

## test: the whole test suite
test: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/python -m pytest -q

## ui: the Dagster UI on http://127.0.0.1:3000
ui: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

## bench: benchmarks (results in bench/results and the README table)
bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python -m bench

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf data/raw data/lake data/hub data/.dagster
