# Cepheus — the two commands of the README are the contract: `make run`, `make test`.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run replay test unit fast browser hosts check lint typecheck contracts bench bench-spark conformance clean venv ha-faults ha-soak sim sim-long outage outage-long

# Every target first makes sure of the venv (re-created if made from another interpreter).
venv:
	@scripts/setup_venv.sh $(VENV)

# the console's browser tests drive Debian's chromium
browser:
	@scripts/setup_browser.sh

# the fault tests' hosts: network namespaces (root, iproute2, TUN/TAP)
hosts:
	@scripts/setup_hosts.sh

## make run: set everything up and run a node with the pizza-shop sample deployed (Ctrl-C stops it)
run: venv
	scripts/run_pizza_node.sh

## make replay: replay the pizza-shop sample through its plan in playback time and print the results
replay: venv
	$(BIN)/cepheus run samples/pizza/plan.siddhi --input samples/pizza/events.jsonl

## make bench: engine, node, snapshot and input log benchmarks (tables for docs/performance.md)
bench: venv
	$(BIN)/python scripts/bench_engine.py
	$(BIN)/python scripts/bench_node.py
	$(BIN)/python scripts/bench_snapshot.py
	$(BIN)/python scripts/bench_input_log.py

## make bench-spark: the Spark runner vs the local engine vs Spark DataFrames; streaming latency
bench-spark: venv
	$(BIN)/python scripts/bench_spark.py

## make test: set everything up and run the whole suite (lint, types, contracts, tests; the
## soak, which runs for minutes to show that nothing happens, is make ha-soak's)
test: venv browser hosts check
	$(BIN)/pytest -q --require-services -m "not soak" tests

unit: venv
	$(BIN)/pytest -q tests/unit

## make fast: the suite without its slow, cluster (ha), browser, Spark and soak lanes
fast: venv
	$(BIN)/pytest -q --require-services -m "not slow and not ha and not browser and not spark and not soak" tests

## make ha-faults: the HA fault tests with 20 faults each (the suite runs 4), the forwarding
## chain with 20 kills, 5 pauses and 5 heartbeat FINs (the suite runs 3, 1, 2), and the faults of
## hosts of their own (loss, delay, one-way partitions, a vanished host, a paused standby, the
## registry killed: 20 each, the suite runs 1), a member's disk filled 20 times, and many plans on three
## members with one killed (the suite runs all of these once), figures printed
ha-faults: venv hosts
	CEPHEUS_HA_FAULTS=20 CEPHEUS_FORWARD_FAULTS=20,5,5 CEPHEUS_HOST_FAULTS=20 CEPHEUS_DISK_FAULTS=20 \
		$(BIN)/pytest -q -s --require-services \
		tests/integration/ha/test_failover.py tests/integration/ha/test_forwarding.py \
		tests/integration/ha/test_host_faults.py tests/integration/ha/test_disk_full.py \
		tests/integration/ha/test_scale.py

## make ha-soak: under load for 30 minutes without faults, no role may change: two members on
## loopback, and three members with 50 plans and 8 clients on hosts of their own, a jittery network between them
ha-soak: venv hosts
	CEPHEUS_HA_SOAK_SECONDS=1800 $(BIN)/pytest -q -s --require-services -m soak tests/integration/ha

## make outage: a 60 s sink outage against a small adapter buffer, on one node and on a pair in each HA
## mode, bundles of 32 readings (5,000 rows/s or more offered): nothing lost or repeated, clients
## pushed back, figures printed
outage: venv
	CEPHEUS_OUTAGE_SECONDS=60 CEPHEUS_ROOMS_BUNDLE=32 $(BIN)/pytest -q -s --require-services tests/integration/node/test_sink_outage.py \
		"tests/integration/ha/test_network_faults.py::test_a_sink_outage_longer_than_the_buffer_pushes_back_on_the_client_and_loses_nothing"

## make outage-long: the same with a 5-minute outage, about 25 minutes
outage-long: venv
	CEPHEUS_OUTAGE_SECONDS=300 CEPHEUS_ROOMS_BUNDLE=32 $(BIN)/pytest -q -s --require-services \
		tests/integration/node/test_sink_outage.py \
		"tests/integration/ha/test_network_faults.py::test_a_sink_outage_longer_than_the_buffer_pushes_back_on_the_client_and_loses_nothing"

## make sim SEED=N: replay one schedule of the HA simulator, step by step (a failing seed's trace)
sim: venv
	$(BIN)/python -m tests.sim.run --seed $(SEED) --trace

## make sim-long [SCHEDULES=N] [START=S]: the HA simulator over many seeds (resumable by START), its figures
SCHEDULES ?= 1000000
START ?= 0
sim-long: venv
	$(BIN)/python -m tests.sim.run --schedules $(SCHEDULES) --start $(START) --workers 2

check: lint typecheck contracts

lint: venv
	$(BIN)/ruff format --check engine app adapters formatters ha scripts tests
	$(BIN)/ruff check engine app adapters formatters ha scripts tests

typecheck: venv
	$(BIN)/mypy

contracts: venv
	$(BIN)/lint-imports

conformance: venv
	$(BIN)/python scripts/conformance.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
