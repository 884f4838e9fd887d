"""Two real `cepheus server` processes whose cluster channel runs over mutual TLS (certificates of
a cluster CA made here) run the rooms plan redundantly (failover mode; MariaDB registry and
sink) while readings flow: the standby gets in sync over TLS, a plain connection to a member's
cluster port is refused and counted in `/health/details` (`cluster.refused_tls`), and after a
kill -9 of the notifier the standby takes over with the sink exact."""

from __future__ import annotations

import random
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.cluster.errors import PeerError
from app.cluster.peers import connect, encode
from ha.messages import Record
from tests.support.certs import ClusterCA
from tests.support.cluster import SECRET, ClusterFeeder, Pair
from tests.support.databases import isolated_database
from tests.support.nodes import NodeProcess, wait_for
from tests.support.rooms import assert_exact, provision, readings, sink_rows

pytestmark = [pytest.mark.mysql, pytest.mark.slow, pytest.mark.ha]


@pytest.fixture
def dbs(mysql_url: str) -> Iterator[tuple[str, str]]:
    with (
        isolated_database(mysql_url, "cep_ha") as registry,
        isolated_database(mysql_url, "cep_ha_sink") as sink,
    ):
        yield registry, sink


def refused_tls(node: NodeProcess) -> int:
    return int(node.health()["cluster"]["refused_tls"])


def test_members_over_mutual_tls_keep_in_sync_and_refuse_a_plain_connection(
    tmp_path: Path, dbs: tuple[str, str]
) -> None:
    registry, sink = dbs
    seed = random.randrange(1 << 30)
    plan_input = readings(seed, 200_000)
    base = int(time.time() * 1000) + 86_400_000
    ca = ClusterCA(tmp_path / "certs")
    pair = Pair(tmp_path, registry, tls=[ca.member("a").section(), ca.member("b").section()])
    document_dir = tmp_path / "doc"
    document_dir.mkdir()
    provision(pair.nodes[0], document_dir, sink, redundant="failover")
    try:
        for node in pair.nodes:
            node.start()
        feeder = ClusterFeeder(pair, plan_input, base)
        feeder.start()
        notifier, standby = wait_for(pair.settled, 30, "the standby in sync with the notifier over TLS")
        assert [refused_tls(node) for node in pair.nodes] == [0, 0]  # members never refuse each other

        with pytest.raises(PeerError):  # the secret alone, in clear, as before TLS
            connect(
                f"{standby.host}:{standby.cluster_port}", "x", "relay", SECRET.encode(), handshake_seconds=2
            )
        wait_for(lambda: refused_tls(standby) == 1, 10, "the plain connection counted")
        header, body = encode(Record(10**9, b"forged"))  # a record in clear, straight onto the port
        with socket.create_connection((standby.host, standby.cluster_port), timeout=5) as raw:
            raw.sendall(struct.pack(">II", 4 + len(header) + len(body), len(header)) + header + body)
            try:
                raw.recv(100)
            except OSError:
                pass
        wait_for(lambda: refused_tls(standby) == 2, 10, "the plain record refused")
        lines = [line for line in standby.log().splitlines() if "logged at most once a minute" in line]
        assert len(lines) == 1, lines  # two refusals, one line
        assert refused_tls(notifier) == 0

        time.sleep(1.0)
        assert wait_for(pair.settled, 10, "the standby still in sync") == (notifier, standby)
        notifier.kill()
        wait_for(lambda: pair.notifier() is standby, 15, "the standby to take over")
        time.sleep(1.0)
        sent = feeder.stop()
        deadline = time.monotonic() + 30
        while sum(r[3] for r in sink_rows(sink) if r[0] == "batch") < sent and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        pair.stop()
    assert_exact(sink, plan_input[:sent], base, f"seed {seed}, {sent} readings, over TLS")
