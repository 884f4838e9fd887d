"""Persistence mode on real `cepheus server` processes with a MariaDB registry: a plan with a
snapshot interval keeps its window across a graceful restart, on the same node or on another
one sharing the registry, and an edit of one query keeps the state of the others; `cepheus
snapshot take|restore` on the running node, and `cepheus server --discard-state`."""

from __future__ import annotations

import base64
import json
import re
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tests.support.databases import isolated_database
from tests.support.nodes import ADMIN_PASSWORD, NodeProcess, wait_for

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

PLAN = """
@Import('nums:1.0.0') define stream In (v long);
@Export('sums:1.0.0') define stream Sums (total long);
@info(name='sums') from In#window.length(3) select sum(v) as total insert into Sums;
"""

DOCUMENT = """
[[streams]]
name = "nums"
payload = [{ name = "v", type = "LONG" }]

[[streams]]
name = "sums"
payload = [{ name = "total", type = "LONG" }]

[[plans]]
name = "summing"
file = "summing.siddhi"
snapshot_interval_minutes = 10

[[datasources]]
name = "out"
url = "sqlite:///OUT"

[[adapters]]
name = "sumTable"
type = "rdbms"
datasource = "out"
table = "sums"
mode = "insert"
create_table = true
columns = [{ name = "total", type = "BIGINT" }]

[[formatters]]
name = "sumRows"
stream = "sums:1.0.0"
adapter = "sumTable"
type = "map"
"""


@pytest.fixture
def nodes() -> Iterator[Callable[[Path, str], NodeProcess]]:
    """Makes node processes that are stopped at the end of the test, whatever happened."""
    made: list[NodeProcess] = []

    def make(tmp: Path, registry: str) -> NodeProcess:
        tmp.mkdir(exist_ok=True)
        made.append(NodeProcess(tmp, registry))
        return made[-1]

    yield make
    for node in made:
        node.stop()


@pytest.fixture
def registry(mysql_url: str) -> Iterator[str]:
    with isolated_database(mysql_url, "cep_persist") as url:
        yield url


def send(node: NodeProcess, *values: int) -> None:
    token = base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{node.console_port}/events/nums:1.0.0",
        data=json.dumps([[v] for v in values]).encode(),
        headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:  # noqa: S310 - test URL
        assert json.loads(reply.read()) == {"accepted": len(values)}


def totals(out: Path) -> list[Any]:
    engine = sa.create_engine(f"sqlite:///{out}")
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table("sums"):
                return []
            return [r[0] for r in conn.execute(sa.text("SELECT total FROM sums ORDER BY rowid"))]
    finally:
        engine.dispose()


def provision(node: NodeProcess, tmp: Path, out: Path, plan: str = PLAN) -> None:
    (tmp / "summing.siddhi").write_text(plan, encoding="utf-8")
    (tmp / "apply.toml").write_text(DOCUMENT.replace("OUT", str(out)), encoding="utf-8")
    node.cli("db", "upgrade")
    node.cli("apply", str(tmp / "apply.toml"))


def test_a_graceful_restart_keeps_the_window(
    tmp_path: Path, registry: str, nodes: Callable[[Path, str], NodeProcess]
) -> None:
    out = tmp_path / "out.db"
    node = nodes(tmp_path / "a", registry)
    provision(node, tmp_path, out)
    node.start()
    send(node, 1)
    send(node, 2)
    assert node.stop() == 0
    assert "snapshot" in node.log() and "taken" in node.log()
    node.start()
    send(node, 3)
    wait_for(lambda: len(totals(out)) == 3, 10, "three sums")
    node.stop()
    assert totals(out) == [1, 3, 6]  # without the restored window the last would be 3
    assert "restored from snapshot" in node.log()


def test_another_node_on_the_registry_carries_on_and_an_edit_keeps_the_untouched_query(
    tmp_path: Path, registry: str, nodes: Callable[[Path, str], NodeProcess]
) -> None:
    out = tmp_path / "out.db"
    first = nodes(tmp_path / "a", registry)
    provision(first, tmp_path, out)
    first.start()
    send(first, 1, 2)
    assert first.stop() == 0
    edited = (
        PLAN
        + "\n-- counted as well now\n@info(name='count') from In select count() as total insert into Sums;\n"
    )
    provision(first, tmp_path, out, edited)
    second = nodes(tmp_path / "b", registry)
    second.start()
    send(second, 3)
    wait_for(
        lambda: len(totals(out)) >= 3,
        10,
        f"the sums of the second node; so far {totals(out)}; its log:\n{second.log()}",
    )
    second.stop()
    assert totals(out)[0] == 3  # 1 and 2 came in one request: one sum
    assert sorted(totals(out)[1:]) == [1, 6]  # 'sums' kept its window (1+2+3); 'count' started at 0
    assert "started empty: query 'count'" in second.log()


def test_a_snapshot_taken_on_request_restores_the_window_of_that_moment(
    tmp_path: Path, registry: str, nodes: Callable[[Path, str], NodeProcess]
) -> None:
    out = tmp_path / "out.db"
    node = nodes(tmp_path / "a", registry)
    provision(node, tmp_path, out)
    node.start()
    password = {"CEPHEUS_PASSWORD": ADMIN_PASSWORD}
    send(node, 1)
    send(node, 2)
    taken = node.cli("snapshot", "take", "summing", env=password).stdout
    found = re.fullmatch(r"snapshot (\d+) of plan summing taken: [\d,]+ bytes\n", taken)
    assert found is not None, taken
    send(node, 10)
    send(node, 20)
    restored = node.cli("snapshot", "restore", "summing", found[1], env=password).stdout
    assert restored == f"plan summing restored from snapshot {found[1]}: 1 parts kept\n"
    send(node, 3)
    wait_for(lambda: len(totals(out)) == 5, 10, f"five sums; so far {totals(out)}")
    assert node.stop() == 0
    assert totals(out) == [1, 3, 13, 32, 6]  # 1+2+3: the window as it was when the snapshot was taken


def test_discard_state_starts_empty_and_removes_the_snapshots(
    tmp_path: Path, registry: str, nodes: Callable[[Path, str], NodeProcess]
) -> None:
    out = tmp_path / "out.db"
    node = nodes(tmp_path / "a", registry)
    provision(node, tmp_path, out)
    node.start()
    send(node, 1, 2)
    assert node.stop() == 0  # its final snapshot holds 1 and 2
    node.start(args=["--discard-state"])
    assert node.cli("snapshot", "list", "summing").stdout == "plan 'summing' has no snapshots\n"
    send(node, 3)
    wait_for(lambda: len(totals(out)) == 2, 10, f"two sums; so far {totals(out)}")
    node.stop()
    assert totals(out) == [3, 3]  # the second started from an empty window
    assert "plan summing starts with empty state (--discard-state): 1 snapshot(s) discarded" in node.log()
