"""A node in this process on an SQLite registry, driven over real Thrift and HTTP sockets.

Results land in a real SQLite table through the RDBMS adapter, so every assertion is on what
an operator would find in the database.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.thrift import DataBridgeClient, DefinitionConflict, WireEvent, parse_definition
from app.node import Node
from app.registry import ExecutionPlan, Receiver, Registry
from tests.support.nodes import ADMIN_PASSWORD, node_config, provision, running_node, wait_for

PLAN = """@Plan:name('hot')
@Import('temps:1.0.0')
define stream temps (meta_sensor string, room string, celsius double);
@Export('alerts:1.0.0')
define stream alerts (room string, celsius double);
from temps[celsius > {threshold}] select room, celsius insert into alerts;
"""

DOCUMENT = """
[[streams]]
name = "temps"
meta = [{{ name = "sensor", type = "STRING" }}]
payload = [{{ name = "room", type = "STRING" }}, {{ name = "celsius", type = "DOUBLE" }}]

[[streams]]
name = "alerts"
payload = [{{ name = "room", type = "STRING" }}, {{ name = "celsius", type = "DOUBLE" }}]

[[plans]]
name = "hot"
file = "hot.siddhi"

[[datasources]]
name = "out"
url = "sqlite:///{db}"

[[adapters]]
name = "alertTable"
type = "rdbms"
datasource = "out"
table = "alerts"
mode = "insert"
create_table = true
columns = [{{ name = "room", type = "VARCHAR(20)" }}, {{ name = "celsius", type = "DOUBLE PRECISION" }}]

