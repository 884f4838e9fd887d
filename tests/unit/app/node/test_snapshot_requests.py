"""Snapshots on request over HTTP (`app.node.snapshot_requests`), on a real plan manager and a SQLite
registry: take one of a running plan, restore a chosen one into it, and every refusal."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient

from app.auth import Credentials
from app.http.basic_auth import login_refusal
from app.http.web import create_web_app
from app.node.snapshot_requests import SnapshotRequests, snapshots_blueprint
from app.persistence.snapshot_keeper import SnapshotKeeper
from app.registry import ExecutionPlan, schema
from app.registry.snapshots import RegistrySnapshots
from engine.runtime import state as state_codec
from tests.unit.app.node.test_plans import Manager

SUMS = """
@Import('s2:1.0.0') define stream In (v long);
define stream Sums (total long);
define stream Counts (n long);
@info(name='sums') from In#window.length(3) select sum(v) as total insert into Sums;
@info(name='count') from In#window.length(3) select count() as n insert into Counts;
"""


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


PASSWORD = "snapshot-pw"
ADMIN = basic("admin", PASSWORD)


class Node:
    """The plan `sums` running in a plan manager, with the HTTP endpoints in front of it."""

    def __init__(self, tmp_path: Path) -> None:
        self.manager = Manager(tmp_path)
        self.manager.registry.ensure_admin(PASSWORD)
        self.store = RegistrySnapshots(self.manager.registry)
        keeper = SnapshotKeeper(self.store, "node-a", keep=5, deployed=self.manager.plans.deployments)
        assert self.manager.apply(ExecutionPlan("sums", SUMS))["sums"].state == "running"
        credentials = Credentials(self.manager.registry.verify_user)
        bp = snapshots_blueprint(
            SnapshotRequests(self.manager.plans, keeper), lambda _: login_refusal(credentials)
        )
        self.app = create_web_app([bp], lambda: {"status": "ok"}, credentials)
        self.client: FlaskClient = self.app.test_client()
        self.out = self.manager.watch("sums", "Sums")

    def send(self, *values: int) -> None:
        for v in values:
            self.manager.ingress.publish_rows("s2:1.0.0", [(v,)])

    def sums(self) -> list[Any]:
        return [row[0] for chunk in self.out for row in chunk]

    def take(self) -> Any:
        reply = self.client.post("/api/v1/plans/sums/snapshots", headers=ADMIN)
        assert reply.status_code == 201, reply.json
        return reply.json

    def restore(self, snapshot_id: int, plan: str = "sums") -> Any:
        return self.client.post(f"/api/v1/plans/{plan}/snapshots/{snapshot_id}/restore", headers=ADMIN)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node(tmp_path)
    yield n
    n.manager.close()
    n.manager.registry.close()


def test_take_stores_a_snapshot_of_the_running_plan_and_answers_its_meta(node: Node) -> None:
    node.send(1, 2)
    meta = node.take()
    assert [m.id for m in node.store.list("sums")] == [meta["id"]]
    assert meta["plan"] == "sums" and meta["node"] == "node-a"
    assert meta["size"] > 0 and meta["input_position"] is None
    assert "T" in meta["created_at"] and isinstance(meta["state_format"], int)


def test_restore_brings_the_window_back_to_the_snapshot(node: Node) -> None:
    node.send(1, 2)
    taken = node.take()
    node.send(10, 20)
    reply = node.restore(taken["id"])
    assert reply.status_code == 200
    assert reply.json == {
        "plan": "sums",
        "snapshot": taken["id"],
        "kept": ["query 'sums'", "query 'count'"],
        "fresh": [],
        "unfit": [],
    }
    node.out = node.manager.watch("sums", "Sums")  # the plan runs on a new runtime now
    node.send(3)
    assert node.sums() == [6]  # 1 + 2 + 3: the window of the snapshot, not 10 and 20


def test_a_corrupt_snapshot_leaves_the_running_state_untouched(node: Node) -> None:
    node.send(1)
    taken = node.take()
    with node.store.registry.engine.begin() as conn:
        conn.execute(
            sa.update(schema.snapshots).where(schema.snapshots.c.id == taken["id"]).values(data=b"garbage")
        )
    node.send(2)
    reply = node.restore(taken["id"])
    assert reply.status_code == 409
    assert f"snapshot {taken['id']} of plan 'sums'" in reply.json["error"]
    assert "corrupt" in reply.json["error"]
    node.send(4)
    assert node.sums()[-1] == 7  # 1 + 2 + 4: the plan went on with its own window


def test_a_snapshot_the_plan_cannot_load_leaves_the_running_state_untouched(node: Node) -> None:
    node.send(1)
    taken = node.take()
    node.send(2)
    blob = b"not a state blob"
    with node.store.registry.engine.begin() as conn:  # consistent checks, foreign content
        conn.execute(
            sa.update(schema.snapshots)
            .where(schema.snapshots.c.id == taken["id"])
            .values(data=blob, size=len(blob), checksum=hashlib.sha256(blob).hexdigest())
        )
    reply = node.restore(taken["id"])
    assert reply.status_code == 422
    assert reply.json["error"].startswith(f"snapshot {taken['id']} does not load into plan 'sums'")
    node.send(4)
    assert node.sums()[-1] == 7


def test_a_snapshot_failing_halfway_through_its_parts_changes_no_part(node: Node) -> None:
    node.send(1)
    taken = node.take()
    tree = state_codec.decode(node.store.load(taken["id"]))
    tree["parts"][next(k for k in tree["parts"] if "count" in k)]["state"] = 7  # 'sums' loads first
    running = node.manager.plans.runtime("sums")
    assert running is not None
    blob = state_codec.encode(tree, running.name)
    with node.store.registry.engine.begin() as conn:
        conn.execute(
            sa.update(schema.snapshots)
            .where(schema.snapshots.c.id == taken["id"])
            .values(data=blob, size=len(blob), checksum=hashlib.sha256(blob).hexdigest())
        )
    counts = node.manager.watch("sums", "Counts")
    node.send(2)
    reply = node.restore(taken["id"])
    assert reply.status_code == 422
    assert "snapshot part query 'count' cannot be read" in reply.json["error"]
    node.send(4)
    assert (node.sums()[-1], counts[-1]) == (7, [(3,)])  # both went on with their own windows: 1, 2, 4


def test_restore_of_a_snapshot_of_another_plan_is_a_404(node: Node) -> None:
    taken = node.take()
    with node.store.registry.engine.begin() as conn:
        conn.execute(
            sa.update(schema.snapshots).where(schema.snapshots.c.id == taken["id"]).values(plan="other")
        )
    reply = node.restore(taken["id"])
    assert reply.status_code == 404
    assert reply.json["error"].startswith(f"plan 'sums' has no snapshot {taken['id']}")


def test_unknown_snapshot_and_unknown_plan_are_404s(node: Node) -> None:
    assert node.restore(99).status_code == 404
    assert "has no snapshot 99" in node.restore(99).json["error"]
    for reply in (
        node.client.post("/api/v1/plans/nope/snapshots", headers=ADMIN),
        node.restore(1, plan="nope"),
    ):
        assert reply.status_code == 404
        assert reply.json is not None
        assert reply.json["error"].startswith("plan 'nope' is not deployed on this node")


@pytest.mark.parametrize("headers", [{}, basic("admin", "wrong")], ids=["none", "wrong"])
def test_both_endpoints_need_a_login(node: Node, headers: dict[str, str]) -> None:
    taken = node.take()
    for path in ("/api/v1/plans/sums/snapshots", f"/api/v1/plans/sums/snapshots/{taken['id']}/restore"):
        reply = node.client.post(path, headers=headers)
        assert reply.status_code == 401
        assert reply.json is not None and "error" in reply.json
    assert len(node.store.list("sums")) == 1
