"""Redundant-plan clusters of real `cepheus server` processes for the HA tests: a `Pair` of
members that know each other, the plan's status on each, and a fail-over client in a thread."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from adapters.thrift.errors import ConnectionClosed, RemoteApplicationError, TransportError
from tests.support.nodes import NodeProcess, toml_config
from tests.support.rooms import BUNDLE, Feeder, Reading

SECRET = "a-test-cluster-secret-of-some-length"
PAUSE = 0.008  # between bundles of 8: about 1,000 events/s


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
            if plan_status(node).get("role") == "notifier":
                return node
        return None

    def notifier_of(self, plan: str) -> NodeProcess | None:
        """The running member that reports itself the notifier of `plan`."""
        for node in self.nodes:
            if node.process is None or node.process.poll() is not None:
                continue
            if status_of(node, plan).get("role") == "notifier":
                return node
        return None

    def share_certificate(self, cert: Path, key: Path) -> None:
        """Both members serve this TLS certificate, so one CA file lets a client trust either."""
        for node in self.nodes:
            node.sections["thrift"].update(cert_file=str(cert), key_file=str(key))
            node.config_path.write_text(toml_config(node.sections), encoding="utf-8")

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def plan_status(node: NodeProcess) -> dict[str, object]:
    try:
        return dict(node.health()["cluster"]["plans"]["rooms"])
    except (OSError, KeyError, TypeError, ValueError):
        return {}


def status_of(node: NodeProcess, plan: str) -> dict[str, object]:
    """`plan`'s cluster status on `node` (`role`, `caught_up`, ...); {} when it has none (yet)."""
    try:
        return dict(node.health()["cluster"]["plans"][plan])
    except (OSError, KeyError, TypeError, ValueError):
        return {}


class ClusterFeeder:
    """A client in a thread sending bundles of 8 every `PAUSE` s until `stop()`, as WSO2's clients
    do in each mode: "failover" (`tcp://a|tcp://b`: to one node; a bundle that fails goes to the
    other), "active-active" (`tcp://a,tcp://b`: round robin; a bundle that fails goes to the
    other) or "full-active-active" (`{tcp://a},{tcp://b}`: every bundle to every node that is up;
    sent once one node acknowledged it)."""

    def __init__(self, pair: Pair, plan_input: list[Reading], base: int, mode: str = "failover") -> None:
        self.pair = pair
        self.plan_input = plan_input
        self.base = base
        self.mode = mode
        self.sent = 0
        self.resent = 0
        self._index = 0
        self._clients: list[Feeder | None] = [None, None]
        self._down_until = [0.0, 0.0]
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
        try:
            while not self._stop.is_set() and self.sent + BUNDLE <= len(self.plan_input):
                bundle = self.plan_input[self.sent : self.sent + BUNDLE]
                now = time.monotonic()
                if self.mode == "active-active" and self._down_until[self._index] > now:
                    self._index = 1 - self._index  # as WSO2's load balancer: leave a failed one alone a while
                targets = [0, 1] if self.mode == "full-active-active" else [self._index]
                acked = sum(self._send(i, bundle) for i in targets)
                if acked:
                    self.sent += BUNDLE
                    if self.mode == "active-active":
                        self._index = 1 - self._index
                    time.sleep(PAUSE)
                else:
                    self.resent += 1
                    self._index = 1 - self._index
                    time.sleep(0.02)
            for client in self._clients:
                if client is not None:
                    client.close()
        except BaseException as exc:
            self.error = exc

    def _send(self, i: int, bundle: list[Reading]) -> bool:
        try:
            client = self._clients[i]
            if client is None:
                client = self._clients[i] = Feeder(self.pair.nodes[i], self.base)
            client.send(bundle, pause=0)
            return True
        except (TransportError, ConnectionClosed, RemoteApplicationError, OSError):
            client = self._clients[i]
            if client is not None:
                client.client.abandon()
            self._clients[i] = None
            self._down_until[i] = time.monotonic() + 1.0
            return False
