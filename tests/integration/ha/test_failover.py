"""Two real `cepheus server` processes run the rooms plan redundantly (failover mode) on a
MariaDB registry, writing to a MariaDB sink; the notifier is killed with SIGKILL, again and
again, while readings arrive. The sink must end up exactly as one uninterrupted run's output:
no row missing, none twice. Each takeover is timed from the kill to the moment the surviving
node says it is the notifier, and the figures are printed.
"""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.thrift.errors import ConnectionClosed, RemoteApplicationError, TransportError
from tests.support.databases import isolated_database
from tests.support.nodes import NodeProcess, toml_config, wait_for
from tests.support.rooms import (
    BUNDLE,
    READINGS,
    Feeder,
    Reading,
    batch_count,
    provision,
    readings,
    sink_rows,
    uninterrupted,
)

pytestmark = [pytest.mark.mysql, pytest.mark.slow]

SECRET = "a-test-cluster-secret-of-some-length"
KILLS = 3


@pytest.fixture
def registry(mysql_url: str) -> Iterator[str]:
    with isolated_database(mysql_url, "cep_ha") as url:
        yield url


@pytest.fixture
def sink(mysql_url: str) -> Iterator[str]:
    with isolated_database(mysql_url, "cep_ha_sink") as url:
        yield url


class Pair:
    """Two cluster members that know each other's cluster port."""

    def __init__(self, tmp: Path, registry: str) -> None:
        self.nodes: list[NodeProcess] = []
        for name in ("a", "b"):
            (tmp / name).mkdir()
            self.nodes.append(NodeProcess(tmp / name, registry))
        wka = [f"127.0.0.1:{4000 + n.offset}" for n in self.nodes]
        for node in self.nodes:
            node.sections["cluster"] = {"host": "127.0.0.1", "wka": wka, "secret": SECRET}
            node.config_path.write_text(toml_config(node.sections), encoding="utf-8")

    def notifier(self) -> NodeProcess | None:
        for node in self.nodes:
            if node.process is None or node.process.poll() is not None:
                continue
            try:
                role = node.health()["cluster"]["plans"]["rooms"]["role"]
            except (OSError, KeyError, TypeError, ValueError):
                continue
            if role == "notifier":
                return node
        return None

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


class FailoverFeeder:
    """A client with `tcp://a|tcp://b`: sends to one node and, when a bundle fails, to the other."""

    def __init__(self, pair: Pair, base: int) -> None:
        self.pair = pair
        self.base = base
        self.current: Feeder | None = None
        self.index = 0
        self.resent = 0

    def send(self, batch: list[Reading]) -> None:
        for start in range(0, len(batch), BUNDLE):
            bundle = batch[start : start + BUNDLE]
            while True:
                try:
                    if self.current is None:
                        self.current = Feeder(self.pair.nodes[self.index], self.base)
                    self.current.send(bundle)
                    break
                except (TransportError, ConnectionClosed, RemoteApplicationError, OSError):
                    self._switch()
                    self.resent += 1

    def _switch(self) -> None:
        if self.current is not None:
            try:
                self.current.client.abandon()
            except Exception:  # noqa: S110 - the node is gone; nothing to close cleanly
                pass
        self.current = None
        self.index = 1 - self.index
        time.sleep(0.05)

    def close(self) -> None:
        if self.current is not None:
            self.current.close()


def test_kill_9_of_the_notifier_loses_and_repeats_nothing(
    tmp_path: Path, registry: str, sink: str, capsys: pytest.CaptureFixture[str]
) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    plan_input = readings(seed)
    base = int(time.time() * 1000) + 86_400_000
    pair = Pair(tmp_path, registry)
    document_dir = tmp_path / "doc"
    document_dir.mkdir()
    provision(pair.nodes[0], document_dir, sink, redundant=True)
    try:
        for node in pair.nodes:
            node.start()
        wait_for(pair.notifier, 20, "a notifier")
        feeder = FailoverFeeder(pair, base)
        cuts = sorted(rng.sample(range(4, READINGS // BUNDLE - 4), KILLS))
        takeovers: list[float] = []
        sent = 0
        for cut in cuts:
            feeder.send(plan_input[sent : cut * BUNDLE])
            sent = cut * BUNDLE
            victim = wait_for(pair.notifier, 10, "a notifier before a kill")
            survivor = pair.nodes[1 - pair.nodes.index(victim)]
            wait_for(lambda s=survivor: s.health()["cluster"]["plans"]["rooms"]["caught_up"], 20, "a standby")
            killed = time.monotonic()
            victim.kill()
            wait_for(lambda s=survivor: pair.notifier() is s, 10, f"takeover\n{survivor.log()[-3000:]}", 0.01)
            takeovers.append(time.monotonic() - killed)
            victim.start()  # it comes back as a standby and catches up
        feeder.send(plan_input[sent:])
        feeder.close()
        wait_for(lambda: batch_count(sink) >= READINGS, 30, "every reading in a time batch")
    finally:
        pair.stop()
    where = f"seed {seed}, kills after bundles {cuts}"
    expected = uninterrupted(plan_input, base)
    table = sink_rows(sink)
    got = [r for r in table if r[0] != "batch"]
    missing = Counter(expected) - Counter(got)
    repeated = Counter(got) - Counter(expected)
    assert not missing and not repeated, f"{where}: missing {missing}, repeated {repeated}"
    batches = [r for r in table if r[0] == "batch"]
    assert sum(r[3] for r in batches) == READINGS, f"{where}: time batches counted {batches}"
    with capsys.disabled():
        ms = sorted(t * 1000 for t in takeovers)
        print(
            f"\n[failover, kill -9 x{len(ms)}] {where}: takeover (kill → notifier) p50 "
            f"{statistics.median(ms):.0f} ms, max {ms[-1]:.0f} ms; bundles resent {feeder.resent}"
        )
