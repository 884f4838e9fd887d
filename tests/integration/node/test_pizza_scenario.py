"""Scenario 1 end to end, on real processes: `cepheus server` with a MariaDB registry and with a
PostgreSQL registry, provisioned with `cepheus apply samples/pizza/cepheus.toml`, fed by the
pizza-shop publisher (TLS `connect`, plain `publish`), results in MariaDB's `delivered_orders`.

The publisher follows the seed's timeline (55 s of wall-clock time, as the plan's 30-second
window needs), so both runs go at once.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tests.support.databases import isolated_database
from tests.support.nodes import ADMIN_PASSWORD, REPO, NodeProcess, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.mysql, pytest.mark.thrift]  # the seed timeline takes 55 s

EXPECTED = [(1, "Tom"), (2, "John"), (3, "Ratha")]


@dataclass
class Run:
    node: NodeProcess
    output_url: str
    publisher: subprocess.CompletedProcess[str] | None = None
    rows: list[tuple[Any, ...]] | None = None
    exit_code: int | None = None
    log: str = ""


def delivered_orders(url: str) -> list[tuple[Any, ...]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table("delivered_orders"):
                return []
            result = conn.execute(sa.text("SELECT sum_order_id, customer_name FROM delivered_orders"))
            return sorted(tuple(r) for r in result)
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def runs(
    mysql_url: str, postgres_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Run]]:
    with ExitStack() as stack:
        mariadb_registry = stack.enter_context(isolated_database(mysql_url, "cep_pizza"))
        postgres_registry = stack.enter_context(isolated_database(postgres_url, "cep_pizza"))
        second_output = stack.enter_context(isolated_database(mysql_url, "cep_pizza"))
        runs = {
            "mariadb": Run(
                NodeProcess(tmp_path_factory.mktemp("mariadb"), mariadb_registry), mariadb_registry
            ),
            "postgresql": Run(
                NodeProcess(tmp_path_factory.mktemp("postgresql"), postgres_registry), second_output
            ),
        }
        publishers = {}
        for name, run in runs.items():
            run.node.start(env={"PIZZA_DB_URL": run.output_url})  # the registry keeps ${PIZZA_DB_URL}
            stack.callback(run.node.stop)
            run.node.cli("apply", "samples/pizza/cepheus.toml")
            wait_for(
                lambda n=run.node: _ready(n.health()), 20, f"{name}: the pizza plan and its adapter to start"
            )
            publishers[name] = subprocess.Popen(
                [
                    sys.executable,
                    str(REPO / "scripts" / "pizza_shop_publisher.py"),
                    "--port",
                    str(run.node.thrift_port),
                    "--password",
                    ADMIN_PASSWORD,
                    "--ca-file",
                    str(run.node.certificate),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        for name, publisher in publishers.items():
            out, _ = publisher.communicate(timeout=180)
            runs[name].publisher = subprocess.CompletedProcess(publisher.args, publisher.returncode, out)
        for run in runs.values():
            run.rows = wait_for(lambda u=run.output_url: delivered_orders(u) or None, 15, "rows", 0.2)
            run.exit_code = run.node.stop()
            run.log = run.node.log()
        yield runs


def _ready(health: dict[str, Any]) -> bool:
    plan = health["plans"].get("pizzaOrderProcessingPlan", {})
    return plan.get("state") == "running" and "deliveredOrdersTable" in health["adapters"]


@pytest.mark.postgres
@pytest.mark.parametrize("registry", ["mariadb", "postgresql"])
def test_delivered_orders_hold_exactly_the_expected_rows(runs: dict[str, Run], registry: str) -> None:
    run = runs[registry]
    assert run.publisher is not None and run.publisher.returncode == 0, run.publisher
    assert (
        "defined" not in run.publisher.stdout
    )  # the registry already had both streams: findStreamId found them
    assert run.rows == EXPECTED, run.log


@pytest.mark.postgres
@pytest.mark.parametrize("registry", ["mariadb", "postgresql"])
def test_the_node_logged_its_components_and_stopped_cleanly(runs: dict[str, Run], registry: str) -> None:
    run = runs[registry]
    assert run.exit_code == 0, run.log
    for line in (
        "registry Registry(",
        "thrift receiver listening on 127.0.0.1:",
        "(TLS, ThriftSecureEventTransmissionService",
        "http listening on 127.0.0.1:",
        "output adapter deliveredOrdersTable (rdbms) started",
        "plan pizzaOrderProcessingPlan deployed",
        "received SIGTERM",
        "output adapter deliveredOrdersTable stopped (3 written)",
        "stopped",
    ):
        assert line in run.log, f"{line!r} not in the log:\n{run.log}"
    assert "Traceback" not in run.log and "ERROR" not in run.log, run.log


@pytest.mark.postgres  # (the module's runs need both servers)
def test_the_mariadb_table_is_the_one_the_sample_describes(runs: dict[str, Run]) -> None:
    engine = sa.create_engine(runs["mariadb"].output_url)
    try:
        columns = {c["name"]: str(c["type"]) for c in sa.inspect(engine).get_columns("delivered_orders")}
    finally:
        engine.dispose()
    assert columns == {"sum_order_id": "BIGINT", "customer_name": "VARCHAR(20)"}


def test_publisher_defines_streams_the_registry_lacks(tmp_path: Path, mysql_url: str) -> None:
    """A fresh registry: the publisher's `defineStream` (single-quoted JSON) creates both streams."""
    from adapters.thrift import DataBridgeClient, parse_definition

    with isolated_database(mysql_url, "cep_pizza") as registry_url:
        node = NodeProcess(tmp_path, registry_url)
        node.start()
        try:
            sys.path.insert(0, str(REPO / "scripts"))
            try:
                import pizza_shop_publisher as publisher
            finally:
                sys.path.pop(0)
            with DataBridgeClient(
                f"tcp://127.0.0.1:{node.thrift_port}",
                username="admin",
                password=ADMIN_PASSWORD,
                ca_file=str(node.certificate),
            ) as client:
                for text in (publisher.ORDER_DEFINITION, publisher.DELIVERY_DEFINITION):
                    wire = parse_definition(text)
                    assert client.find_stream_id(wire.name, wire.version) is None
                    assert client.define_stream(text) == wire.stream_id
            exported = node.cli("export").stdout
        finally:
            assert node.stop() == 0
    assert 'name = "orderStream"' in exported and 'name = "deliveryStream"' in exported
    assert 'description = "Details of Analytics Statistics"' in exported