[[formatters]]
name = "alertRows"
stream = "alerts:1.0.0"
adapter = "alertTable"
type = "map"
"""

TEMPS = parse_definition(
    "{'name':'temps','version':'1.0.0','metaData':[{'name':'sensor','type':'STRING'}],"
    "'payloadData':[{'name':'room','type':'STRING'},{'name':'celsius','type':'DOUBLE'}]}"
)


def rows(db: Path) -> list[tuple[Any, ...]]:
    try:
        with sqlite3.connect(db) as conn:
            return sorted(conn.execute("SELECT room, celsius FROM alerts").fetchall())
    except sqlite3.OperationalError:
        return []


@pytest.fixture
def setup(tmp_path: Path) -> tuple[str, Path]:
    registry_url = f"sqlite:///{tmp_path / 'registry.db'}"
    db = tmp_path / "out.db"
    provision(registry_url, DOCUMENT.format(db=db), tmp_path, {"hot.siddhi": PLAN.format(threshold=30)})
    return registry_url, db


@pytest.fixture
def node(tmp_path: Path, setup: tuple[str, Path]) -> Iterator[Node]:
    with running_node(node_config(tmp_path, setup[0])) as n:
        yield n


def client(node: Node, password: str = ADMIN_PASSWORD) -> DataBridgeClient:
    assert node.thrift is not None
    return DataBridgeClient(
        f"tcp://127.0.0.1:{node.thrift.port}",
        f"ssl://127.0.0.1:{node.thrift.tls_port}",
        username="admin",
        password=password,
        ca_file=str(node.config.data_dir / "tls" / "cert.pem"),
    )


def post(node: Node, path: str, body: Any, password: str | None = ADMIN_PASSWORD) -> tuple[int, Any]:
    assert node.web is not None
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{node.web.port}{path}", data=data, method="POST")
    request.add_header("Content-Type", "application/json")
    if password is not None:
        token = base64.b64encode(f"admin:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_thrift_events_run_through_the_plan_into_the_table(node: Node, setup: tuple[str, Path]) -> None:
    with client(node) as c:
        assert c.find_stream_id("temps", "1.0.0") == "temps:1.0.0"
        c.add_definition(TEMPS)
        c.publish(
            [
                WireEvent("temps:1.0.0", 0, ("s1",), None, ("kitchen", 31.5)),
                WireEvent("temps:1.0.0", 0, ("s2",), None, ("hall", 20.0)),
                WireEvent("temps:1.0.0", 0, ("s3",), None, ("attic", 40.0)),
            ]
        )
    assert node.outputs.flush(10)
    assert rows(setup[1]) == [("attic", 40.0), ("kitchen", 31.5)]
    assert node.ingress.stats().received == {"temps:1.0.0": 3}


def test_wrong_password_is_refused(node: Node) -> None:
    from adapters.thrift import AuthenticationFailed

    with pytest.raises(AuthenticationFailed):
        client(node, "not-the-password").connect()


def test_client_definitions_are_stored_in_the_registry(node: Node, setup: tuple[str, Path]) -> None:
    fresh = parse_definition(
        "{'name':'doors','version':'2.0.0','payloadData':[{'name':'open','type':'BOOL'}]}"
    )
    with client(node) as c:
        assert c.find_stream_id("doors", "2.0.0") is None
        assert c.define_stream(fresh) == "doors:2.0.0"
        assert c.define_stream(fresh) == "doors:2.0.0"  # idempotent
        clash = parse_definition(
            "{'name':'doors','version':'2.0.0','payloadData':[{'name':'open','type':'INT'}]}"
        )
        with pytest.raises(DefinitionConflict):
            c.define_stream(clash)
        # a stream a plan imports cannot be deleted from under it
        assert c.delete_stream("temps:1.0.0") is False
        assert c.delete_stream("doors:2.0.0") is True
    with Registry(setup[0]) as registry:
        assert registry.get_stream("doors:2.0.0") is None
        assert registry.get_stream("temps:1.0.0") is not None


def test_http_receiver(node: Node, setup: tuple[str, Path]) -> None:
    status, body = post(
        node,
        "/events/temps:1.0.0",
        [["s1", "lab", 35.0], {"data": {"meta_sensor": "s2", "room": "cold", "celsius": 1}}],
    )
    assert (status, body) == (200, {"accepted": 2})
    status, body = post(
        node,
        "/events/temps:1.0.0",
        {"event": {"metaData": {"sensor": "s3"}, "payloadData": {"room": "oven", "celsius": 200}}},
    )
    assert (status, body) == (200, {"accepted": 1})
    assert node.outputs.flush(10)
    assert rows(setup[1]) == [("lab", 35.0), ("oven", 200.0)]

    assert post(node, "/events/temps:1.0.0", [["s1", "lab", 35.0]], password=None)[0] == 401
    assert post(node, "/events/temps:1.0.0", [["s1", "lab", 35.0]], password="wrong-pw")[0] == 401
    status, body = post(node, "/events/nope:1.0.0", [])
    assert status == 404 and "nope:1.0.0" in body["error"]
    status, body = post(node, "/events/temps:1.0.0", [["s1", "lab", 35.0], ["s1", "lab", "hot"]])
    assert status == 400
    assert body["error"] == "event 1: attribute 'celsius': expected double, got string 'hot'"
    status, body = post(node, "/events/temps:1.0.0", b"{not json")
    assert status == 400 and "not JSON" in body["error"]
    assert node.outputs.flush(10)
    assert len(rows(setup[1])) == 2  # the refused requests left nothing behind


def test_a_changed_plan_is_redeployed_without_restart(node: Node, setup: tuple[str, Path]) -> None:
    registry_url, db = setup
    before = node.plans.runtime("hot")
    with Registry(registry_url) as registry:
        old = registry.get_plan("hot")
        assert old is not None
        registry.put_plan(ExecutionPlan("hot", PLAN.format(threshold=0)))
    wait_for(lambda: node.plans.runtime("hot") not in (None, before), 10, "the plan to be redeployed")
    assert post(node, "/events/temps:1.0.0", [["s1", "cellar", 5.0]]) == (200, {"accepted": 1})
    assert node.outputs.flush(10)
    assert rows(db) == [("cellar", 5.0)]


def test_a_disabled_receiver_closes_its_port(node: Node, setup: tuple[str, Path]) -> None:
    with Registry(setup[0]) as registry:
        registry.put_receiver(Receiver("databridge", "thrift", enabled=False))
        registry.put_receiver(Receiver("rest", "http", enabled=False))
    wait_for(lambda: node.thrift is None, 10, "the Thrift receiver to stop")
    status, _ = post(node, "/events/temps:1.0.0", [["s1", "lab", 35.0]])
    assert status == 503
    with Registry(setup[0]) as registry:
        registry.put_receiver(Receiver("databridge", "thrift", enabled=True))
    wait_for(lambda: node.thrift is not None, 10, "the Thrift receiver to start again")
    with client(node) as c:
        c.add_definition(TEMPS)
        c.publish([WireEvent("temps:1.0.0", 0, ("s1",), None, ("porch", 33.0))])
    assert node.outputs.flush(10)
    assert rows(setup[1]) == [("porch", 33.0)]


def test_stop_delivers_everything_acknowledged(tmp_path: Path, setup: tuple[str, Path]) -> None:
    cfg = node_config(tmp_path, setup[0], adapters={"batch_events": 50})
    with running_node(cfg) as n:
        with client(n) as c:
            c.add_definition(TEMPS)
            c.publish([WireEvent("temps:1.0.0", 0, ("s0",), None, ("first", 50.0))])
            assert n.outputs.flush(10)
            # the table is locked: the adapter has to hold what the node acknowledges
            lock = sqlite3.connect(setup[1], isolation_level=None, check_same_thread=False)
            lock.execute("BEGIN EXCLUSIVE")
            for i in range(20):
                c.publish(
                    [WireEvent("temps:1.0.0", 0, ("s",), None, (f"room{i}-{k}", 50.0)) for k in range(100)]
                )
        assert n.outputs.stats()["alertTable"].pending > 0
        threading.Timer(1.0, lock.rollback).start()
    # the node has stopped, after the lock went away: every event it acknowledged is in the table
    lock.close()
    assert len(rows(setup[1])) == 2001


def test_many_concurrent_clients(node: Node, setup: tuple[str, Path]) -> None:
    errors: list[BaseException] = []

    def publish(k: int) -> None:
        try:
            with client(node) as c:
                c.add_definition(TEMPS)
                for b in range(25):
                    c.publish(
                        [
                            WireEvent("temps:1.0.0", 0, (f"c{k}",), None, (f"r{k}-{b}-{i}", 40.0))
                            for i in range(20)
                        ]
                    )
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=publish, args=(k,)) for k in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert node.outputs.flush(20)
    got = rows(setup[1])
    assert len(got) == 12 * 25 * 20 == len(set(got))


FORWARDED = """
[[streams]]
name = "forwarded"
payload = [{ name = "room", type = "STRING" }, { name = "celsius", type = "DOUBLE" }]

