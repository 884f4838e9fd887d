"""One driver per spark plan among nodes sharing `[spark] dir` (`[spark] shared = true`): the
election as pure logic (`Leadership`, time as arguments), then two `SparkDriver`s on one SQLite
registry's lease table and one directory: one starts Spark, the other says who drives and
hands its events off to its own sub-directory, and takes over when the driver gives up. The
session is the test's (Spark itself runs in tests/integration/spark/test_cluster.py)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.config import Spark, load
from app.node.plans import PlanManager
from app.registry import ExecutionPlan, Registry
from app.registry.leases import RegistryLeases
from app.spark import driver as driver_module
from app.spark.driver import DriverLock, SparkDriver, plan_directory
from app.spark.errors import SparkPlanError
from engine.errors import ConfigError
from ha.lease import Timing
from ha.ports import Lease
from ha.spark_leadership import KEY_MAX, Leadership, lease_key
from tests.unit.app.node.test_plans import PLAN_A, Manager

SPARK_A = "@App:name('A')\n" + PLAN_A
T = Timing(ttl_ms=2000, renew_ms=250, margin_ms=750)
FAST = Timing(ttl_ms=3000, renew_ms=50, margin_ms=1000)


def lease(holder: str, epoch: int = 1, ttl_ms: int = 2000) -> Lease:
    return Lease("spark:A", holder, epoch, ttl_ms, None)


# ---- the election, pure ------------------------------------------------------------------


def test_a_node_drives_while_its_lease_holds_and_stops_before_it_can_expire() -> None:
    me = Leadership("n1", T)
    assert me.due(0.0)
    assert me.answered(0.0, lease("n1"), 0.01) == "start"
    assert me.driving and me.driver == "n1"
    assert me.answered(0.25, lease("n1"), 0.26) is None  # renewed: keeps driving
    # the registry unreachable from then on: the node stops on its own clock, ttl - margin after
    # the last renewal it sent, well before the registry could give the lease to another node
    assert me.answered(0.5, None, 0.51, "connection refused") is None
    assert me.check(1.49) is None
    assert me.check(1.5) == "stop"
    assert not me.driving and "connection refused" in me.describe("/shared/in/n1")
    assert me.answered(1.75, lease("n1", epoch=1), 1.76) == "start"  # back, lease still its own


def test_a_node_that_does_not_hold_the_lease_says_who_drives() -> None:
    other = Leadership("n2", T)
    assert other.answered(0.0, lease("n1"), 0.0) is None
    assert not other.driving
    assert other.describe("/shared/A/in/n2") == (
        "driven by node n1; this node hands its events off to /shared/A/in/n2"
    )
    # the driver died: its lease expired, and the next request grants it here, a new epoch
    assert other.answered(2.5, lease("n2", epoch=2), 2.5) == "start"


def test_a_lease_taken_over_stops_the_driver_at_once() -> None:
    me = Leadership("n1", T)
    me.answered(0.0, lease("n1", epoch=3), 0.0)
    assert me.answered(0.25, lease("n2", epoch=4), 0.25) == "stop"  # before its own deadline
    assert me.driver == "n2"


def test_a_node_that_resigns_asks_no_more_until_deployed_again() -> None:
    me = Leadership("n1", T)
    me.answered(0.0, lease("n1"), 0.0)
    assert me.resign() == "stop"
    assert not me.due(10.0) and not me.holds(0.1)
    me.rejoin()
    assert me.due(10.0)


def test_lease_keys_fit_the_lease_table() -> None:
    assert lease_key("rooms") == "spark:rooms"
    long = lease_key("p" * 200)
    assert len(long) == KEY_MAX and long.startswith("spark:ppp") and long != lease_key("p" * 199 + "q")


def test_a_shared_spark_dir_must_be_named() -> None:
    with pytest.raises(ConfigError, match="spark.shared needs spark.dir"):
        load(None, env={}, overrides={"spark": {"enabled": True, "shared": True}})
    assert load(None, env={}, overrides={"spark": {"shared": True, "dir": "/shared"}}).spark.shared


# ---- two drivers on one registry and one directory ----------------------------------------


class Sessions:
    """Spark sessions that never start: each call is recorded, waits for `release`, then fails."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls: list[str] = []

    def factory(self, node: str) -> Callable[[str], Any]:
        def make(master: str) -> Any:
            self.calls.append(node)
            self.release.wait(10)
            msg = f"no Spark on {node} in a unit test"
            raise SparkPlanError(msg)

        return make


class Deployments:
    """`SparkDeployment` as the test sees it: which node's queries run, started and stopped in
    which order, and (given the registry) the plan's lease there as each node stopped."""

    def __init__(self, registry: Registry | None = None) -> None:
        self.log: list[tuple[str, str]] = []  # (node, "start" | "stop")
        self.running: set[str] = set()
        self.lease_at_stop: list[tuple[str, Lease | None]] = []
        self._registry = registry

    def make(self, node: str) -> Any:
        deployments = self

        class Deployment:
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                self.queries = {"main": object()}

            def start(self) -> None:
                deployments.log.append((node, "start"))
                deployments.running.add(node)

            def stop(self) -> None:
                if deployments._registry is not None:
                    lease = RegistryLeases(deployments._registry).current("spark:A")
                    deployments.lease_at_stop.append((node, lease))
                deployments.log.append((node, "stop"))
                deployments.running.discard(node)

            def status(self) -> dict[str, Any]:
                return {"queries": [{"name": "cepheus_A_main", "active": True}]}

        return Deployment


