"""A `cepheus server` process with `[spark] enabled` drives a plan whose distributed mode is
`spark`: events published over Thrift are handed off before they are acknowledged, Spark
(`local[2]`) runs the plan, and the node's own RDBMS adapter writes the results to MariaDB.
The server is stopped (SIGTERM) mid-stream and started again: every expected row is there
exactly once. The console's Spark page shows the plan's queries as active (chromium).

One server (one Spark JVM at a time) for the module: the browser test uses the one the first
test left running."""

from __future__ import annotations

import io
import json
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa

from adapters.thrift.client import DataBridgeClient
from adapters.thrift.definitions import parse_definition
from adapters.thrift.events import WireEvent
from app.replay import replay
from tests.support.console import api
from tests.support.databases import isolated_database
from tests.support.nodes import ADMIN_PASSWORD, NodeProcess, provision, toml_config, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.mysql, pytest.mark.thrift, pytest.mark.slow]

PLAN = """
@App:name('rooms')
@Import('Temp:1.0.0') define stream Temp (room string, temp double);
@Export('Rise:1.0.0') define stream Rise (room string, initial double, final double);
@Export('Hot:1.0.0') define stream Hot (room string, temp double);
partition with (room of Temp)
begin
    @info(name = 'rise')
    from every e1=Temp -> e2=Temp[e1.temp + 5 <= temp]
    select e1.room as room, e1.temp as initial, e2.temp as final insert into Rise;
end;
@info(name = 'hot')
from Temp[temp > 45] select room, temp insert into Hot;
"""

DOCUMENT = """
[[streams]]
name = "Temp"
payload = [{ name = "room", type = "STRING" }, { name = "temp", type = "DOUBLE" }]

[[streams]]
name = "Rise"
payload = [{ name = "room", type = "STRING" }, { name = "initial", type = "DOUBLE" }, { name = "final", type = "DOUBLE" }]

[[streams]]
name = "Hot"
payload = [{ name = "room", type = "STRING" }, { name = "temp", type = "DOUBLE" }]

[[plans]]
name = "rooms"
file = "rooms.siddhi"
distributed_mode = "spark"

[[datasources]]
name = "sink"
url = "${SINK_URL}"

[[adapters]]
name = "riseTable"
type = "rdbms"
datasource = "sink"
table = "rise"
mode = "insert"
create_table = true
columns = [{ name = "room", type = "VARCHAR(8)" }, { name = "initial", type = "DOUBLE" }, { name = "final", type = "DOUBLE" }]

[[adapters]]
name = "hotTable"
type = "rdbms"
datasource = "sink"
table = "hot"
mode = "insert"
create_table = true
columns = [{ name = "room", type = "VARCHAR(8)" }, { name = "temp", type = "DOUBLE" }]

[[formatters]]
name = "riseRows"
stream = "Rise:1.0.0"
adapter = "riseTable"
type = "map"

[[formatters]]
name = "hotRows"
stream = "Hot:1.0.0"
adapter = "hotTable"
type = "map"
"""

TEMP = parse_definition(
    "{'name':'Temp','version':'1.0.0','payloadData':[{'name':'room','type':'STRING'},{'name':'temp','type':'DOUBLE'}]}"
)
Events = list[tuple[int, list[Any]]]


def _events(n: int) -> Events:
    rnd = random.Random(7)
    return [
        (1000 + i * 100, [rnd.choice(["r1", "r2", "r3", "r4"]), round(rnd.uniform(20, 50), 1)])
        for i in range(n)
    ]


def _expected(events: Events) -> dict[str, Counter[tuple[Any, ...]]]:
    lines = [json.dumps({"stream": "Temp", "timestamp": t, "data": d}) for t, d in events]
    out = io.StringIO()
    replay(PLAN, list(enumerate(lines, 1)), out, start_time=1000)
    got: dict[str, Counter[tuple[Any, ...]]] = {"Rise": Counter(), "Hot": Counter()}
    for line in out.getvalue().splitlines():
        r = json.loads(line)
        if r["type"] == "current":
            got[r["stream"]][tuple(r["data"])] += 1
    return got


def _rows(url: str) -> dict[str, Counter[tuple[Any, ...]]]:
    db = sa.create_engine(url)
    try:
        with db.connect() as conn:
            got: dict[str, Counter[tuple[Any, ...]]] = {"Rise": Counter(), "Hot": Counter()}
            names = sa.inspect(conn).get_table_names()
            if "rise" in names:
                got["Rise"] = Counter(
                    tuple(r) for r in conn.execute(sa.text("SELECT room, initial, final FROM rise"))
                )
            if "hot" in names:
                got["Hot"] = Counter(tuple(r) for r in conn.execute(sa.text("SELECT room, temp FROM hot")))
            return got
    finally:
        db.dispose()


