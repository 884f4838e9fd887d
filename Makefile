# Cepheus — the two commands of the README are the contract: `make run`, `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run replay test unit check lint typecheck contracts bench conformance clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $(STAMP)

## make run: set everything up and run a node with the pizza-shop sample deployed (Ctrl-C stops it)
run: $(STAMP)
	scripts/run_pizza_node.sh

## make replay: replay the pizza-shop sample through its plan in playback time and print the results
replay: $(STAMP)
	$(BIN)/cepheus run samples/pizza/plan.siddhi --input samples/pizza/events.jsonl

## make bench: engine and node benchmarks (tables for the README)
bench: $(STAMP)
	$(BIN)/python scripts/bench_engine.py
	$(BIN)/python scripts/bench_node.py

## make test: set everything up and run the whole suite (lint, types, contracts, tests)
test: $(STAMP) check
	$(BIN)/pytest -q --require-services tests

unit: $(STAMP)
	$(BIN)/pytest -q tests/unit

check: lint typecheck contracts

lint: $(STAMP)
	$(BIN)/ruff format --check engine app adapters formatters ha scripts tests
	$(BIN)/ruff check engine app adapters formatters ha scripts tests

typecheck: $(STAMP)
	$(BIN)/mypy

contracts: $(STAMP)
	$(BIN)/lint-imports

conformance: $(STAMP)
	$(BIN)/python scripts/conformance.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