class Recording(RegistryLeases):
    """The registry's lease store, counting the requests answered and recording each release
    (plan, node, whether it ended a lease)."""

    def __init__(self, registry: Registry) -> None:
        super().__init__(registry)
        self.answered = 0
        self.released: list[tuple[str, str, bool]] = []
        self._changed = threading.Condition()

    def acquire(self, *args: Any, **kwargs: Any) -> Lease:
        lease = super().acquire(*args, **kwargs)
        with self._changed:
            self.answered += 1
            self._changed.notify_all()
        return lease

    def release(self, plan: str, node: str) -> bool:
        ended = super().release(plan, node)
        self.released.append((plan, node, ended))
        return ended

    def wait_answered(self, more: int) -> None:
        """Wait until `more` further requests have been answered."""
        with self._changed:
            target = self.answered + more
            assert self._changed.wait_for(lambda: self.answered >= target, 10), f"{self.answered} of {target}"


class Breakable(Recording):
    """The registry's lease store, until `broken`: then every request fails, as an unreachable registry."""

    broken = False

    def acquire(self, *args: Any, **kwargs: Any) -> Lease:
        if self.broken:
            msg = "registry unreachable (a test)"
            raise ConnectionError(msg)
        return super().acquire(*args, **kwargs)


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[tuple[Manager, Manager, Registry]]:
    (tmp_path / "n1").mkdir()
    (tmp_path / "n2").mkdir()
    a, b = Manager(tmp_path / "n1"), Manager(tmp_path / "n2")
    shared = Registry(f"sqlite:///{tmp_path / 'shared.db'}")
    shared.migrate()
    yield a, b, shared
    a.close()
    b.close()
    shared.close()


def shared_manager(
    m: Manager,
    spark_dir: Path,
    node: str,
    session: Callable[[str], Any],
    leases: RegistryLeases,
    deployments: Deployments | None = None,
    timing: Timing = FAST,
) -> PlanManager:
    driver = SparkDriver(
        Spark(enabled=True, master="local[1]", dir=str(spark_dir), shared=True),
        spark_dir,
        node,
        m.outputs,
        m.ingress,
        session,
        leases=leases,
        timing=timing,
    )
    if deployments is not None:
        driver.deployment_class = deployments.make(node)
    return PlanManager(m.catalog, m.ingress, m.outputs, spark=driver)


