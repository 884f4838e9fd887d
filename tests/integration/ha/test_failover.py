"""Two real `cepheus server` processes run the rooms plan redundantly (failover mode) on a shared
registry (MariaDB, or PostgreSQL), writing to a sink table in the same server. A client sends
readings at about 1,000 events/s to one node and, when a bundle fails, to the other
(`tcp://a|tcp://b`); meanwhile the notifier is killed (SIGKILL) or stopped (SIGTERM) at random
moments, again and again, and comes back as a standby. The sink must end up exactly as one
uninterrupted run's output: no row missing, none twice, every reading in a time batch once.

Each takeover is timed from the fault to the moment the surviving node reports itself the
notifier (its lease taken, the fence raised on its first write, the outputs it held delivered
again), polled every 10 ms; the figures are printed beside their target (under 1 s; 300 ms for a
graceful stop), which is a benchmark figure, not an assertion: the tests assert that each fault
was taken over and that the sink is exact. `CEPHEUS_HA_FAULTS` sets how many faults each test
injects (`make ha-faults` runs 20).
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.cluster import ClusterFeeder, Pair, SinkWatcher, plan_status
from tests.support.databases import isolated_database
from tests.support.faults import spread
from tests.support.nodes import NodeProcess, wait_for
from tests.support.rooms import assert_exact, provision, readings, sink_rows

pytestmark = [pytest.mark.slow, pytest.mark.ha, pytest.mark.mysql, pytest.mark.postgres]

FAULTS = int(os.environ.get("CEPHEUS_HA_FAULTS", "4"))


@pytest.fixture(params=["mysql", "postgres"])
def server(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_url"))


@pytest.fixture
def registry(server: str) -> Iterator[str]:
    with isolated_database(server, "cep_ha") as url:
        yield url


@pytest.fixture
def sink(server: str) -> Iterator[str]:
    with isolated_database(server, "cep_ha_sink") as url:
        yield url


def run_faults(
    tmp_path: Path,
    registry: str,
    sink: str,
    fault: Callable[[NodeProcess], object],
    faults: int,
    mode: str = "failover",
    members: int = 2,
    chained: bool = False,
    standby: bool = False,
) -> Faults:
    """Feed, inject `faults` faults into the notifier (`standby`: into the standby, which then
    has no takeover to time), check the sink; (where, takeover seconds, resent)."""
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    plan_input = readings(seed, 200_000)
    base = int(time.time() * 1000) + 86_400_000
    pair = Pair(tmp_path, registry, members=members)
    document_dir = tmp_path / "doc"
    document_dir.mkdir()
    provision(pair.nodes[0], document_dir, sink, redundant=mode, chained=chained)
    takeovers: list[float] = []
    try:
        for node in pair.nodes:
            node.start()
        wait_for(pair.notifier, 20, "a notifier")
        feeder = ClusterFeeder(pair, plan_input, base, mode)
        feeder.start()
        watcher = SinkWatcher(sink)
        watcher.start()
        hits: list[float] = []
        for _ in range(faults):
            time.sleep(rng.uniform(0.2, 1.0))
            victim, survivor = wait_for(
                pair.settled,
                20,
                "a notifier with the other member in sync",
                message=lambda: [plan_status(n) for n in pair.nodes],
            )
            hit = time.monotonic()
            hits.append(hit)
            if standby:
                victim = survivor
                fault(victim)
            elif members == 2:
                fault(victim)
                wait_for(
                    lambda s=survivor: pair.notifier() is s, 10, f"takeover\n{survivor.log()[-3000:]}", 0.01
                )
            else:  # either standby may take over
                fault(victim)
                wait_for(lambda v=victim: pair.notifier() not in (None, v), 10, "takeover", 0.01)
            if not standby:
                takeovers.append(time.monotonic() - hit)
            victim.stop()  # (waits for a graceful stop to finish)
            victim.start()  # it comes back as a standby and catches up
        time.sleep(0.5)
        sent = feeder.stop()
        watcher.stop()
        gaps = [g for g in (watcher.gap_around(h) for h in hits) if g is not None]
        time.sleep(0.5)  # the last time batch closes 300 ms after it opened
        deadline = time.monotonic() + 30  # then the assertions below say what is missing
        while sum(r[3] for r in sink_rows(sink) if r[0] == "batch") < sent and time.monotonic() < deadline:
            time.sleep(0.2)
        states = [(plan_status(n), n.health()["adapters"]) for n in pair.nodes]
    finally:
        pair.stop()
    where = f"seed {seed}, {sent} readings"
    assert_exact(sink, plan_input[:sent], base, f"{where} (at the end: {states})")
    return Faults(where, takeovers, gaps, feeder.resent)


@dataclass
class Faults:
    where: str
    takeovers: list[float]  # seconds from each fault to the new notifier
    gaps: list[float]  # seconds without a new row in the sink around each fault
    resent: int  # bundles the client sent again


def report(capsys: pytest.CaptureFixture[str], what: str, run: Faults, target_ms: int = 1000) -> None:
    """Print the run's figures, and check that every fault was taken over (the sink was checked)."""
    slow = sum(t * 1000 >= target_ms for t in run.takeovers)
    with capsys.disabled():
        print(
            f"\n[failover, {what} x{len(run.takeovers)}] {run.where}: takeover (fault → new notifier) "
            f"{spread(run.takeovers)} (target under {target_ms} ms: {slow} over); gap in the sink's rows "
            f"{spread(run.gaps)}; bundles resent {run.resent}"
        )
    assert len(run.takeovers) == FAULTS, f"{run.where}: takeovers {run.takeovers}"


