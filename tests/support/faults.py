"""The network fault tests' cluster: a `Pair` running the rooms plan redundantly with every
connection that a fault may hit going through a loopback `Proxy`, and a `Watch` that samples
both members and the sink while the faults come and go.

`Rig`: each member reaches the registry through a proxy of its own (so one can be cut off
alone), both reach the sink database through one proxy, and each member's cluster port is
behind a proxy that is its `advertise` address (the `wka` list names those proxies), so
blackholing both cluster proxies partitions the members from each other and nothing else.
The test's own checks read the registry and the sink directly.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from tests.support.cluster import ClusterFeeder, Pair, plan_status
from tests.support.nodes import NodeProcess, wait_for
from tests.support.proxy import Proxy, proxied, target_of
from tests.support.rooms import (
    Downstream,
    Reading,
    assert_exact,
    batch_count,
    provision,
    readings,
    sink_rows,
    uninterrupted,
)

EVERY = 0.02  # seconds between two samples of one series


class Rig:
    def __init__(
        self,
        tmp: Path,
        registry: str,
        sink: str,
        mode: str = "failover",
        buffer_events: int = 0,
        batch_events: int = 7,
        downstream_registry: str | None = None,
        chained: bool = False,
    ) -> None:
        """`buffer_events`, `batch_events`: the sink adapter's (`rooms.provision`); `downstream_registry`:
        the members forward their outputs over Thrift to a `Downstream` node of that registry,
        which writes them to `sink`; `chained`: a second redundant plan, `landing`, takes the
        rooms plan's outputs and writes them to `sink`."""
        self.mode = mode  # the plan's ha_mode, and how the client sends
        self.registry = registry
        self.sink = sink
        self.seed = random.randrange(1 << 30)
        self.plan_input: list[Reading] = readings(self.seed, 200_000)
        self.base = int(time.time() * 1000) + 86_400_000
        self.registry_proxies = [Proxy(target_of(registry), f"registry-{n}") for n in "ab"]
        self.sink_proxy = Proxy(target_of(sink), "sink")
        self.pair = Pair(tmp, registry, [proxied(registry, p) for p in self.registry_proxies])
        self.cluster_proxies = [
            Proxy(f"127.0.0.1:{node.cluster_port}", f"cluster-{node.tmp.name}") for node in self.pair.nodes
        ]
        self.pair.advertise([p.address for p in self.cluster_proxies])
        (tmp / "doc").mkdir()
        self.downstream = (
            None if downstream_registry is None else Downstream(tmp / "down", downstream_registry, sink)
        )
        provision(
            self.pair.nodes[0],
            tmp / "doc",
            proxied(sink, self.sink_proxy),
            redundant=mode,
            buffer_events=buffer_events,
            batch_events=batch_events,
            forward_to=None if self.downstream is None else self.downstream.node,
            chained=chained,
        )
        self.proxies = [*self.registry_proxies, self.sink_proxy, *self.cluster_proxies]
        self.feeder: ClusterFeeder | None = None
        self.watch: Watch | None = None

    @property
    def nodes(self) -> list[NodeProcess]:
        return self.pair.nodes

    def start(self) -> tuple[NodeProcess, NodeProcess]:
        """Start both members (and the downstream node first); (notifier, standby) once the
        standby is in sync."""
        if self.downstream is not None:
            self.downstream.node.start()
        for node in self.nodes:
            node.start()
        notifier, standby = self.steady(20)
        self.watch = Watch(self.nodes, self.sink)
        self.watch.start()
        return notifier, standby

    def steady(self, timeout: float) -> tuple[NodeProcess, NodeProcess]:
        """(notifier, standby) once one notifies and the other is in sync with it."""

        def settled() -> tuple[NodeProcess, NodeProcess] | None:
            notifier = self.pair.notifier()
            if notifier is None:
                return None
            standby = self.other(notifier)
            status = plan_status(notifier)
            synced = standby.tmp.name in str(status.get("standbys_in_sync"))
            placed = status.get("preferred") == notifier.sections["node"]["id"]  # no failback to come
            return (
                (notifier, standby) if synced and placed and plan_status(standby).get("caught_up") else None
            )

        def stable() -> tuple[NodeProcess, NodeProcess] | None:
            first = settled()
            if first is None:
                return None
            time.sleep(0.5)
            return first if settled() == first else None

        found: tuple[NodeProcess, NodeProcess] = wait_for(
            stable, timeout, f"a notifier and a standby in sync: {self.statuses()}"
        )
        return found

    def other(self, node: NodeProcess) -> NodeProcess:
        return self.nodes[1 - self.nodes.index(node)]

    def feed(self, first: NodeProcess) -> ClusterFeeder:
        self.feeder = ClusterFeeder(
            self.pair, self.plan_input, self.base, self.mode, first=self.nodes.index(first)
        )
        self.feeder.start()
        return self.feeder

    def finish(self) -> int:
        """Heal every proxy, stop the feeder, wait for the sink to count them; readings sent
        (`check` says whether the sink holds exactly their outputs)."""
        for proxy in self.proxies:
            proxy.heal()
        assert self.feeder is not None
        time.sleep(0.5)
        sent = self.feeder.stop()
        time.sleep(0.5)  # the last time batch closes 300 ms after it opened
        deadline = time.monotonic() + 30  # then the assertions below say what is missing
        while batch_count(self.sink) < sent and time.monotonic() < deadline:
            time.sleep(0.2)
        return sent

    def check(self, sent: int) -> None:
        """The sink holds exactly the outputs of the `sent` readings (the message first says, in
        short, which readings' outputs are missing or wrong)."""
        expected = Counter(uninterrupted(self.plan_input[:sent], self.base))
        got = Counter(r for r in sink_rows(self.sink) if r[0] != "batch")
        short = ", ".join(
            f"{what} {sum(rows.values())} rows (of readings {_spans(sorted({r[2] for r in rows}))})"
            for what, rows in (("missing", expected - got), ("unexpected", got - expected))
            if rows
        )
        assert_exact(
            self.sink, self.plan_input[:sent], self.base, f"{short or 'rows exact'}; {self.where(sent)}"
        )

    def where(self, sent: int) -> str:
        return f"seed {self.seed}, {sent} readings (at the end: {self.statuses()})"

    def statuses(self) -> list[tuple[dict[str, object], object]]:
        def adapters(node: NodeProcess) -> object:
            try:
                return node.health()["adapters"]
            except (OSError, KeyError, TypeError, ValueError):
                return None

        return [(plan_status(n), adapters(n)) for n in self.nodes]

    def lease(self) -> tuple[str, int] | None:
        """(holder, epoch) of the rooms plan's lease in the registry."""
        row = _query(self.registry, "SELECT holder, epoch FROM cep_leases WHERE plan = 'rooms'")
        return None if row is None else (str(row[0]), int(row[1]))

    def fence_epoch(self) -> int | None:
        """The epoch in the sink's `cepheus_fence` row of the rooms plan."""
        row = _query(self.sink, "SELECT epoch FROM cepheus_fence WHERE plan = 'rooms'")
        return None if row is None else int(row[0])

    def close(self) -> None:
        if self.watch is not None:
            self.watch.stop()
        for proxy in self.proxies:
            proxy.heal()
        try:
            self.pair.stop()
            if self.downstream is not None:
                self.downstream.node.stop()
        finally:
            for proxy in self.proxies:
                proxy.close()


