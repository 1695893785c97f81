# One entry point per job. Every target sets itself up in .venv on a fresh machine
# (Python 3.11 + pip + Java 17), so the README's two commands work as written.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-fast lint protos protos-check bench clean

$(STAMP): pyproject.toml examples/lance_fw_delta/pyproject.toml examples/lance_fw_bloom/pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[test]"
	$(BIN)/pip install -q -e examples/lance_fw_delta
	$(BIN)/pip install -q -e examples/lance_fw_bloom
	touch $(STAMP)

setup: $(STAMP)

## The main job: Python -> Lance (lance_fw) -> read back by pylance and lance_fw.
demo: $(STAMP)
	$(BIN)/python examples/main_job.py

## Lint, format check and types of lance_fw/ and plugins/ (ruff, mypy; config in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check lance_fw plugins
	$(BIN)/ruff format --check lance_fw plugins
	$(BIN)/mypy

## The whole test suite (slow suites included; select with -m "not slow" locally), after the lint.
test: lint
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow" $(PYTEST_ARGS)

## Regenerate lance_fw/_proto from protos/ (and check they are in sync).
protos: $(STAMP)
	$(BIN)/python tools/gen_protos.py

protos-check: $(STAMP)
	$(BIN)/python tools/gen_protos.py --check

## Benchmarks against pylance and Parquet (see bench/README.md).
bench: $(STAMP)
	$(BIN)/python bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
