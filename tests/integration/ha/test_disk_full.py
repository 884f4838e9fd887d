"""A member's disk full: two `cepheus server` members run the rooms plan redundantly (failover
mode) on a MariaDB registry and sink, each with its data directory on a tmpfs of a few MB of
the test's own; one member's is filled while a fail-over client sends readings
(`tcp://a|tcp://b`), then emptied again.

- The notifier's disk: it cannot log the bundles, so it takes none: it refuses its clients'
  bundles and those the standby relays to it (retryable), and nothing is acknowledged while
  its disk is full. It keeps its lease: the standby takes records only from the notifier, so
  it has nothing newer to take over with, and a new notifier could not take the bundles the
  old one refused faster than the old one takes them once its disk has room (see
  docs/persistence.md). Once the filler is deleted the notifier takes bundles again, with no
  restart and no takeover.
- The standby's disk: it cannot append the notifier's records, so its subscription ends and
  the notifier goes on without it (as with a standby that is down); it subscribes again once a
  second, and once its disk has room it catches up and is in sync again.

Either way the sink ends holding exactly what one uninterrupted run emits: 0 lost, 0 repeated.
The disk is filled `CEPHEUS_DISK_FAULTS` times in a row (1; `make ha-faults`: 20).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cluster import ClusterFeeder, Pair, plan_status, status_of
from tests.support.databases import isolated_database
from tests.support.disks import fill, free, small_disk
from tests.support.nodes import NodeProcess, wait_for
from tests.support.rooms import assert_exact, batch_count, provision, readings

pytestmark = [pytest.mark.slow, pytest.mark.ha, pytest.mark.mysql]

FULL_SECONDS = 5.0  # past the lease (2 s): a takeover, if there were one, would show
DISK_FAULTS = int(os.environ.get("CEPHEUS_DISK_FAULTS", "1"))  # fills of the disk, one after another


@pytest.fixture
def databases(mysql_url: str) -> Iterator[tuple[str, str]]:
    with (
        isolated_database(mysql_url, "cep_ha_disk") as registry,
        isolated_database(mysql_url, "cep_ha_disk_sink") as sink,
    ):
        yield registry, sink


def settled(pair: Pair) -> tuple[NodeProcess, NodeProcess]:
    """(notifier, standby) once the notifier counts the standby in sync, is the member placement
    prefers (no hand-back is to come) and stays so for 0.3 s."""

    def placed() -> tuple[NodeProcess, NodeProcess] | None:
        found = pair.settled()
        if found is None:
            return None
        preferred = status_of(found[0], "rooms").get("preferred")
        return found if preferred == found[0].sections["node"]["id"] else None

    def stable() -> tuple[NodeProcess, NodeProcess] | None:
        first = placed()
        if first is None:
            return None
        time.sleep(0.3)
        return first if placed() == first else None

    found: tuple[NodeProcess, NodeProcess] = wait_for(
        stable,
        60,
        "a notifier with the standby in sync",
        message=lambda: [plan_status(n) for n in pair.nodes],
    )
    return found


def disk_fault(node: NodeProcess) -> dict[str, object] | None:
    found: dict[str, object] | None = node.health()["input_log_faults"].get("rooms")
    return found


@pytest.mark.parametrize("full", ["notifier", "standby"])
def test_a_members_disk_full_loses_and_repeats_nothing(
    tmp_path: Path, databases: tuple[str, str], full: str
) -> None:
    registry, sink = databases
    seed = random.randrange(1 << 30)
    plan_input = readings(seed, 200_000)
    base = int(time.time() * 1000) + 86_400_000
    pair = Pair(tmp_path, registry)
    (tmp_path / "doc").mkdir()
    provision(pair.nodes[0], tmp_path / "doc", sink, redundant="failover")
    a, b = (Path(node.sections["node"]["data_dir"]) for node in pair.nodes)
    feeder: ClusterFeeder | None = None
    with small_disk(a), small_disk(b):
        try:
            for node in pair.nodes:
                node.start()
            notifier, standby = settled(pair)
            feeder = ClusterFeeder(pair, plan_input, base, "failover", pair.nodes.index(notifier))
            feeder.start()
            wait_for(lambda: feeder.sent >= 800, 30, "readings acknowledged")
            victim = notifier if full == "notifier" else standby
            for _ in range(DISK_FAULTS):
                disk = Path(victim.sections["node"]["data_dir"])
                fill(disk)
                fault = wait_for(
                    lambda: disk_fault(victim), 30, f"the {full}'s disk fault in /health/details"
                )
                assert "No space left on device" in str(fault["error"]), fault
                if full == "notifier":
                    resent = feeder.resent
                    wait_for(
                        lambda r=resent: feeder.resent >= r + 3, 30, "the client refused by both members"
                    )
                    stalled = feeder.sent
                    time.sleep(FULL_SECONDS)
                    assert feeder.sent == stalled, (
                        f"{feeder.sent - stalled} readings acknowledged on a full disk"
                    )
                else:  # the notifier goes on without it
                    going = feeder.sent
                    time.sleep(FULL_SECONDS)
                    assert feeder.sent >= going + 800, f"{feeder.sent - going} readings acknowledged"
                    in_sync = status_of(notifier, "rooms").get("standbys_in_sync")
                    assert isinstance(in_sync, list) and standby.sections["node"]["id"] not in in_sync, (
                        in_sync
                    )
                assert pair.notifier() is notifier, [plan_status(n) for n in pair.nodes]
                for node in pair.nodes:
                    assert node.process is not None and node.process.poll() is None, node.log()[-3000:]
                stalled = feeder.sent
                free(disk)
                wait_for(lambda s=stalled: feeder.sent >= s + 800, 30, "acknowledgements once there is room")
                assert settled(pair) == (notifier, standby)  # in sync again, and no takeover
                wait_for(lambda: disk_fault(victim) is None, 10, "the fault to be over")
            time.sleep(0.5)
            sent = feeder.stop()
            time.sleep(0.5)  # the last time batch closes 300 ms after it opened
            wait_for(lambda: batch_count(sink) >= sent, 30, "every reading in a time batch")
            states = [plan_status(n) for n in pair.nodes]
        finally:
            if feeder is not None and feeder.error is None:
                feeder.stop()
            pair.stop()
    assert_exact(sink, plan_input[:sent], base, f"seed {seed}, {sent} readings (at the end: {states})")
    for node in pair.nodes:
        assert "Traceback" not in node.log(), node.log()[-5000:]
    # said once, and once per 10 s while it lasts: not per bundle, nor per record
    assert victim.log().count("No space left on device") <= 8 * DISK_FAULTS, victim.log()[-5000:]
