"""Two `cepheus server` processes with `[spark] shared = true` share a MariaDB registry and one
`[spark] dir`: both take events over Thrift and hand them off to `in/<node>/`, one of them (the
holder of the plan's registry lease) runs the plan's Structured Streaming queries on
`local[2]` over both nodes' files, and writes to MariaDB through its RDBMS adapter. The driver
is killed (SIGKILL) mid-stream; the other node takes the lease over once it expires, starts
Spark, resumes from the shared checkpoint and replays what the dead driver had not committed:
every expected row ends up in the table exactly once.

Each room's events go to one node until the driver dies (then all to the survivor), so the
rooms' patterns see every room's events in input order whichever way the nodes' files
interleave; `Hot` is a filter. The expected rows are the local engine's over the whole input.
One Spark JVM at a time: a node starts Spark only once it drives."""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from adapters.thrift.client import DataBridgeClient
from adapters.thrift.events import WireEvent
from tests.integration.spark.test_node import DOCUMENT, PLAN, TEMP, Events, _events, _expected
from tests.integration.spark.test_node import _rows as _table_rows
from tests.support.console import api
from tests.support.databases import isolated_database
from tests.support.nodes import ADMIN_PASSWORD, NodeProcess, provision, toml_config, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.mysql, pytest.mark.thrift, pytest.mark.slow, pytest.mark.ha]

LEASE_MS = 2000


def _publish(node: NodeProcess, events: Events) -> None:
    client = DataBridgeClient(
        f"tcp://127.0.0.1:{node.thrift_port}",
        f"ssl://127.0.0.1:{node.tls_port}",
        username="admin",
        password=ADMIN_PASSWORD,
        timeout=30.0,
        ca_file=str(node.certificate),
    )
    try:
        client.define_stream(TEMP)
        for k in range(0, len(events), 10):
            client.publish([WireEvent("Temp:1.0.0", t, None, None, tuple(d)) for t, d in events[k : k + 10]])
    finally:
        client.close()


def _spark(node: NodeProcess) -> dict[str, Any]:
    status, body = api(node, "GET", "/spark")
    assert status == 200, body
    return dict(body["plans"].get("rooms") or {})


def _drives(node: NodeProcess) -> bool:
    st = _spark(node)
    return st.get("state") == "spark" and bool(st["queries"]) and all(q["active"] for q in st["queries"])


def _javas(pid: int) -> list[int]:
    """The Java processes among `pid`'s descendants (a Spark driver's JVM)."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        name_end = stat.rindex(")")
        names[int(entry)] = stat[stat.index("(") + 1 : name_end]
        parents[int(entry)] = int(stat[name_end + 2 :].split()[1])
    found = []
    for p in parents:
        q = p
        while q > 1 and q != pid:
            q = parents.get(q, 0)
        if q == pid and p != pid and names.get(p) == "java":
            found.append(p)
    return found


def _rows(url: str) -> dict[str, Counter[tuple[Any, ...]]]:
    """The sink's rows; none while the adapters are still creating their tables (MariaDB: 1412)."""
    try:
        return _table_rows(url)
    except sa.exc.OperationalError:
        return {"Rise": Counter(), "Hot": Counter()}


def _sources(url: str) -> set[str]:
    db = sa.create_engine(url)
    try:
        with db.connect() as conn:
            return {r[0] for r in conn.execute(sa.text("SELECT source FROM cepheus_delivered"))}
    finally:
        db.dispose()


@pytest.fixture
def pair(tmp_path: Path, mysql_url: str) -> Iterator[tuple[list[NodeProcess], str]]:
    with (
        isolated_database(mysql_url, "cep_spark_reg") as registry,
        isolated_database(mysql_url, "cep_spark_sink") as sink,
    ):
        provision(registry, DOCUMENT, tmp_path, {"rooms.siddhi": PLAN})
        nodes = []
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            node = NodeProcess(tmp_path / name, registry)
            node.sections["spark"] = {
                "enabled": True,
                "shared": True,
                "dir": str(tmp_path / "spark"),
                "master": "local[2]",
                "trigger_seconds": 0.5,
                # the nodes' files interleave: an event of one node may come after a later one of
                # the other's; an hour of event time keeps the watermark from calling it late
                "watermark_delay_ms": 3_600_000,
            }
            node.sections["ha"] = {"lease_ms": LEASE_MS, "renew_ms": 250, "margin_ms": 750}
            node.config_path.write_text(toml_config(node.sections), encoding="utf-8")
            nodes.append(node)
        try:
            for node in nodes:
                node.start(timeout=60, env={"SINK_URL": sink})
            yield nodes, sink
        finally:
            for node in nodes:
                node.kill()


def test_one_node_drives_both_feed_and_the_other_takes_over_from_a_killed_driver(
    pair: tuple[list[NodeProcess], str],
) -> None:
    nodes, sink = pair
    events = _events(300)
    expected = _expected(events)
    home = {"r1": 0, "r2": 0, "r3": 1, "r4": 1}  # each room's events to one node (until the driver dies)

    def send(part: Events) -> None:
        for k, node in enumerate(nodes):
            _publish(node, [e for e in part if home[e[1][0]] == k])

    send(events[:120])
    wait_for(lambda: any(_drives(n) for n in nodes), 120, "one node to drive the plan", 0.5)
    driver, other = nodes if _drives(nodes[0]) else nodes[::-1]
    driver_id = driver.sections["node"]["id"]
    st = _spark(other)
    assert st["state"] == "spark" and st["driver"] == driver_id and not st["queries"]
    assert st["message"].startswith(f"driven by node {driver_id}; this node hands its events off to ")
    assert other.health()["plans"]["rooms"]["state"] == "spark"
    assert _spark(driver)["driver"] == driver_id
    assert _javas(driver.process.pid) and not _javas(other.process.pid)  # type: ignore[union-attr]
    wait_for(lambda: sum(_rows(sink)["Rise"].values()) > 0, 60, "the first rows in MariaDB", 0.5)

    (text,) = (Path(driver.sections["spark"]["dir"]) / "rooms").iterdir()
    plan_source = "rooms~" + (text / "checkpoints" / "cepheus-id").read_text().strip()
    assert {s.split("/")[0] for s in _sources(sink)} == {plan_source}  # the plan text's, not the node's
    send(events[120:200])
    driver.kill()  # while Spark may still be at them: no release, the lease has to expire
    killed = time.monotonic()
    wait_for(
        lambda: _spark(other).get("driver") == other.sections["node"]["id"],
        LEASE_MS / 1000 + 5,
        "the other node to take the lease",
        0.2,
    )
    taken = time.monotonic() - killed
    _publish(other, events[200:])  # every room's, to the node left

    def complete() -> bool:
        got = _rows(sink)
        return all(sum(got[s].values()) >= sum(expected[s].values()) for s in expected)

    wait_for(
        complete, 120, "every expected row", 0.5, lambda: (_rows(sink), _spark(other), other.log()[-3000:])
    )
    running = time.monotonic() - killed
    wait_for(lambda: _drives(other), 30, "the new driver's queries", 0.5, lambda: _spark(other))
    assert _rows(sink) == expected  # exactly once: none missing, none twice
    assert {s.split("/")[0] for s in _sources(sink)} == {plan_source}  # the new driver's: the same
    assert len(_javas(other.process.pid)) == 1  # type: ignore[union-attr]
    print(f"lease taken over {taken:.1f} s after the kill; every row in {running:.1f} s")
