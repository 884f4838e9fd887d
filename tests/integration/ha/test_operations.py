"""Operating a redundant cluster of two real `cepheus server` processes while readings flow
(MariaDB registry and sink): `cepheus cluster move` and `drain` move the notifier without a
lost or repeated row, `cluster status` shows the members and the lease; and with no fault at
all, nothing changes role. That quiet run is a soak (marker `soak`): `make test` leaves it out,
`make ha-soak` runs it for 30 minutes; `CEPHEUS_HA_SOAK_SECONDS` sets how long (120 s unset)."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cluster import ClusterFeeder, Pair, plan_status
from tests.support.databases import isolated_database
from tests.support.nodes import NodeProcess, wait_for
from tests.support.rooms import PLAN, assert_exact, provision, readings, sink_rows

pytestmark = [pytest.mark.mysql, pytest.mark.slow, pytest.mark.ha]

SOAK_SECONDS = float(os.environ.get("CEPHEUS_HA_SOAK_SECONDS", "120"))


@pytest.fixture
def dbs(mysql_url: str) -> Iterator[tuple[str, str]]:
    with (
        isolated_database(mysql_url, "cep_ha") as registry,
        isolated_database(mysql_url, "cep_ha_sink") as sink,
    ):
        yield registry, sink


def started(tmp_path: Path, registry: str, sink: str) -> Pair:
    pair = Pair(tmp_path, registry)
    document_dir = tmp_path / "doc"
    document_dir.mkdir()
    provision(pair.nodes[0], document_dir, sink, redundant="failover")
    for node in pair.nodes:
        node.start()
    wait_for(pair.notifier, 20, "a notifier")
    return pair


def node_id(node: NodeProcess) -> str:
    return str(node.sections["node"]["id"])


def wait_settled(pair: Pair, sink: str, sent: int) -> None:
    deadline = time.monotonic() + 30
    while sum(r[3] for r in sink_rows(sink) if r[0] == "batch") < sent and time.monotonic() < deadline:
        time.sleep(0.2)


def test_move_and_drain_hand_the_plan_over_without_losing_a_row(
    tmp_path: Path, dbs: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    registry, sink = dbs
    seed = random.randrange(1 << 30)
    plan_input = readings(seed, 200_000)
    base = int(time.time() * 1000) + 86_400_000
    pair = started(tmp_path, registry, sink)
    moves: list[float] = []
    try:
        feeder = ClusterFeeder(pair, plan_input, base)
        feeder.start()
        time.sleep(1.0)
        first = wait_for(pair.notifier, 10, "a notifier")
        other = pair.nodes[1 - pair.nodes.index(first)]
        wait_for(lambda: plan_status(other).get("caught_up"), 20, "the standby to catch up")
        wait_for(lambda: "reported" in first.cli("cluster", "status").stdout, 10, "members in the registry")
        asked = time.monotonic()
        first.cli("cluster", "move", "rooms", node_id(other))
        wait_for(lambda: pair.notifier() is other, 15, "the move")
        moves.append(time.monotonic() - asked)
        status = first.cli("cluster", "status").stdout
        assert f"plan rooms: notifier {node_id(other)}" in status and f"pinned to {node_id(other)}" in status
        assert f"member {node_id(first)}" in status and f"member {node_id(other)}" in status
        time.sleep(1.0)
        wait_for(lambda: plan_status(first).get("caught_up"), 20, "the old notifier to catch up")
        asked = time.monotonic()
        first.cli("cluster", "drain", node_id(other))  # drain wins over the pin
        wait_for(lambda: pair.notifier() is first, 15, "the drain")
        moves.append(time.monotonic() - asked)
        first.cli("cluster", "drain", node_id(other), "--undo")
        first.cli("cluster", "unpin", "rooms")
        time.sleep(1.0)
        sent = feeder.stop()
        wait_settled(pair, sink, sent)
    finally:
        pair.stop()
    assert_exact(sink, plan_input[:sent], base, f"seed {seed}, {sent} readings")
    with capsys.disabled():
        print(
            f"\n[cluster move, drain] seed {seed}, {sent} readings: the notifier moved in "
            f"{moves[0] * 1000:.0f} ms and {moves[1] * 1000:.0f} ms (command → new notifier)"
        )


TALLY = """
@info(name='tally')
from In select 'tally' as kind, room, seq, count() as a, 0L as b group by room insert into Out;
"""


def test_an_edit_while_the_plan_runs_leaves_both_members_with_the_notifiers_state(
    tmp_path: Path, dbs: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """An operator adds a query to the running plan. Each member redeploys when it polls the
    registry, at another point of the input; the standby then takes the notifier's state of
    the new text again. After a kill -9 of the notifier the standby's new query carries on
    the notifier's counts: every room's tally counts each reading after the edit once, with
    no jump or repeat at the takeover, and the unchanged queries lose and repeat nothing."""
    registry, sink = dbs
    seed = random.randrange(1 << 30)
    plan_input = readings(seed, 200_000)
    base = int(time.time() * 1000) + 86_400_000
    pair = started(tmp_path, registry, sink)
    try:
        feeder = ClusterFeeder(pair, plan_input, base)
        feeder.start()
        time.sleep(1.0)
        (tmp_path / "doc" / "rooms.siddhi").write_text(PLAN + TALLY, encoding="utf-8")
        pair.nodes[0].cli("apply", str(tmp_path / "doc" / "apply.toml"))
        wait_for(lambda: any(r[0] == "tally" for r in sink_rows(sink)), 20, "the new query's rows")
        time.sleep(1.0)
        victim, survivor = wait_for(pair.settled, 20, "a notifier with the other member in sync")
        victim.kill()
        wait_for(lambda: pair.notifier() is survivor, 10, "takeover")
        killed_at = max((r[2] for r in sink_rows(sink) if r[0] == "tally"), default=0)
        time.sleep(1.0)
        sent = feeder.stop()
        wait_settled(pair, sink, sent)
    finally:
        pair.stop()
    where = f"seed {seed}, {sent} readings"
    assert_exact(sink, plan_input[:sent], base, where, ignore=("tally",))
    tallies = sorted((r for r in sink_rows(sink) if r[0] == "tally"), key=lambda r: r[2])
    assert any(r[2] > killed_at for r in tallies), f"{where}: no tally after the takeover"
    for room in sorted({r[0] for r in plan_input[:sent]}):
        mine = [r for r in tallies if r[1] == room]
        first_seq, first_count = mine[0][2], mine[0][3]
        seqs = [r[1] for r in plan_input[:sent] if r[0] == room and r[1] > first_seq]
        for _, _, seq, count, _ in mine[1:]:  # the readings of the room counted since the first row
            counted = first_count + sum(1 for s in seqs if s <= seq)
            assert count == counted, f"{where}: room {room}, reading {seq}: tally {count}, expected {counted}"
    with capsys.disabled():
        print(f"\n[plan edit, kill -9] {where}: {len(tallies)} tallies consistent across the takeover")


@pytest.mark.soak
def test_with_no_fault_nothing_changes_role(
    tmp_path: Path, dbs: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    registry, sink = dbs
    seed = random.randrange(1 << 30)
    plan_input = readings(seed, int(SOAK_SECONDS * 1_200) + 60_000)  # readings for the whole run
    base = int(time.time() * 1000) + 86_400_000
    pair = started(tmp_path, registry, sink)
    try:
        feeder = ClusterFeeder(pair, plan_input, base)
        feeder.start()
        notifier = wait_for(  # the first notifier hands the plan to the member placement prefers
            lambda: next(
                (
                    n
                    for n in [pair.notifier()]
                    if n and plan_status(n).get("preferred") == n.sections["node"]["id"]
                ),
                None,
            ),
            20,
            "the preferred member notifying",
        )
        epoch = plan_status(notifier)["epoch"]
        changes = 0
        end = time.monotonic() + SOAK_SECONDS
        while time.monotonic() < end:
            time.sleep(1.0)
            now = pair.notifier()
            if now is not notifier or plan_status(notifier).get("epoch") != epoch:
                changes += 1
                notifier = wait_for(pair.notifier, 10, "a notifier")
                epoch = plan_status(notifier)["epoch"]
        sent = feeder.stop()
        wait_settled(pair, sink, sent)
    finally:
        pair.stop()
    with capsys.disabled():
        print(f"\n[no faults, {SOAK_SECONDS:.0f} s] seed {seed}, {sent} readings: {changes} role changes")
    assert changes == 0
    assert_exact(sink, plan_input[:sent], base, f"seed {seed}, {sent} readings")
