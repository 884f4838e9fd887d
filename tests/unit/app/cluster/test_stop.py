"""A member's graceful stop gives its adapters a bounded time before it hands its plans over:
a slow or unreachable sink must not hold the standbys back (the next notifier delivers what
was not written)."""

from __future__ import annotations

import time

from app.cluster.member import HANDOVER_FLUSH_SECONDS, Cluster, ClusterSettings
from app.registry import Registry
from app.registry.leases import RegistryLeases
from ha.lease import Timing
from ha.membership import Timeouts


def test_a_stop_waits_for_the_adapters_a_bounded_time_then_leaves() -> None:
    asked: list[float] = []

    def stuck_sink(timeout: float) -> bool:  # as `OutputHub.flush` with a sink that never answers
        asked.append(timeout)
        time.sleep(timeout)
        return False

    registry = Registry("sqlite://")
    registry.migrate()
    settings = ClusterSettings(
        me="node-a",
        advertise="127.0.0.1:0",
        host="127.0.0.1",
        port=0,
        wka=(),
        secret=b"a-test-cluster-secret-of-some-length",
        timeouts=Timeouts(),
        timing=Timing(),
    )
    cluster = Cluster(
        settings,
        RegistryLeases(registry),
        None,
        emit=lambda *_: None,
        install=lambda *_: None,
        flush=stuck_sink,
        fenced=lambda: 0,
    )
    cluster.start()
    try:
        started = time.monotonic()
        cluster.stop()
        took = time.monotonic() - started
    finally:
        registry.close()
    assert asked == [HANDOVER_FLUSH_SECONDS]
    assert HANDOVER_FLUSH_SECONDS <= 0.1
    assert took < 1.0, f"the stop took {took:.2f} s"