def test_kill_9_of_the_notifier_loses_and_repeats_nothing(
    tmp_path: Path, registry: str, sink: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_faults(tmp_path, registry, sink, NodeProcess.kill, FAULTS)
    report(capsys, "kill -9", run)


def sigterm(node: NodeProcess) -> None:
    assert node.process is not None
    node.process.send_signal(signal.SIGTERM)


@pytest.mark.parametrize("mode", ["failover", "active-active", "full-active-active"])
def test_a_graceful_stop_of_the_notifier_hands_over_at_once(
    tmp_path: Path, mysql_url: str, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    with (
        isolated_database(mysql_url, "cep_ha") as registry,
        isolated_database(mysql_url, "cep_ha_sink") as sink,
    ):
        run = run_faults(tmp_path, registry, sink, sigterm, FAULTS, mode)
    # make ha-faults: p99 152 ms in failover; on a machine as loaded as a CI runner
    # full-active-active's hand-over (its held copies) has measured up to 323 ms
    report(capsys, f"{mode}, SIGTERM", run, target_ms=300)


@pytest.mark.parametrize("mode", ["active-active", "full-active-active"])
def test_kill_9_in_the_active_modes_loses_and_repeats_nothing(
    tmp_path: Path, mysql_url: str, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    with (
        isolated_database(mysql_url, "cep_ha") as registry,
        isolated_database(mysql_url, "cep_ha_sink") as sink,
    ):
        run = run_faults(tmp_path, registry, sink, NodeProcess.kill, FAULTS, mode)
    report(capsys, f"{mode}, kill -9", run)


@pytest.mark.parametrize("members", [3, 5])
def test_kill_9_with_three_or_five_members_loses_and_repeats_nothing(
    tmp_path: Path, mysql_url: str, capsys: pytest.CaptureFixture[str], members: int
) -> None:
    """Any standby may take over, and the one that does must hold everything the dead
    notifier acknowledged: the lease requires it (`ha.ports.LeaseStore`)."""
    with (
        isolated_database(mysql_url, "cep_ha") as registry,
        isolated_database(mysql_url, "cep_ha_sink") as sink,
    ):
        run = run_faults(tmp_path, registry, sink, NodeProcess.kill, FAULTS, members=members)
    report(capsys, f"{members} members, kill -9", run)


def test_kill_9_with_chained_plans_loses_and_repeats_nothing(
    tmp_path: Path, mysql_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second redundant plan imports the rooms plan's outputs and writes them to the sink:
    the rooms plan's notifier hands them on only once its standbys hold the record (its gate),
    each named by its origin, so the importing plan takes each once through every takeover."""
    with (
        isolated_database(mysql_url, "cep_ha") as registry,
        isolated_database(mysql_url, "cep_ha_sink") as sink,
    ):
        run = run_faults(tmp_path, registry, sink, NodeProcess.kill, FAULTS, chained=True)
    report(capsys, "chained plans, kill -9", run)


def test_kill_9_of_a_full_active_active_standby_loses_nothing(
    tmp_path: Path, mysql_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Clients send every bundle to both members; the standby, holding its own copies of what
    the notifier may not have sequenced yet, is killed at once, again and again. It never
    acknowledged a copy before the notifier reported its record settled, so nothing a client
    saw acknowledged is lost with it."""
    with (
        isolated_database(mysql_url, "cep_ha") as registry,
        isolated_database(mysql_url, "cep_ha_sink") as sink,
    ):
        run = run_faults(
            tmp_path, registry, sink, NodeProcess.kill, FAULTS, "full-active-active", standby=True
        )
    with capsys.disabled():
        print(
            f"\n[full-active-active, kill -9 of the standby x{FAULTS}] {run.where}: sink exact; gap in the "
            f"sink's rows {spread(run.gaps)}; bundles resent {run.resent}"
        )