@dataclass
class SparkNode:
    node: NodeProcess
    sink: str

    def start(self) -> None:
        self.node.start(timeout=60, env={"SINK_URL": self.sink})

    def publish(self, events: Events) -> None:
        client = DataBridgeClient(
            f"tcp://127.0.0.1:{self.node.thrift_port}",
            f"ssl://127.0.0.1:{self.node.tls_port}",
            username="admin",
            password=ADMIN_PASSWORD,
            timeout=30.0,
            ca_file=str(self.node.certificate),
        )
        try:
            client.define_stream(TEMP)  # the registry's, as it is: known to the client then
            for k in range(0, len(events), 20):
                part = events[k : k + 20]
                client.publish([WireEvent("Temp:1.0.0", t, None, None, tuple(d)) for t, d in part])
        finally:
            client.close()

    def spark(self) -> dict[str, Any]:
        status, body = api(self.node, "GET", "/spark")
        assert status == 200, body
        return dict(body["plans"].get("rooms") or {})


@pytest.fixture(scope="module")
def spark_node(tmp_path_factory: pytest.TempPathFactory, mysql_url: str) -> Iterator[SparkNode]:
    tmp = tmp_path_factory.mktemp("spark-node")
    with isolated_database(mysql_url, "cep_spark_node") as sink:
        registry = f"sqlite:///{tmp / 'registry.db'}"
        provision(registry, DOCUMENT, tmp, {"rooms.siddhi": PLAN})
        node = NodeProcess(tmp, registry)
        node.sections["spark"] = {"enabled": True, "master": "local[2]", "trigger_seconds": 0.5}
        node.config_path.write_text(toml_config(node.sections), encoding="utf-8")
        running = SparkNode(node, sink)
        running.start()
        try:
            yield running
        finally:
            node.stop()


def _active(spark_node: SparkNode) -> bool:
    st = spark_node.spark()
    return st.get("state") == "spark" and bool(st["queries"]) and all(q["active"] for q in st["queries"])


def test_thrift_to_spark_to_mariadb_exactly_once_across_a_restart(spark_node: SparkNode) -> None:
    events = _events(300)
    expected = _expected(events)
    assert sum(expected["Rise"].values()) > 20 and sum(expected["Hot"].values()) > 10
    # the hand-off takes events while Spark is still starting
    assert spark_node.node.health()["plans"]["rooms"]["state"] in ("starting", "spark")
    spark_node.publish(events[:120])
    wait_for(lambda: _active(spark_node), 120, "the plan's queries to run", 0.5, spark_node.spark)
    wait_for(
        lambda: sum(_rows(spark_node.sink)["Rise"].values()) > 0,
        60,
        "the first rows in MariaDB",
        0.5,
        lambda: spark_node.node.log()[-3000:],
    )
    spark_node.publish(events[120:200])  # and stop while Spark may still be at them
    assert spark_node.node.stop() == 0
    spark_node.start()
    spark_node.publish(events[200:])

    def complete() -> bool:
        got = _rows(spark_node.sink)
        return sum(got["Rise"].values()) >= sum(expected["Rise"].values()) and sum(
            got["Hot"].values()
        ) >= sum(expected["Hot"].values())

    wait_for(complete, 120, "every expected row", 0.5, lambda: (_rows(spark_node.sink), spark_node.spark()))
    wait_for(lambda: _active(spark_node), 30, "the queries after the restart", 0.5, spark_node.spark)
    assert _rows(spark_node.sink) == expected  # exactly once: none missing, none twice
    health = spark_node.node.health()
    assert health["plans"]["rooms"]["state"] == "spark"
    assert health["emitted"]["Hot:1.0.0"] >= 1  # counted for /metrics, as a local plan's exports
    status = spark_node.spark()
    assert status["application"]["master"] == "local[2]"
    assert {q["name"] for q in status["queries"]} == {"cepheus_rooms_main", "cepheus_rooms_partition1"}
    assert status["outflow"] == ["Hot", "Rise"] and status["inflow"].endswith("/in")
    shown = spark_node.node.cli("spark", "status", "--plan", "rooms").stdout  # exit 0: every query up
    assert "plan rooms: Spark application " in shown and "cepheus_rooms_partition1" in shown


@pytest.mark.browser
def test_the_console_shows_the_queries_of_a_spark_plan_as_active(spark_node: SparkNode) -> None:
    from playwright.sync_api import expect

    from tests.support.browser import Shots, chromium

    wait_for(lambda: _active(spark_node), 120, "the plan's queries to run", 0.5, spark_node.spark)
    base = f"http://127.0.0.1:{spark_node.node.console_port}"
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        shots = Shots("spark")
        page.goto(base + "/plans/rooms")
        page.locator('input[name="username"]').fill("admin")
        page.locator('input[name="password"]').fill(ADMIN_PASSWORD)
        page.get_by_role("button", name="Log in").click()
        expect(page.locator("main p .state").first).to_have_text("spark")
        page.get_by_role("link", name="distributed deployment status").click()
        section = page.locator("#spark-rooms")
        expect(section.locator("h2 .state")).to_have_text("spark")
        for query in ("cepheus_rooms_main", "cepheus_rooms_partition1"):
            expect(section.locator(f'tr[data-query="{query}"] .state')).to_have_text("active")
        expect(section).to_contain_text("local[2]")
        shots.take(page, "distributed deployment status")
