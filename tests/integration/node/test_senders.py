"""Client resends known by identity: a node over real Thrift and HTTP sockets, an SQLite
registry and table. A bundle sent again after 10,000 other bundles is taken once (the content
digests of redundant plans remember 4,096, for 10 s); two identical bundles with different
numbers are both taken; with the input log the marks outlive a restart of the node."""

from __future__ import annotations

import base64
import json
import sqlite3
import urllib.request
from pathlib import Path

import pytest

from adapters.senders import FROM_HEADER, FROM_KEY
from adapters.thrift import DataBridgeClient, WireEvent
from app.node import Node
from tests.integration.node.test_node import DOCUMENT, PLAN, TEMPS
from tests.support.nodes import ADMIN_PASSWORD, node_config, provision, running_node, wait_for

OTHERS = 10_000


def count(db: Path) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM alerts").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def bundle(number: int, room: str = "sauna", sender: str = "pub-1") -> list[WireEvent]:
    """One event as Cepheus' publisher sends it: its number and the publisher's name attached."""
    return [WireEvent("temps:1.0.0", 1_000, ("s1",), None, (room, 80.0), {FROM_KEY: f"0.{number}@{sender}"})]


def connect(node: Node) -> DataBridgeClient:
    assert node.thrift is not None
    client = DataBridgeClient(
        f"tcp://127.0.0.1:{node.thrift.port}",
        f"ssl://127.0.0.1:{node.thrift.tls_port}",
        username="admin",
        password=ADMIN_PASSWORD,
        ca_file=str(node.config.data_dir / "tls" / "cert.pem"),
        bundle_size=1,
    )
    client.connect()
    client.add_definition(TEMPS)
    return client


def settled(node: Node, db: Path, expected: int) -> int:
    assert node.outputs.flush(30)
    return wait_for(
        lambda: count(db) if count(db) >= expected else None,
        30,
        f"{expected} rows",
        message=lambda: count(db),
    )


@pytest.mark.parametrize("input_log", [False, True], ids=["in-memory", "input-log"])
def test_a_resend_after_ten_thousand_bundles_is_taken_once(tmp_path: Path, input_log: bool) -> None:
    registry_url = f"sqlite:///{tmp_path / 'registry.db'}"
    db = tmp_path / "out.db"
    document = DOCUMENT.format(db=db)
    if input_log:
        document = document.replace(
            'file = "hot.siddhi"', 'file = "hot.siddhi"\nsnapshot_interval_minutes = 10'
        )
    provision(registry_url, document, tmp_path, {"hot.siddhi": PLAN.format(threshold=30)})
    config = node_config(tmp_path, registry_url, persistence={"input_log": input_log})
    with running_node(config) as node:
        client = connect(node)
        client.publish(bundle(0))
        for n in range(1, OTHERS + 1):
            client.publish(bundle(n, room=f"room-{n}"))
        client.publish(bundle(0))  # its acknowledgement was lost, say: sent again
        assert settled(node, db, OTHERS + 1) == OTHERS + 1
        client.publish(bundle(OTHERS + 1))  # identical to the first but for its number
        client.publish(bundle(OTHERS + 2))
        assert settled(node, db, OTHERS + 3) == OTHERS + 3
        client.close()
    if not input_log:
        return
    with running_node(config) as node:  # the same node again, its marks from its log
        client = connect(node)
        client.publish(bundle(OTHERS + 2))
        client.publish(bundle(0, sender="pub-2"))
        assert settled(node, db, OTHERS + 4) == OTHERS + 4
        client.close()


def test_an_http_client_that_names_itself_is_taken_once(tmp_path: Path) -> None:
    registry_url = f"sqlite:///{tmp_path / 'registry.db'}"
    db = tmp_path / "out.db"
    provision(registry_url, DOCUMENT.format(db=db), tmp_path, {"hot.siddhi": PLAN.format(threshold=30)})
    with running_node(node_config(tmp_path, registry_url)) as node:
        assert node.web is not None

        def post(first: str | None, events: list[list[object]]) -> tuple[int, object]:
            request = urllib.request.Request(
                f"http://127.0.0.1:{node.web.port}/events/temps:1.0.0",
                data=json.dumps(events).encode(),
                method="POST",
            )
            request.add_header("Content-Type", "application/json")
            request.add_header(
                "Authorization", "Basic " + base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()
            )
            if first is not None:
                request.add_header(FROM_HEADER, first)
            try:
                with urllib.request.urlopen(request, timeout=10) as reply:  # noqa: S310 - the test's node
                    return reply.status, json.loads(reply.read())
            except urllib.error.HTTPError as exc:
                return exc.code, json.loads(exc.read())

        two = [["s1", "sauna", 80.0], ["s1", "attic", 50.0]]
        assert post("0.0@curl-1", two) == (200, {"accepted": 2})
        assert post("0.0@curl-1", two) == (200, {"accepted": 2})  # the reply was lost: sent again
        assert post("0.1@curl-1", [*two[1:], ["s1", "hall", 40.0]]) == (200, {"accepted": 2})  # one new
        assert settled(node, db, 3) == 3
        status, body = post("zero@curl-1", two)
        assert status == 400 and "cepheus.from" in str(body)
        assert count(db) == 3