[[streams]]
name = "alerts"
payload = [{ name = "room", type = "STRING" }, { name = "celsius", type = "DOUBLE" }]

[[plans]]
name = "relay"
text = '''
@Import('forwarded:1.0.0') define stream forwarded (room string, celsius double);
@Export('alerts:1.0.0') define stream alerts (room string, celsius double);
from forwarded select room, celsius insert into alerts;
'''

[[datasources]]
name = "out"
url = "sqlite:///DB"

[[adapters]]
name = "alertTable"
type = "rdbms"
datasource = "out"
table = "alerts"
mode = "insert"
create_table = true
columns = [{ name = "room", type = "VARCHAR(20)" }, { name = "celsius", type = "DOUBLE PRECISION" }]

[[formatters]]
name = "alertRows"
stream = "alerts:1.0.0"
adapter = "alertTable"
type = "map"
"""


def test_a_node_forwards_its_output_to_another_node(
    tmp_path: Path, node: Node, setup: tuple[str, Path]
) -> None:
    """CEP 3.x sample 0108's last hop: alerts leave through the wso2event adapter into a second node."""
    second_dir = tmp_path / "second"
    second_dir.mkdir()
    second_url = f"sqlite:///{second_dir / 'registry.db'}"
    second_db = second_dir / "out.db"
    provision(second_url, FORWARDED.replace("DB", str(second_db)), second_dir)
    with running_node(node_config(second_dir, second_url)) as second:
        assert second.thrift is not None
        forwarding = f"""
[[adapters]]
name = "toSecond"
type = "wso2event"
receiverURL = "tcp://127.0.0.1:{second.thrift.port}"
authenticatorURL = "ssl://127.0.0.1:{second.thrift.tls_port}"
ca_file = "{second.config.data_dir / "tls" / "cert.pem"}"
username = "admin"
password = "{ADMIN_PASSWORD}"

[[formatters]]
name = "alertsOut"
stream = "alerts:1.0.0"
adapter = "toSecond"
type = "wso2event"
stream_name = "forwarded"
"""
        first_dir = tmp_path / "first-apply"
        first_dir.mkdir()
        provision(setup[0], forwarding, first_dir)
        wait_for(lambda: "toSecond" in node.outputs.adapters(), 10, "the forwarder to start")
        assert post(node, "/events/temps:1.0.0", [["s1", "sauna", 80.0], ["s2", "hall", 20.0]]) == (
            200,
            {"accepted": 2},
        )
        assert node.outputs.flush(10)
        wait_for(
            lambda: second.ingress.stats().received.get("forwarded:1.0.0") == 1, 10, "the forwarded event"
        )
        assert second.outputs.flush(10)
        assert rows(second_db) == [("sauna", 80.0)]
    assert rows(setup[1]) == [("sauna", 80.0)]  # the first node's own table still gets its row
