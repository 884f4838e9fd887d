"""A plan deployed on Structured Streaming: a Data Bridge (Thrift) receiver hands events
over, Spark runs the plan (a partition per key in keyed state, the rest as one group), an
RDBMS sink (MariaDB) takes the results. The query dies mid-stream right after a sink
write that Spark never committed, restarts from its checkpoint, and every expected row is
in the database exactly once."""

from __future__ import annotations

import io
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from adapters.output.factory import build_adapter
from adapters.thrift.client import DataBridgeClient
from adapters.thrift.definitions import parse_definition
from adapters.thrift.events import WireEvent
from adapters.thrift.server import DataBridgeServer
from adapters.thrift.settings import ServerSettings
from app.cli import main
from app.replay import replay
from app.spark.handoff import HandOff, HandOffHandler
from app.spark.streaming import SparkDeployment
from tests.support.databases import isolated_database

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.mysql, pytest.mark.thrift, pytest.mark.slow]

PLAN = """
@App:name('rooms')
define stream Temp (room string, temp double);
partition with (room of Temp)
begin
    @info(name = 'rise')
    from every e1=Temp -> e2=Temp[e1.temp + 5 <= temp]
    select e1.room as room, e1.temp as initial, e2.temp as final insert into Rise;
end;
@info(name = 'hot')
from Temp[temp > 45] select room, temp insert into Hot;
"""
TEMP = parse_definition(
    "{'name':'Temp','version':'1.0.0','payloadData':[{'name':'room','type':'STRING'},{'name':'temp','type':'DOUBLE'}]}"
)


def _events(n: int) -> list[tuple[str, int, list[Any]]]:
    rnd = random.Random(5)
    return [
        ("Temp", 1000 + i * 100, [rnd.choice(["r1", "r2", "r3", "r4", "r5"]), round(rnd.uniform(20, 50), 1)])
        for i in range(n)
    ]


def _expected(events: list[tuple[str, int, list[Any]]]) -> dict[str, Counter[tuple[Any, ...]]]:
    lines = [json.dumps({"stream": s, "timestamp": t, "data": d}) for s, t, d in events]
    out = io.StringIO()
    replay(PLAN, list(enumerate(lines, 1)), out, start_time=1000)
    got: dict[str, Counter[tuple[Any, ...]]] = {"Rise": Counter(), "Hot": Counter()}
    for line in out.getvalue().splitlines():
        r = json.loads(line)
        got[r["stream"]][tuple(r["data"])] += 1
    return got


@pytest.fixture
def database(mysql_url: str) -> Iterator[str]:
    with isolated_database(mysql_url, "cep_spark") as url:
        db = sa.create_engine(url)
        with db.begin() as conn:
            conn.execute(sa.text("CREATE TABLE rise (room VARCHAR(8), initial DOUBLE, final DOUBLE)"))
            conn.execute(sa.text("CREATE TABLE hot (room VARCHAR(8), temp DOUBLE)"))
        db.dispose()
        yield url


def _sinks(url: str) -> dict[str, Any]:
    sinks = {
        "Rise": build_adapter("rdbms", "rise", {"url": url, "table": "rise"}),
        "Hot": build_adapter("rdbms", "hot", {"url": url, "table": "hot"}),
    }
    for a in sinks.values():
        a.start()
    return sinks


def _rows(url: str) -> dict[str, Counter[tuple[Any, ...]]]:
    db = sa.create_engine(url)
    with db.connect() as conn:
        rise = Counter(tuple(r) for r in conn.execute(sa.text("SELECT room, initial, final FROM rise")))
        hot = Counter(tuple(r) for r in conn.execute(sa.text("SELECT room, temp FROM hot")))
    db.dispose()
    return {"Rise": rise, "Hot": hot}


class Crash(Exception):
    pass


