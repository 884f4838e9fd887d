"""A member's graceful stop gives its adapters a bounded time before it hands its plans over:
a slow or unreachable sink must not hold the standbys back (the next notifier delivers what
was not written)."""

from __future__ import annotations

import socket

import pytest

from app.cluster import Cluster, ClusterSettings
from app.cluster.member import HANDOVER_FLUSH_SECONDS
from app.cluster.tls import ClusterKeys
from app.registry import Registry
from app.registry.leases import RegistryLeases
from ha.lease import Timing
from ha.membership import Timeouts


def test_a_stop_waits_for_the_adapters_a_bounded_time_then_leaves() -> None:
    asked: list[float] = []

    def stuck_sink(plan: str | None, timeout: float) -> bool:  # a sink that never answers in time
        asked.append(timeout)
        return False

    registry = Registry("sqlite://")
    registry.migrate()
    settings = ClusterSettings(
        me="node-a",
        advertise="127.0.0.1:0",
        host="127.0.0.1",
        port=0,
        wka=(),
        keys=ClusterKeys(b"a-test-cluster-secret-of-some-length"),
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
        fenced=lambda plan: 0,
    )
    cluster.start()
    try:
        cluster.stop()  # returns although the sink never confirmed its writes
    finally:
        registry.close()
    assert asked == [HANDOVER_FLUSH_SECONDS]  # asked once, for a bounded time
    assert HANDOVER_FLUSH_SECONDS <= 0.1  # the hand-over's budget (docs/high-availability.md)
    with pytest.raises(ConnectionRefusedError):  # it left: its cluster port is closed
        socket.create_connection(("127.0.0.1", cluster.server.port), timeout=2)
