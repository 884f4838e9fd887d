"""A soak on hosts of their own (`tests.support.hosted`): three members run 50 small redundant
plans (`tests.support.many_plans`) for `CEPHEUS_HA_SOAK_SECONDS` (120 s unset; `make ha-soak`:
30 minutes) while 8 clients send, with every frame between any two hosts delayed 2 ms ± 1 ms
(so frames overtake each other). Nothing is injected: no lease may change hands, no lease may
come near running out, and the sink must hold every acknowledged event once."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.config import HA
from tests.support import many_plans
from tests.support.hosted import HostedCluster
from tests.support.wire import Shape

pytestmark = [pytest.mark.slow, pytest.mark.ha, pytest.mark.soak]

SECONDS = float(os.environ.get("CEPHEUS_HA_SOAK_SECONDS", "120"))
PLANS, CLIENTS = 50, 8


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[HostedCluster]:
    hosted = HostedCluster(tmp_path, members=3, plans=PLANS)
    try:
        yield hosted
    finally:
        hosted.close()


def test_three_members_with_50_plans_on_a_jittery_network_change_no_role(
    cluster: HostedCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster.start()
    hosts = list(cluster.net.hosts)
    cluster.net.shape(hosts, hosts, Shape(delay=0.002, jitter=0.001))
    assert cluster.registry_db is not None
    leases = many_plans.LeaseSampler(cluster.registry_db.url)
    feeders = many_plans.ManyFeeders(cluster.nodes, PLANS, CLIENTS)
    leases.first()
    epochs = {plan: set(e) for plan, e in leases.epochs.items()}
    start = time.monotonic()
    feeders.start()
    try:
        time.sleep(SECONDS)
    finally:
        acked = feeders.stop()
        leases.stop()
    least = leases.least(start, time.monotonic())
    changed = sorted(p for p, e in leases.epochs.items() if e != epochs.get(p))
    missing, repeated, unacked = many_plans.tally(cluster.sink, feeders.acked)
    with capsys.disabled():
        print(
            f"\n[soak: {SECONDS:.0f} s, 3 members, {PLANS} plans, {CLIENTS} clients, 2 ms ± 1 ms between all "
            f"hosts] {acked} events acknowledged ({acked / SECONDS:,.0f}/s), lost {len(missing)}, repeated {repeated}, "
            f"unacknowledged in the sink {unacked}; leases that changed hands {len(changed)}; least time left "
            f"of any lease {least} ms (lease {HA().lease_ms} ms); bundles resent {feeders.resent}; wire "
            f"{cluster.net.counts()}"
        )
    assert not changed, f"leases changed hands: {changed}"
    assert least > HA().margin_ms, f"a lease came within {least} ms of running out"
    assert missing == set() and repeated == 0 and unacked == 0, f"missing (plan, seq) {sorted(missing)[:20]}"
