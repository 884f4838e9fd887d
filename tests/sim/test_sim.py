"""The HA simulator: it sees each known loss and duplicate path on its schedule, a seed replays
exactly, and thousands of seeded schedules meet nothing but the known paths.

`CEPHEUS_SIM_SCHEDULES` sets how many schedules the broad run takes (default 20,000, on two
processes); `make sim-long` runs a million and prints the figures."""

from __future__ import annotations

import dataclasses
import os

import pytest

from tests.sim.known import FIXED, OPEN, Path
from tests.sim.run import report, run_many
from tests.sim.scenario import Config, Sim

SCHEDULES = int(os.environ.get("CEPHEUS_SIM_SCHEDULES", "20000"))


@pytest.mark.parametrize("path", OPEN, ids=lambda p: p.name)
def test_the_simulator_sees_each_open_path_on_its_schedule(path: Path) -> None:
    violations = Sim(path.seed, path.config).run()
    assert any(path.matches(v) for v in violations), violations


def test_every_fixed_path_passes_its_schedule() -> None:
    for path in FIXED:
        assert Sim(path.seed, path.config).run() == [], path.name


def test_the_resend_path_is_the_resend_memory_and_nothing_else() -> None:
    """The same schedule with a resend memory that outlasts the pause meets no violation."""
    path = next(p for p in OPEN if "resend" in p.name)
    assert Sim(path.seed, dataclasses.replace(path.config, resend_keep=100_000)).run() == []


def test_a_seed_replays_exactly() -> None:
    first, again = Sim(4242, trace=True), Sim(4242, trace=True)
    assert first.run() == again.run()
    assert first.world.lines == again.world.lines and len(first.world.lines) > 10


def test_a_schedule_without_faults_is_exact_in_every_mode() -> None:
    for mode in ("failover", "active-active"):
        for members in (2, 3):
            sim = Sim(7, Config(members=members, mode=mode, clients=2, bundles=20))
            assert sim.run() == [], (mode, members)
            assert len(sim.acked) == 40
            assert len(sim.tx_sink.rows) == sum(b.events for b in sim.bundles.values())


def test_many_schedules_meet_nothing_but_the_known_paths() -> None:
    import time

    started = time.monotonic()
    tally = run_many(0, SCHEDULES, workers=2)
    print("\n" + report(tally, time.monotonic() - started))
    assert tally.schedules == SCHEDULES
    assert tally.unknown == []
    assert all(tally.faults[kind] > SCHEDULES / 20 for kind in ("kill", "vanish", "pause", "partition"))
