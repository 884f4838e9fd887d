"""Redundant-plan clusters of real `cepheus server` processes for the HA tests: a `Pair` of
members that know each other, the plan's status on each, and a fail-over client in a thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

from adapters.thrift.errors import ConnectionClosed, RemoteApplicationError, TransportError
from tests.support.nodes import NodeProcess, toml_config
from tests.support.rooms import BUNDLE, Feeder, Reading

SECRET = "a-test-cluster-secret-of-some-length"
PAUSE = 0.008  # between bundles of 8: about 1,000 events/s


class Pair:
    """Two cluster members that know each other's cluster port. `registries`: each member's own
    registry URL (the same database through different proxies), instead of `registry`."""

    def __init__(self, tmp: Path, registry: str, registries: Sequence[str] = ()) -> None:
        self.nodes: list[NodeProcess] = []
        for name, url in zip(("a", "b"), registries or (registry, registry), strict=True):
            (tmp / name).mkdir()
            self.nodes.append(NodeProcess(tmp / name, url))
        self.advertise([f"127.0.0.1:{node.cluster_port}" for node in self.nodes])

    def advertise(self, addresses: Sequence[str]) -> None:
        """Where the members reach each other's cluster port, one address each (a proxy in
        front of it, say): each advertises its own and lists them all as well-known addresses."""
        for node, address in zip(self.nodes, addresses, strict=True):
            node.sections["cluster"] = {
                "host": "127.0.0.1",
                "wka": list(addresses),
                "advertise": address,
                "secret": SECRET,
            }
            node.config_path.write_text(toml_config(node.sections), encoding="utf-8")

    def notifier(self) -> NodeProcess | None:
        for node in self.nodes:
            if node.process is None or node.process.poll() is not None:
                continue
            if plan_status(node).get("role") == "notifier":
                return node
        return None

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def plan_status(node: NodeProcess) -> dict[str, object]:
    try:
        return dict(node.health()["cluster"]["plans"]["rooms"])
    except (OSError, KeyError, TypeError, ValueError):
        return {}


class FailoverFeeder:
    """A client of `tcp://a|tcp://b` in a thread: bundles of 8 every `PAUSE` s to one node (the
    `first` of the pair's at the start) and, when a bundle fails, the same bundle to the other,
    until `stop()`. `acked` has when each bundle was acknowledged (monotonic seconds)."""

    def __init__(self, pair: Pair, plan_input: list[Reading], base: int, first: int = 0) -> None:
        self.pair = pair
        self.plan_input = plan_input
        self.base = base
        self.sent = 0
        self.resent = 0
        self.acked: list[float] = []
        self._index = first
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(60)
        if self.error is not None:
            raise self.error
        return self.sent

    def _run(self) -> None:
        current: Feeder | None = None
        try:
            while not self._stop.is_set() and self.sent + BUNDLE <= len(self.plan_input):
                bundle = self.plan_input[self.sent : self.sent + BUNDLE]
                try:
                    if current is None:
                        current = Feeder(self.pair.nodes[self._index], self.base)
                    current.send(bundle, pause=PAUSE)
                    self.sent += BUNDLE
                    self.acked.append(time.monotonic())
                except (TransportError, ConnectionClosed, RemoteApplicationError, OSError):
                    if current is not None:
                        current.client.abandon()
                    current = None
                    self._index = 1 - self._index
                    self.resent += 1
                    time.sleep(0.02)
            if current is not None:
                current.close()
        except BaseException as exc:
            self.error = exc
