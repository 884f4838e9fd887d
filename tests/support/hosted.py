"""`HostedCluster`: the rooms plan run redundantly by members that each have a host of their own
(`tests.support.hosts`), with the registry and the sink each a database server of the test's own
on a host of its own (`tests.support.dbservers`), so a test can do to the network, the
processes and the databases what happens to real ones: lose, delay and reorder packets, cut one
direction, take a host away without a FIN, pause a process, kill the registry and bring it back.

The test process is the client's host (`Network.here`): it feeds readings (`ClusterFeeder`),
watches every member and the sink (`tests.support.faults.Watch`) and checks the sink against
one uninterrupted run (`tests.support.rooms`).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path

from tests.support import many_plans
from tests.support.cluster import ClusterFeeder, Pair, status_of
from tests.support.dbservers import OwnMariaDB
from tests.support.faults import Watch
from tests.support.hosts import Network
from tests.support.nodes import NodeProcess, wait_for
from tests.support.rooms import (
    Reading,
    assert_exact,
    batch_count,
    provision,
    readings,
    sink_rows,
    uninterrupted,
)

MEMBERS = "abcde"


class HostedCluster:
    def __init__(self, tmp: Path, members: int = 2, mode: str = "failover", plans: int = 0) -> None:
        """`plans`: instead of the rooms plan, that many small plans (`tests.support.many_plans`)."""
        self.tmp = tmp
        self.mode = mode
        self.plans = plans
        self.seed = random.randrange(1 << 30)
        self.names = [f"member-{m}" for m in MEMBERS[:members]]
        self.net = Network([*self.names, "registry", "sink"], self.seed)
        self.registry_db: OwnMariaDB | None = None
        self.sink_db: OwnMariaDB | None = None
        self.pair: Pair | None = None
        self.feeder: ClusterFeeder | None = None
        self.watch: Watch | None = None
        self.plan_input: list[Reading] = readings(self.seed, 200_000)
        self.base = int(time.time() * 1000) + 86_400_000
        try:
            self.registry_db = self._database("registry")
            self.sink_db = self._database("sink")
            self.pair = Pair(
                tmp, self.registry_db.url, members=members, hosts=[self.net[n] for n in self.names]
            )
            (tmp / "doc").mkdir()
            if plans:
                many_plans.provision(self.nodes[0], tmp / "doc", plans, self.sink_db.url, mode)
            else:
                provision(self.nodes[0], tmp / "doc", self.sink_db.url, redundant=mode)
        except BaseException:
            self.close()
            raise

    def _database(self, name: str) -> OwnMariaDB:
        host = self.net[name]
        server = OwnMariaDB(self.tmp / f"{name}-db", host=host.address, prefix=host.prefix)
        server.start()
        return server

    @property
    def nodes(self) -> list[NodeProcess]:
        assert self.pair is not None
        return self.pair.nodes

    @property
    def sink(self) -> str:
        assert self.sink_db is not None
        return self.sink_db.url

    def host_of(self, node: NodeProcess) -> str:
        """The name of `node`'s host in `net`."""
        return self.names[self.nodes.index(node)]

    def start(self) -> NodeProcess:
        """Start every member; the notifier (of the rooms plan; of many plans: of the first),
        once every other member is in sync with it (of many plans: in sync with every plan's)."""
        for node in self.nodes:
            node.start()
        notifier = self.every_plan_settled(120)[many_plans.name(0)] if self.plans else self.settled(30)
        self.watch = Watch(self.nodes, self.sink)
        self.watch.start()
        return notifier

    def settled(self, timeout: float) -> NodeProcess:
        """The notifier, once it counts every other member in sync, is the member placement
        prefers, and stays so for 0.3 s."""
        assert self.pair is not None
        pair = self.pair

        def placed() -> NodeProcess | None:
            found = pair.settled()
            if found is None:
                return None
            notifier = found[0]  # and placement names it: no hand-back is to come
            return (
                notifier
                if status_of(notifier, "rooms").get("preferred") == notifier.sections["node"]["id"]
                else None
            )

        def stable() -> NodeProcess | None:
            first = placed()
            if first is None:
                return None
            time.sleep(0.3)
            return first if placed() is first else None

        found: NodeProcess = wait_for(
            stable, timeout, "a notifier with every member in sync", message=self.statuses
        )
        return found

    def roles(self) -> dict[str, list[str | None]]:
        """Of many plans: per plan, each member's role in it (None: no answer)."""
        reports = []
        for node in self.nodes:
            try:
                reports.append(node.health()["cluster"]["plans"])
            except (OSError, KeyError, TypeError, ValueError):
                reports.append({})
        return {
            many_plans.name(i): [r.get(many_plans.name(i), {}).get("role") for r in reports]
            for i in range(self.plans)
        }

    def every_plan_settled(
        self, timeout: float, among: list[NodeProcess] | None = None
    ) -> dict[str, NodeProcess]:
        """Of many plans: per plan its notifier, once every plan's notifier counts every other
        member in sync and is the member placement prefers (one report of each member's per round);
        `among`: the members still running (default: all)."""

        members = self.nodes if among is None else among

        def settled() -> dict[str, NodeProcess] | None:
            reports = [node.health()["cluster"]["plans"] for node in members]
            found: dict[str, NodeProcess] = {}
            for i in range(self.plans):
                plan = many_plans.name(i)
                for node, report in zip(members, reports, strict=True):
                    status = report.get(plan, {})
                    in_sync = len(status.get("standbys_in_sync", [])) == len(members) - 1
                    placed = status.get("preferred") == node.sections["node"]["id"]  # no hand-back to come
                    if status.get("role") == "notifier" and in_sync and placed:
                        found[plan] = node
                if plan not in found:
                    return None
            return found

        result: dict[str, NodeProcess] = wait_for(settled, timeout, "every plan settled", 0.5)
        return result

    def notifier(self) -> NodeProcess | None:
        assert self.pair is not None
        return self.pair.notifier()

    def feed(self, first: NodeProcess) -> ClusterFeeder:
        assert self.pair is not None
        self.feeder = ClusterFeeder(self.pair, self.plan_input, self.base, self.mode, self.nodes.index(first))
        self.feeder.start()
        return self.feeder

    def finish(self) -> int:
        """Heal the network, stop the client, wait for the sink to count what it sent; readings sent."""
        self.net.heal()
        assert self.feeder is not None
        time.sleep(0.5)
        sent = self.feeder.stop()
        time.sleep(0.5)  # the last time batch closes 300 ms after it opened
        deadline = time.monotonic() + 30  # then the check says what is missing
        while batch_count(self.sink) < sent and time.monotonic() < deadline:
            time.sleep(0.2)
        return sent

    def tally(self, sent: int) -> tuple[int, int]:
        """(rows missing, rows unexpected or repeated) in the sink against one uninterrupted run."""
        expected = Counter(uninterrupted(self.plan_input[:sent], self.base))
        got = Counter(r for r in sink_rows(self.sink) if r[0] != "batch")
        return sum((expected - got).values()), sum((got - expected).values())

    def check(self, sent: int) -> None:
        assert_exact(self.sink, self.plan_input[:sent], self.base, self.where(sent))

    def where(self, sent: int) -> str:
        return f"seed {self.seed}, {sent} readings (at the end: {self.statuses()})"

    def statuses(self) -> list[dict[str, object]]:
        return [status_of(n, "rooms") for n in self.nodes]

    def close(self) -> None:
        if self.watch is not None:
            self.watch.stop()
        try:
            self.net.heal()
            if self.feeder is not None and self.feeder.error is None:
                self.feeder.stop()
            if self.pair is not None:
                for node in self.pair.nodes:
                    if node.process is not None and node.process.poll() is None:
                        try:
                            node.process.send_signal(18)  # SIGCONT: a paused member must be able to stop
                            node.stop(20)
                        except Exception:
                            node.kill()
        finally:
            for server in (self.registry_db, self.sink_db):
                if server is not None:
                    server.stop()
            self.net.close()
