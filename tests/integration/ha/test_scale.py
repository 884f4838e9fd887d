"""HA at scale, on hosts of their own (`tests.support.hosted`): many small redundant plans
(`tests.support.many_plans`; `CEPHEUS_SCALE_PLANS`, 50 by default) on three members, several
clients (`CEPHEUS_SCALE_CLIENTS`, 8), the registry 5 ms away each way (so a request and its
answer take 10 ms more than on the same machine).

- Leases: every member renews the leases it holds in one request per round
  (`LeaseStore.renew`); sampled from the registry every 100 ms, no lease's time left may fall
  near the point where its holder would step down (`lease_ms - margin_ms`), with a third of
  the plans on each member, and with half on each once one is killed.
- Re-homing: a member is killed (SIGKILL); every plan it notified for gets a new notifier,
  each timed from the kill to the first report of a survivor that notifies it.
- The sink holds every acknowledged (plan, seq) exactly once, nothing else.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config import HA
from tests.support import many_plans
from tests.support.faults import spread
from tests.support.hosted import HostedCluster
from tests.support.nodes import NodeProcess
from tests.support.wire import Shape

pytestmark = [pytest.mark.slow, pytest.mark.ha]

PLANS = int(os.environ.get("CEPHEUS_SCALE_PLANS", "50"))
CLIENTS = int(os.environ.get("CEPHEUS_SCALE_CLIENTS", "8"))
REGISTRY_DELAY = 0.005  # each way
LEASE_MS, MARGIN_MS = HA().lease_ms, HA().margin_ms


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[HostedCluster]:
    hosted = HostedCluster(tmp_path, members=3, plans=PLANS)
    try:
        yield hosted
    finally:
        hosted.close()


def held_by(cluster: HostedCluster, node: NodeProcess) -> list[str]:
    i = cluster.nodes.index(node)
    return [plan for plan, roles in cluster.roles().items() if roles[i] == "notifier"]


def steady(cluster: HostedCluster, leases: many_plans.LeaseSampler, seconds: float) -> tuple[int, int]:
    """(the least time left of any lease, lease changes) over `seconds` of steady running."""
    leases.first()
    before = {plan: set(epochs) for plan, epochs in leases.epochs.items()}
    start = time.monotonic()
    time.sleep(seconds)
    changes = sum(len(leases.epochs[p] - before.get(p, set())) for p in leases.epochs)
    return leases.least(start, time.monotonic()), changes


def test_many_plans_on_3_members_keep_their_leases_and_are_rehomed_after_a_kill(
    cluster: HostedCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.start()
    members = list(cluster.names)
    cluster.net.shape(members, ["registry"], Shape(delay=REGISTRY_DELAY))
    cluster.net.shape(["registry"], members, Shape(delay=REGISTRY_DELAY))
    feeders = many_plans.ManyFeeders(cluster.nodes, PLANS, CLIENTS)
    feeders.start()
    assert cluster.registry_db is not None
    leases = many_plans.LeaseSampler(cluster.registry_db.url)
    try:
        shares = [len(held_by(cluster, n)) for n in cluster.nodes]
        least_thirds, changes_thirds = steady(cluster, leases, 6)

        victim = max(cluster.nodes, key=lambda n: len(held_by(cluster, n)))
        orphans = set(held_by(cluster, victim))
        survivors = [i for i, n in enumerate(cluster.nodes) if n is not victim]
        killed = time.monotonic()
        victim.kill()
        rehomed: dict[str, float] = {}
        deadline = killed + 30
        while len(rehomed) < len(orphans) and time.monotonic() < deadline:
            for plan, roles in cluster.roles().items():
                if plan in orphans and plan not in rehomed and any(roles[i] == "notifier" for i in survivors):
                    rehomed[plan] = time.monotonic() - killed
            time.sleep(0.02)

        settled = time.monotonic()
        cluster.every_plan_settled(60, among=[cluster.nodes[i] for i in survivors])
        placed = time.monotonic() - settled  # placement moves some plans to their preferred survivor
        least_after, changes_after = steady(cluster, leases, 4)
    finally:
        acked = feeders.stop()
        leases.stop()
    missing, repeated, unacked = many_plans.tally(cluster.sink, feeders.acked)
    with capsys.disabled():
        print(
            f"\n[scale: {PLANS} plans, 3 members, {CLIENTS} clients, registry {REGISTRY_DELAY * 1000:.0f} ms away "
            f"each way] leases per member {shares}: least time left of any lease {least_thirds} ms "
            f"(lease {LEASE_MS} ms, a holder stops at {MARGIN_MS} ms left), lease changes {changes_thirds}; "
            f"kill -9 of a member notifying {len(orphans)} plans: re-homed {len(rehomed)}, {spread(list(rehomed.values()))}; "
            f"placed {placed:.1f} s later; then on two members: least time left {least_after} ms, lease changes {changes_after}; "
            f"{acked} events acknowledged, lost {len(missing)}, repeated {repeated}, in the sink unacknowledged "
            f"{unacked}; bundles resent {feeders.resent}; seed {cluster.seed}"
        )
    assert len(rehomed) == len(orphans), f"plans never re-homed: {sorted(orphans - set(rehomed))}"
    for least in (least_thirds, least_after):
        assert least > MARGIN_MS, f"a lease came within {least} ms of running out: renewals fell behind"
    assert changes_thirds == 0 and changes_after == 0
    assert missing == set() and repeated == 0 and unacked == 0