def _spans(seqs: list[int]) -> str:
    """ "3-5, 9" for [3, 4, 5, 9]."""
    spans: list[list[int]] = []
    for seq in seqs:
        if spans and seq == spans[-1][1] + 1:
            spans[-1][1] = seq
        else:
            spans.append([seq, seq])
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in spans)


def _query(url: str, sql: str) -> Any:
    db = sa.create_engine(url)
    try:
        with db.connect() as conn:
            return conn.execute(sa.text(sql)).first()
    finally:
        db.dispose()


Series = list[tuple[float, Any]]  # (monotonic seconds, value; None: no answer)


class Watch:
    """Samples, every `EVERY` s in a thread each: both members' role and adapter counters, and the
    rows in the sink. `fenced[i]`: how many records member i's adapter says the fence refused
    (from its log, since `/health/details` does not show the count)."""

    def __init__(self, nodes: list[NodeProcess], sink: str) -> None:
        self.nodes = nodes
        self.sink = sink
        self.roles: list[Series] = [[] for _ in nodes]
        self.written: list[Series] = [[] for _ in nodes]
        self.pending: list[Series] = [[] for _ in nodes]
        self.answered: list[list[float]] = [[] for _ in nodes]  # when each member sample's answer came
        self.rows: Series = []
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._members, args=(i,), daemon=True) for i in range(len(nodes))
        ]
        self._threads.append(threading.Thread(target=self._sink, daemon=True))

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(5)

    def _members(self, i: int) -> None:
        node = self.nodes[i]
        while not self._stop.wait(EVERY):
            at = time.monotonic()
            try:
                report = node.health()
                role = report["cluster"]["plans"]["rooms"]["role"]
                adapter = report["adapters"]["outTable"]
            except (OSError, KeyError, TypeError, ValueError):
                role, adapter = None, None
            self.roles[i].append((at, role))
            self.written[i].append((at, None if adapter is None else adapter["written"]))
            self.pending[i].append((at, None if adapter is None else adapter["pending"]))
            self.answered[i].append(time.monotonic())  # the report was made between `at` and this

    def _sink(self) -> None:
        db = sa.create_engine(self.sink)
        try:
            while not self._stop.wait(EVERY):
                at = time.monotonic()
                try:
                    with db.connect() as conn:
                        count = conn.execute(sa.text("SELECT COUNT(*) FROM outs")).scalar()
                except sa.exc.SQLAlchemyError:
                    count = None
                self.rows.append((at, count))
        finally:
            db.dispose()

    # ---- figures ----------------------------------------------------------------------------------

    def notifying(self, i: int) -> list[tuple[float, float]]:
        """The spans in which member i said it was the notifier, sample to sample."""
        spans: list[tuple[float, float]] = []
        start: float | None = None
        last = 0.0
        for at, role in self.roles[i]:
            if role == "notifier":
                start = at if start is None else start
                last = at
            elif start is not None:
                spans.append((start, last))
                start = None
        if start is not None:
            spans.append((start, last))
        return spans

    def overlap(self) -> float:
        """Seconds in which two members said they were the notifier (summed over each two)."""
        total = 0.0
        for i in range(len(self.nodes)):
            for j in range(i + 1, len(self.nodes)):
                for a0, a1 in self.notifying(i):
                    for b0, b1 in self.notifying(j):
                        total += max(0.0, min(a1, b1) - max(a0, b0))
        return total

    def changes(self, since: float = 0.0) -> list[tuple[float, str, str]]:
        """(when, member, new role) of every role change seen after `since`."""
        out: list[tuple[float, str, str]] = []
        for node, series in zip(self.nodes, self.roles, strict=True):
            previous: str | None = None
            for at, role in series:
                if role is None:
                    continue
                if previous is not None and role != previous and at > since:
                    out.append((at, node.tmp.name, str(role)))
                previous = role
        return sorted(out)

    def first(self, i: int, role: str, since: float) -> float | None:
        return next((at for at, r in self.roles[i] if at > since and r == role), None)

    @staticmethod
    def increases(series: Series, since: float, until: float = float("inf")) -> list[float]:
        """When the counter of `series` was seen higher than the sample before, in (since, until]."""
        out: list[float] = []
        previous: int | None = None
        for at, value in series:
            if value is None:
                continue
            if previous is not None and value > previous and since < at <= until:
                out.append(at)
            previous = value
        return out

    def gap(self, series: Series, since: float, until: float) -> float:
        """The longest time in [since, until] in which the counter of `series` did not grow."""
        moments = [since, *self.increases(series, since, until), until]
        return max(b - a for a, b in zip(moments, moments[1:], strict=False))

    def peak(self, series: Series, since: float, until: float = float("inf")) -> int:
        return max((v for at, v in series if since <= at <= until and v is not None), default=0)

    def at(self, series: Series, when: float) -> int | None:
        """The counter of `series` at its first answer after `when`."""
        return next((v for at, v in series if at >= when and v is not None), None)


def fenced_in_log(node: NodeProcess, since_byte: int) -> int:
    """Records the fence refused on `node` (its log after byte `since_byte`)."""
    total = 0
    for line in node.log()[since_byte:].splitlines():
        if "fence refused the write of" in line:
            words = line.split("fence refused the write of ", 1)[1].split()
            total += int(words[0]) if words and words[0].isdigit() else 1
    return total


def log_size(node: NodeProcess) -> int:
    return len(node.log())


def wait_until(condition: Callable[[], object], timeout: float) -> float | None:
    """Seconds until `condition()` held (polled every 10 ms), None if not within `timeout`."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if condition():
            return time.monotonic() - start
        time.sleep(0.01)
    return None


def spread(seconds: list[float]) -> str:
    """p50, p99 and the maximum of `seconds`, in ms."""
    ms = sorted(t * 1000 for t in seconds)
    if not ms:
        return "none measured"
    p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
    return f"p50 {statistics.median(ms):.0f} ms, p99 {p99:.0f} ms, max {ms[-1]:.0f} ms"
