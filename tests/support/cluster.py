"""Redundant-plan clusters of real `cepheus server` processes for the HA tests: a `Pair` of
members that know each other, the plan's status on each, and a fail-over client in a thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import sqlalchemy as sa

from adapters.thrift.errors import ConnectionClosed, RemoteApplicationError, TransportError
from tests.support.hosts import Host
from tests.support.nodes import NodeProcess, toml_config
from tests.support.rooms import BUNDLE, Feeder, Reading

SECRET = "a-test-cluster-secret-of-some-length"
PAUSE = 0.008  # between bundles: about 1,000 readings/s in bundles of 8


class Pair:
    """Two (or `members`) cluster members that know each other's cluster port. `registries`: each
    member's own registry URL (the same database through different proxies), instead of `registry`."""

    def __init__(
        self,
        tmp: Path,
        registry: str,
        registries: Sequence[str] = (),
        members: int = 2,
        hosts: Sequence[Host] = (),
        tls: Sequence[Mapping[str, str]] = (),
    ) -> None:
        """`hosts`: one of its own for each member (`tests.support.hosts`; default: all on 127.0.0.1);
        `tls`: each member's `[cluster]` cert_file, key_file and ca_file (`tests.support.certs`)."""
        self.tls = list(tls)
        self.nodes: list[NodeProcess] = []
        names = "abcdefgh"[:members]
        for i, (name, url) in enumerate(zip(names, registries or [registry] * members, strict=True)):
            (tmp / name).mkdir()
            if hosts:
                self.nodes.append(NodeProcess(tmp / name, url, hosts[i].address, hosts[i].prefix))
            else:
                self.nodes.append(NodeProcess(tmp / name, url))
        self.advertise([f"{node.host}:{node.cluster_port}" for node in self.nodes])

    def advertise(self, addresses: Sequence[str]) -> None:
        """Where the members reach each other's cluster port, one address each (a proxy in
        front of it, say): each advertises its own and lists them all as well-known addresses."""
        for i, (node, address) in enumerate(zip(self.nodes, addresses, strict=True)):
            node.sections["cluster"] = {
                "host": node.host,
                "wka": list(addresses),
                "advertise": address,
                "secret": SECRET,
                **(self.tls[i] if self.tls else {}),
            }
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

    def settled(self, plan: str = "rooms") -> tuple[NodeProcess, NodeProcess] | None:
        """(notifier, standby) once the notifier of `plan` counts every other member in sync (each
        holds every record and output a takeover needs), read from the notifier in one report;
        None until then. Read again every time: a hand-back may move the role meanwhile."""
        for node in self.nodes:
            if node.process is None or node.process.poll() is not None:
                continue
            status = status_of(node, plan)
            if status.get("role") != "notifier":
                continue
            others = [n for n in self.nodes if n is not node]
            in_sync = status.get("standbys_in_sync")
            if isinstance(in_sync, list) and all(o.sections["node"]["id"] in in_sync for o in others):
                return node, others[0]
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
    other) or "full-active-active" (`{tcp://a},{tcp://b}`: every bundle to every node that is up,
    to all at once; sent once one node acknowledged it). `first`: the node the client starts with; `acked` has
    when each bundle was acknowledged (monotonic seconds)."""

    def __init__(
        self, pair: Pair, plan_input: list[Reading], base: int, mode: str = "failover", first: int = 0
    ) -> None:
        self.pair = pair
        self.plan_input = plan_input
        self.base = base
        self.mode = mode
        self.sent = 0
        self.resent = 0
        self.acked: list[float] = []
        self._index = first
        self._clients: list[Feeder | None] = [None] * len(pair.nodes)
        self._down_until = [0.0] * len(pair.nodes)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._pool = ThreadPoolExecutor(len(pair.nodes))
        self.error: BaseException | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(60)
        self._pool.shutdown()
        if self.error is not None:
            raise self.error
        return self.sent

    def _run(self) -> None:
        try:
            while not self._stop.is_set() and self.sent + BUNDLE <= len(self.plan_input):
                bundle = self.plan_input[self.sent : self.sent + BUNDLE]
                now = time.monotonic()
                if self.mode == "active-active" and self._down_until[self._index] > now:
                    self._index = self._next()  # as WSO2's load balancer: leave a failed one alone a while
                targets = (
                    list(range(len(self._clients))) if self.mode == "full-active-active" else [self._index]
                )
                if len(targets) > 1:  # to every member at once, as WSO2's clients (a queue per group)
                    acked = sum(self._pool.map(lambda i, b=bundle: self._send(i, b), targets))
                else:
                    acked = sum(self._send(i, bundle) for i in targets)
                if acked:
                    self.sent += BUNDLE
                    self.acked.append(time.monotonic())
                    if self.mode == "active-active":
                        self._index = self._next()
                    time.sleep(PAUSE)
                else:
                    self.resent += 1
                    self._index = self._next()
                    time.sleep(0.02)
            for client in self._clients:
                if client is not None:
                    client.close()
        except BaseException as exc:
            self.error = exc

    def _next(self) -> int:
        return (self._index + 1) % len(self._clients)

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


class SinkWatcher:
    """Polls the sink table's row count every 10 ms in a thread, to tell how long the output
    stopped around a fault: from the last new row before it to the first one after it."""

    def __init__(self, url: str, table: str = "outs") -> None:
        self._engine = sa.create_engine(url)
        self._table = table
        self._changes: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._engine.dispose()

    def gap_around(self, moment: float) -> float | None:
        """Seconds without a new row around `moment` (None: no row after it yet)."""
        before = [t for t in self._changes if t <= moment]
        after = [t for t in self._changes if t > moment]
        if not before or not after:
            return None
        return after[0] - before[-1]

    def _run(self) -> None:
        last = -1
        query = sa.text(f"SELECT count(*) FROM {self._table}")  # noqa: S608 - a test's own table name
        with self._engine.connect() as conn:
            while not self._stop.wait(0.01):
                try:
                    count = int(conn.execute(query).scalar() or 0)
                    conn.commit()
                except sa.exc.DBAPIError:
                    conn.rollback()
                    continue
                if count != last:
                    self._changes.append(time.monotonic())
                    last = count
