"""A member's new process gives up the leases its name held before it asks for any: they were
granted to its previous process, whose log it may not have in full."""

from __future__ import annotations

import time
from pathlib import Path

from app.cluster import Cluster, ClusterSettings
from app.cluster.tls import ClusterKeys
from app.registry import Registry
from app.registry.leases import RegistryLeases
from ha.lease import Timing
from ha.membership import Timeouts
from ha.ports import LogPosition


def test_a_restarted_member_gives_up_its_predecessors_leases_before_it_asks(tmp_path: Path) -> None:
    registry = Registry(f"sqlite:///{tmp_path / 'registry.db'}")
    registry.migrate()
    leases = RegistryLeases(registry)
    leases.acquire("p", "node-a", 60_000)  # the previous process of node-a, with a minute left
    leases.acquire("p", "node-a", 60_000, require=LogPosition(1, 9))
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
    cluster = Cluster(settings, leases, None, lambda *_: None, lambda *_: None, lambda *_: True, lambda _: 0)
    cluster.start()
    try:
        deadline = time.monotonic() + 5
        while (lease := leases.current("p")) is not None and lease.ttl_ms > 0:
            assert time.monotonic() < deadline, "the predecessor's lease was never given up"
            time.sleep(0.02)
    finally:
        cluster.stop()
        registry.close()
    assert lease is not None and lease.holder == "node-a" and lease.required == LogPosition(1, 9)
    # expired now: whoever asks next, this process included, must hold what it requires
    assert leases.acquire("p", "node-a", 60_000, held=LogPosition(1, 3)).ttl_ms == 0