def test_thrift_to_spark_to_mariadb_exactly_once_across_a_crash(
    spark: SparkSession, database: str, tmp_path: Path
) -> None:
    events = _events(400)
    expected = _expected(events)
    assert sum(expected["Rise"].values()) > 20 and sum(expected["Hot"].values()) > 5
    handoff = HandOff(str(tmp_path / "handoff"))
    checkpoints = str(tmp_path / "checkpoints")
    settings = ServerSettings(host="127.0.0.1", port=0, tls_port=0, data_dir=str(tmp_path / "node"))
    from adapters.thrift.tls import self_signed

    self_signed(tmp_path / "node" / "tls")
    server = DataBridgeServer(settings, HandOffHandler(handoff, {"admin": "admin"}, [TEMP]))
    server.start()
    client = DataBridgeClient(
        f"tcp://127.0.0.1:{server.port}",
        f"ssl://127.0.0.1:{server.tls_port}",
        username="admin",
        password="admin",
        timeout=10.0,
        ca_file=str(tmp_path / "node" / "tls" / "cert.pem"),
    )

    client.define_stream(TEMP)

    def publish(part: list[tuple[str, int, list[Any]]]) -> None:
        for k in range(0, len(part), 25):
            client.publish([WireEvent("Temp:1.0.0", t, None, None, tuple(d)) for _, t, d in part[k : k + 25]])

    first_sinks = _sinks(database)
    first = SparkDeployment(
        spark,
        PLAN,
        handoff.directory,
        checkpoints,
        first_sinks,
        start_time=1000,
        trigger_seconds=0.5,
        max_files_per_trigger=2,
    )
    crashed = threading.Event()
    deliver = first._deliver

    def deliver_then_crash(query: str, frame: Any, batch_id: int) -> None:
        deliver(query, frame, batch_id)  # the rows are written...
        if batch_id >= 1 and not crashed.is_set():
            crashed.set()
            raise Crash("killed after the sink wrote, before Spark committed the micro-batch")

    first._deliver = deliver_then_crash  # type: ignore[method-assign]
    try:
        first.start()
        publish(events[:150])
        assert crashed.wait(120), "no micro-batch reached the crash point"
        publish(events[150:250])  # while one query is down and the other runs: stopped mid-stream
        deadline = time.monotonic() + 60
        while all(q["active"] for q in first.status()["queries"]) and time.monotonic() < deadline:
            time.sleep(0.2)
        crashed_query = [q for q in first.status()["queries"] if not q["active"]]
        assert crashed_query and "killed after the sink wrote" in (crashed_query[0]["error"] or "")
        partial_rows = _rows(database)
        assert sum(partial_rows["Rise"].values()) + sum(partial_rows["Hot"].values()) > 0
    finally:
        first.stop()
        for a in first_sinks.values():
            a.stop(timeout=10)

    shown = CliRunner().invoke(main, ["spark", "status", checkpoints])
    assert shown.exit_code == 3, shown.output  # a query is down
    assert "failed" in shown.output and "killed after the sink wrote" in shown.output

    second_sinks = _sinks(database)
    second = SparkDeployment(
        spark,
        PLAN,
        handoff.directory,
        checkpoints,
        second_sinks,
        start_time=1000,
        trigger_seconds=0.5,
        max_files_per_trigger=2,
    )
    try:
        second.start()
        publish(events[250:])
        second.process_available()
        status = second.status()
        assert status["application"]["master"] == "local[2]"
        assert all(q["active"] for q in status["queries"]) and len(status["queries"]) == 2
        assert all(q["batch"] is not None for q in status["queries"])
        shown = CliRunner().invoke(main, ["spark", "status", checkpoints])
        assert shown.exit_code == 0, shown.output
        assert "cepheus_rooms_main" in shown.output and "cepheus_rooms_partition1" in shown.output
        # the micro-batch written before the crash ran again, and its rows were skipped
        assert sum(a.stats.skipped for a in second_sinks.values()) > 0
    finally:
        second.stop()
        for a in second_sinks.values():
            a.stop(timeout=10)
        client.close()
        server.stop(timeout=2)
    got = _rows(database)
    assert got["Hot"] == expected["Hot"]
    assert got["Rise"] == expected["Rise"]


QUIET = """
@App:name('quiet')
define stream Temp (room string, temp double);
partition with (room of Temp)
begin
    @info(name = 'gone')
    from Temp#window.time(1 sec) select room, temp insert expired events into Gone;
end;
"""


def test_a_quiet_keys_timers_fire_once_event_time_passes_them(spark: SparkSession, tmp_path: Path) -> None:
    """r1 goes quiet after its first events; its window still expires them, as locally, once
    other keys' events move event time (the watermark) past their due time."""
    from adapters.output.memory import MemoryAdapter

    events = [("Temp", 1000, ["r1", 20.0]), ("Temp", 1200, ["r1", 21.0])] + [
        ("Temp", 3000 + k * 500, [f"r{2 + k % 3}", 30.0 + k]) for k in range(12)
    ]
    lines = [json.dumps({"stream": s, "timestamp": t, "data": d}) for s, t, d in events]
    local = io.StringIO()
    replay(QUIET, list(enumerate(lines, 1)), local, start_time=1000)
    expected = Counter(tuple(json.loads(x)["data"]) for x in local.getvalue().splitlines())
    assert expected[("r1", 20.0)] == 1 and expected[("r1", 21.0)] == 1
    handoff = HandOff(str(tmp_path / "handoff"))
    sink = MemoryAdapter("gone")
    sink.start()
    deployment = SparkDeployment(
        spark,
        QUIET,
        handoff.directory,
        str(tmp_path / "checkpoints"),
        {"Gone": sink},
        start_time=1000,
        trigger_seconds=0.2,
    )
    try:
        deployment.start()
        handoff.append(events[:2])
        deployment.process_available()
        handoff.append(events[2:])
        deployment.process_available()
        deadline = time.monotonic() + 60
        while (
            Counter(tuple(r.values()) for r in sink.written)[("r1", 21.0)] == 0
            and time.monotonic() < deadline
        ):
            time.sleep(0.2)  # the no-data micro-batch that times r1 out follows the watermark's move
    finally:
        deployment.stop()
        sink.stop()
    got = Counter(tuple(r.values()) for r in sink.written)
    assert got[("r1", 20.0)] == 1 and got[("r1", 21.0)] == 1
    assert got <= expected  # the last keys' windows wait for event time to move on
