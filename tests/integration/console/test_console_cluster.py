"""The console on real `cepheus server` processes sharing a MariaDB registry: a change made
through one node's API reaches the other node's running plans; a graceful restart asked over the
API brings the same process back with its plans' state; the cluster resource shows the members
and leases of a redundant plan and moves its notifier."""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.support.cluster import Pair
from tests.support.console import api, plan_state
from tests.support.databases import isolated_database
from tests.support.nodes import NodeProcess, wait_for
from tests.support.rooms import provision

pytestmark = [pytest.mark.slow, pytest.mark.ha, pytest.mark.mysql]

STREAM = {
    "name": "readings",
    "version": "1.0.0",
    "payload": [{"name": "room", "type": "STRING"}, {"name": "v", "type": "LONG"}],
}
TOTALS = {
    "name": "totals",
    "version": "1.0.0",
    "payload": [{"name": "room", "type": "STRING"}, {"name": "total", "type": "LONG"}],
}
PLAN = """@Plan:name('sums')
@Import('readings:1.0.0')
define stream In (room string, v long);
@Export('totals:1.0.0')
define stream Out (room string, total long);
from In select room, sum(v) as total group by room insert into Out;
"""


def test_a_change_through_one_nodes_api_reaches_the_other_node(tmp_path: Path, mysql_url: str) -> None:
    with isolated_database(mysql_url, "cep_console") as registry:
        for name in "ab":
            (tmp_path / name).mkdir()
        a, b = NodeProcess(tmp_path / "a", registry), NodeProcess(tmp_path / "b", registry)
        try:
            a.start()
            b.start()
            status, created = api(a, "POST", "/tokens", {"label": "integration"})
            assert status == 201
            token = created["token"]
            for stream in (STREAM, TOTALS):
                assert api(a, "POST", "/streams", stream, token)[0] == 201
            status, body = api(a, "POST", "/plans", {"text": PLAN}, token)
            assert status == 201, body
            wait_for(lambda: plan_state(b, "sums") == "running", 20, f"node b to deploy sums: {b.health()}")
            assert api(b, "GET", "/plans/sums", token=token)[1]["text"] == PLAN  # the token works on b too
            assert api(a, "POST", "/plans/sums/undeploy", token=token)[0] == 200
            wait_for(lambda: plan_state(b, "sums") == "disabled", 20, "node b to undeploy sums")
            assert api(a, "DELETE", f"/tokens/{created['id']}", token=token)[0] == 204
            assert api(b, "GET", "/plans", token=token)[0] == 401  # revoked everywhere
        finally:
            a.stop()
            b.stop()


def test_a_graceful_restart_over_the_api_brings_the_node_back_with_its_state(
    tmp_path: Path, mysql_url: str
) -> None:
    with isolated_database(mysql_url, "cep_console") as registry:
        node = NodeProcess(tmp_path, registry)
        try:
            node.start()
            for stream in (STREAM, TOTALS):
                assert api(node, "POST", "/streams", stream)[0] == 201
            assert api(node, "POST", "/plans", {"text": PLAN, "snapshot_interval_minutes": 60})[0] == 201
            wait_for(lambda: plan_state(node, "sums") == "running", 20, "the plan to run")
            assert api(node, "POST", "/streams/readings:1.0.0/events", [["r1", 5], ["r1", 7]]) == (
                200,
                {"accepted": 2},
            )
            status, _ = api(node, "GET", "/streams/totals:1.0.0/trace")  # start watching the output
            assert status == 200
            assert api(node, "POST", "/server/restart", {"confirm": False})[0] == 422
            assert node.process is not None
            pid = node.process.pid
            status, body = api(node, "POST", "/server/restart", {"confirm": True})
            assert status == 202, body
            wait_for(lambda: "restarting (requested from the console)" in node.log(), 30, "the restart")
            wait_for(
                lambda: _answers(node) and plan_state(node, "sums") == "running",
                60,
                f"the node to come back\n{node.log()[-3000:]}",
            )
            assert node.process.poll() is None and node.process.pid == pid  # the same process, re-executed
            api(node, "GET", "/streams/totals:1.0.0/trace")
            api(node, "POST", "/streams/readings:1.0.0/events", [["r1", 1]])
            wait_for(
                lambda: api(node, "GET", "/streams/totals:1.0.0/trace")[1], 10, "the output to be traced"
            )
            totals = [e["data"]["total"] for e in api(node, "GET", "/streams/totals:1.0.0/trace")[1]]
            assert totals[-1] == 13  # 5 + 7 before the restart, + 1 after: the sum survived it
            os.kill(pid, 0)  # (raises if the process is gone)
        finally:
            node.stop()


def _answers(node: NodeProcess) -> bool:
    try:
        return bool(node.health()["status"] == "ok")
    except (OSError, urllib.error.URLError, ValueError):
        return False


def test_the_cluster_resource_shows_members_and_leases_and_moves_a_notifier(
    tmp_path: Path, mysql_url: str
) -> None:
    with (
        isolated_database(mysql_url, "cep_console") as registry,
        isolated_database(mysql_url, "cep_console_sink") as sink,
    ):
        pair = Pair(tmp_path, registry)
        document_dir = tmp_path / "doc"
        document_dir.mkdir()
        provision(pair.nodes[0], document_dir, sink, redundant="failover")
        try:
            for node in pair.nodes:
                node.start()
            wait_for(
                lambda: len(api(pair.nodes[0], "GET", "/cluster")[1]["members"]) == 2,
                10,
                "both members reported",
            )

            def settled() -> tuple[NodeProcess, NodeProcess, dict[str, Any]] | None:
                """The notifier, the standby and the standby's view, once the roles and the lease
                agree (the preferred member takes the plan back from the first once it caught up)."""
                found = pair.settled()
                if found is None:
                    return None
                notifier, standby = found
                body = api(standby, "GET", "/cluster")[1]
                holder = notifier.sections["node"]["id"]
                return (
                    (notifier, standby, body)
                    if body["leases"] and body["leases"][0]["holder"] == holder
                    else None
                )

            first, other, body = wait_for(settled, 20, "a notifier with the other member in sync")
            ids = [n.sections["node"]["id"] for n in (first, other)]
            assert {m["node"] for m in body["members"]} == set(ids)
            (lease,) = body["leases"]
            assert lease["plan"] == "rooms" and lease["holder"] == ids[0] and lease["epoch"] >= 1
            assert body["this_node"]["plans"]["rooms"]["role"] == "standby"
            status, body = api(other, "PUT", "/cluster/plans/rooms/notifier", {"node": ids[1]})
            assert (status, body) == (200, {"plan": "rooms", "pinned": ids[1]})
            wait_for(lambda: pair.notifier() is other, 15, "the move")
            leases = api(first, "GET", "/cluster")[1]["leases"]
            assert leases[0]["holder"] == ids[1] and leases[0]["pinned"] == ids[1]
            assert api(first, "DELETE", "/cluster/plans/rooms/notifier")[0] == 204
            assert api(first, "PUT", f"/cluster/members/{ids[1]}/draining", {"draining": "yes"})[0] == 422
            assert api(first, "PUT", "/cluster/members/nobody/draining", {"draining": True})[0] == 404
        finally:
            pair.stop()