def wait(predicate: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


PLAN = ExecutionPlan("A", SPARK_A, distributed_mode="spark").checked()


def test_one_node_drives_the_other_feeds_and_takes_over_when_the_driver_cannot_start_spark(
    nodes: tuple[Manager, Manager, Registry], tmp_path: Path
) -> None:
    a, b, registry = nodes
    sessions = Sessions()
    spark_dir = tmp_path / "shared-spark"
    first_leases, second_leases = Recording(registry), Recording(registry)
    first = shared_manager(a, spark_dir, "n1", sessions.factory("n1"), first_leases)
    second = shared_manager(b, spark_dir, "n2", sessions.factory("n2"), second_leases)
    try:
        first.apply([PLAN])
        assert wait(lambda: sessions.calls == ["n1"])  # the driver starts Spark, lazily
        second.apply([PLAN])
        assert wait(lambda: "driven by node n1" in second.status()["A"].message)
        assert second.status()["A"].state == "spark"
        assert second.spark_status()["A"]["driver"] == "n1"
        b.ingress.publish_rows("s1:1.0.0", [("web", 2)], [1000])
        a.ingress.publish_rows("s1:1.0.0", [("app", 3)], [1001])
        (text,) = plan_directory(spark_dir, "A").iterdir()
        written = {
            p.parent.name: [json.loads(line) for line in p.read_text().splitlines()]
            for p in (text / "in").glob("*/*.jsonl")
        }
        assert written == {
            "n1": [{"i": 0, "w": "n1", "stream": "In", "timestamp": 1001, "data": ["app", 3]}],
            "n2": [{"i": 0, "w": "n2", "stream": "In", "timestamp": 1000, "data": ["web", 2]}],
        }
        second_leases.wait_answered(3)  # the other node asked three times more, and was told n1 drives
        assert sessions.calls == ["n1"]  # one Spark session: the other node's never started
        # the driver cannot start Spark: it says so, gives the lease up, and the other drives
        assert first_leases.released == []
        sessions.release.set()
        assert wait(lambda: first.status()["A"].state == "failed")
        assert "another node with Spark does" in first.status()["A"].message
        assert first_leases.released == [("spark:A", "n1", True)]  # at once: its ttl need not run out
        assert wait(lambda: sessions.calls == ["n1", "n2"])
        lease = RegistryLeases(registry).current("spark:A")
        assert lease is not None and (lease.holder, lease.epoch) == ("n2", 2)
    finally:
        sessions.release.set()
        first.stop()
        second.stop()


def test_a_driver_that_stops_releases_its_lease_for_the_next_at_once(
    nodes: tuple[Manager, Manager, Registry], tmp_path: Path
) -> None:
    a, b, registry = nodes
    runs = Deployments()
    spark_dir = tmp_path / "shared-spark"
    first_leases = Recording(registry)
    first = shared_manager(a, spark_dir, "n1", lambda _: object(), first_leases, runs)
    second = shared_manager(b, spark_dir, "n2", lambda _: object(), RegistryLeases(registry), runs)
    try:
        first.apply([PLAN])
        assert wait(lambda: runs.running == {"n1"} and first.status()["A"].state == "spark")
        assert first.status()["A"].message == "on Spark local[1]: 1 queries active"
        second.apply([PLAN])
        assert wait(lambda: "driven by node n1" in second.status()["A"].message)
        first.stop()  # graceful: the queries stop, the lease is given up
        assert runs.log[-1] == ("n1", "stop")
        assert first_leases.released == [("spark:A", "n1", True)]  # the 3 s lease need not run out
        assert wait(lambda: runs.running == {"n2"})
        assert runs.log == [("n1", "start"), ("n1", "stop"), ("n2", "start")]
        lease = RegistryLeases(registry).current("spark:A")
        assert lease is not None and lease.holder == "n2" and lease.epoch == 2
    finally:
        first.stop()
        second.stop()


def test_a_driver_cut_off_from_the_registry_stops_before_another_starts(
    nodes: tuple[Manager, Manager, Registry], tmp_path: Path
) -> None:
    a, b, registry = nodes
    runs = Deployments(registry)
    spark_dir = tmp_path / "shared-spark"
    timing = Timing(ttl_ms=1500, renew_ms=50, margin_ms=500)
    cut = Breakable(registry)
    first = shared_manager(a, spark_dir, "n1", lambda _: object(), cut, runs, timing)
    second = shared_manager(b, spark_dir, "n2", lambda _: object(), RegistryLeases(registry), runs, timing)
    try:
        first.apply([PLAN])
        assert wait(lambda: runs.running == {"n1"})
        second.apply([PLAN])
        assert wait(lambda: "driven by node n1" in second.status()["A"].message)
        cut.broken = True
        assert wait(lambda: runs.running == {"n2"})
        assert runs.log == [("n1", "start"), ("n1", "stop"), ("n2", "start")]  # never two at once
        # n1 stopped on its own clock (ttl - margin after its last renewal), while the registry
        # still had the lease as n1's: before it could expire and be granted to n2
        ((node, lease),) = runs.lease_at_stop
        assert node == "n1" and lease is not None and (lease.holder, lease.epoch) == ("n1", 1)
        assert lease.ttl_ms > 0
        assert "cannot ask the registry who drives the plan" in first.status()["A"].message
        cut.broken = False  # back: the lease is n2's now, and n1 says so
        assert wait(lambda: "driven by node n2" in first.status()["A"].message)
        assert runs.running == {"n2"}
    finally:
        first.stop()
        second.stop()


class Tries:
    """Counts the tries for a checkpoint directory's flock (`DriverLock`), refused or not."""

    def __init__(self) -> None:
        self.count = 0
        self._tried = threading.Condition()

    def lock(self, directory: Path, node_id: str) -> DriverLock:
        with self._tried:
            self.count += 1
            self._tried.notify_all()
        return DriverLock(directory, node_id)

    def wait(self, count: int) -> None:
        with self._tried:
            assert self._tried.wait_for(lambda: self.count >= count, 10), f"{self.count} tries of {count}"


def test_a_new_driver_waits_for_the_old_ones_flock(
    nodes: tuple[Manager, Manager, Registry], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, _, registry = nodes
    tries = Tries()
    monkeypatch.setattr(driver_module, "DriverLock", tries.lock)
    monkeypatch.setattr(driver_module, "LOCK_RETRY_SECONDS", 0.01)
    runs = Deployments()
    spark_dir = tmp_path / "shared-spark"
    cut = Breakable(registry)
    cut.broken = True  # no lease yet: the plan's directory is there, its queries are not
    first = shared_manager(a, spark_dir, "n1", lambda _: object(), cut, runs)
    try:
        first.apply([PLAN])
        (text,) = plan_directory(spark_dir, "A").iterdir()
        paused = DriverLock(text / "checkpoints", "n0")  # an old driver, paused past its lease
        cut.broken = False
        assert wait(lambda: "waiting for the previous driver" in first.status()["A"].message)
        assert "node n0 (pid " in first.status()["A"].message
        tries.wait(tries.count + 3)  # three more tries for the flock, each refused
        assert runs.running == set()
        paused.release()  # it woke up, saw its lease gone and stopped
        assert wait(lambda: runs.running == {"n1"})
    finally:
        first.stop()
