"""`SnapshotKeeper` on a real (SQLite) registry: persistence-mode plans are snapshotted on their
interval and restored from the newest snapshot that loads; a redeploy carries the state of
unchanged queries over."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import engine
from app.node.plans import PlanManager
from app.persistence.snapshot_keeper import Restored, SnapshotKeeper, SnapshotTooLarge
from app.registry import ExecutionPlan, Registry, schema
from app.registry.snapshots import RegistrySnapshots
from engine import Runtime

SUMS = """
define stream In (v long);
define stream Sums (total long);
@info(name='sums') from In#window.length(3) select sum(v) as total insert into Sums;
"""


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RegistrySnapshots]:
    registry = Registry(f"sqlite:///{tmp_path / 'registry.db'}")
    registry.migrate()
    yield RegistrySnapshots(registry)
    registry.close()


def plan(text: str = SUMS, minutes: int = 1) -> ExecutionPlan:
    return ExecutionPlan("sums", text, snapshot_interval_minutes=minutes).checked()


def runtime(text: str = SUMS) -> tuple[Runtime, list[Any]]:
    rt = engine.compile(text)
    out: list[Any] = []
    rt.subscribe("Sums", lambda events: out.extend(e.data[0] for e in events))
    return rt, out


def keeper(
    store: RegistrySnapshots, deployed: list[tuple[ExecutionPlan, Runtime]], clock: Clock
) -> SnapshotKeeper:
    return SnapshotKeeper(store, "node-a", keep=2, deployed=lambda: deployed, clock=clock)


def test_a_restored_plan_carries_on_where_the_snapshot_left_it(store: RegistrySnapshots) -> None:
    first, _ = runtime()
    first.send("In", [(1,), (2,)], timestamps=1000)
    keeper(store, [], Clock()).take(plan(), first)
    second, out = runtime()
    meta = keeper(store, [], Clock()).restore(plan(), second).meta
    assert meta is not None and meta.node == "node-a"
    second.send("In", [(3,)], timestamps=2000)
    second.send("In", [(4,)], timestamps=2001)
    assert out == [6, 9]  # 1+2+3, then 2+3+4: the window came back


def test_a_corrupt_newest_snapshot_is_skipped_for_the_one_before(
    store: RegistrySnapshots, caplog: pytest.LogCaptureFixture
) -> None:
    rt, _ = runtime()
    rt.send("In", [(1,)], timestamps=1000)
    older = keeper(store, [], Clock()).take(plan(), rt)
    rt.send("In", [(5,)], timestamps=1001)
    newer = keeper(store, [], Clock()).take(plan(), rt)
    with store.registry.engine.begin() as conn:
        conn.execute(
            sa.update(schema.snapshots).where(schema.snapshots.c.id == newer.id).values(data=b"garbage")
        )
    fresh, out = runtime()
    with caplog.at_level(logging.WARNING):
        used = keeper(store, [], Clock()).restore(plan(), fresh).meta
    assert used is not None and used.id == older.id
    assert any(f"snapshot {newer.id} skipped" in r.getMessage() for r in caplog.records)
    fresh.send("In", [(10,)], timestamps=2000)
    assert out == [11]


def test_no_usable_snapshot_is_an_empty_start_not_a_failure(store: RegistrySnapshots) -> None:
    rt, out = runtime()
    assert keeper(store, [], Clock()).restore(plan(), rt) == Restored()
    rt.send("In", [(7,)], timestamps=1000)
    assert out == [7]


def test_snapshots_are_taken_on_the_plan_interval_and_the_newest_kept(store: RegistrySnapshots) -> None:
    clock = Clock()
    rt, _ = runtime()
    deployed = [(plan(minutes=2), rt), (plan(minutes=0), rt)]  # the second is not in persistence mode
    keep = keeper(store, deployed, clock)
    assert keep.due() == []
    clock.now += 119
    assert keep.due() == []
    clock.now += 1
    assert [p.snapshot_interval_minutes for p, _ in keep.due()] == [2]
    for _ in range(3):
        keep.take(*deployed[0])
    assert len(store.list("sums")) == 2
    assert keep.due() == []


def test_a_final_snapshot_covers_every_persistence_mode_plan(store: RegistrySnapshots) -> None:
    rt, _ = runtime()
    keeper(store, [(plan(minutes=5), rt), (ExecutionPlan("other", SUMS).checked(), rt)], Clock()).take_all()
    assert [m.plan for m in store.list("sums")] == ["sums"]
    assert store.list("other") == []


def test_after_an_edit_unchanged_queries_keep_their_state(store: RegistrySnapshots) -> None:
    rt, _ = runtime()
    rt.send("In", [(1,), (2,)], timestamps=1000)
    keeper(store, [], Clock()).take(plan(), rt)
    edited = SUMS + "\n-- a comment\nfrom In select v * 2 as total insert into Sums;\n"
    fresh, out = runtime(edited)
    keeper(store, [], Clock()).restore(plan(edited), fresh)
    fresh.send("In", [(3,)], timestamps=2000)
    assert sorted(out) == [6, 6]  # the window query kept 1, 2; the new query doubled 3


def test_discard_state_starts_the_plan_empty_and_removes_its_snapshots_once(
    store: RegistrySnapshots, caplog: pytest.LogCaptureFixture
) -> None:
    rt, _ = runtime()
    rt.send("In", [(1,), (2,)], timestamps=1000)
    keeper(store, [], Clock()).take(plan(), rt)
    keeper(store, [], Clock()).take(plan(), rt)
    clean = SnapshotKeeper(store, "node-a", keep=2, deployed=list, clock=Clock(), discard_state=True)
    fresh, out = runtime()
    with caplog.at_level(logging.INFO):
        assert clean.restore(plan(), fresh) == Restored(discarded=True)
    assert store.list("sums") == []
    assert "plan sums starts with empty state (--discard-state): 2 snapshot(s) discarded" in caplog.messages
    fresh.send("In", [(3,)], timestamps=2000)
    assert out == [3]
    clean.take(plan(), fresh)  # taken while this node runs: a later redeploy restores it
    again, _ = runtime()
    assert clean.restore(plan(), again).meta is not None


class FailingLoads:
    """The registry store, with `load` failing as an unreachable database does."""

    def __init__(self, store: RegistrySnapshots) -> None:
        self.store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def load(self, snapshot_id: int) -> bytes:
        raise sa.exc.OperationalError("SELECT", {}, Exception("Lost connection to MySQL server"))


def test_an_unreadable_registry_means_an_empty_start_and_no_snapshot_over_the_good_ones(
    store: RegistrySnapshots, caplog: pytest.LogCaptureFixture
) -> None:
    rt, _ = runtime()
    rt.send("In", [(1,)], timestamps=1000)
    good = keeper(store, [], Clock()).take(plan(), rt)
    clock = Clock()
    fresh, out = runtime()
    failing = SnapshotKeeper(
        FailingLoads(store), "node-a", keep=1, deployed=lambda: [(plan(), fresh)], clock=clock
    )  # type: ignore[arg-type]
    with caplog.at_level(logging.ERROR):
        assert failing.restore(plan(), fresh) == Restored(known=False)
    assert "no snapshot of it is taken until it is redeployed" in caplog.text
    clock.now += 3600
    assert failing.due() == []
    failing.take_all()
    assert [m.id for m in store.list("sums")] == [good.id]  # the good one is still there
    fresh.send("In", [(5,)], timestamps=2000)
    assert out == [5]


def test_a_plan_disabled_and_enabled_again_carries_on_from_where_it_stopped(tmp_path: Path) -> None:
    from tests.unit.app.node.test_plans import Manager

    m = Manager(tmp_path)
    store = RegistrySnapshots(m.registry)
    keep = SnapshotKeeper(store, "node-a", keep=3, deployed=m.plans.deployments)
    m.plans = PlanManager(m.catalog, m.ingress, m.outputs, restore=keep.restore, retire=keep.farewell)
    counting = """
    @Import('s2:1.0.0') define stream In (v long);
    define stream Counts (n long);
    @info(name='count') from In select count() as n insert into Counts;
    """
    try:
        m.apply(ExecutionPlan("counts", counting, snapshot_interval_minutes=60))
        m.ingress.publish_rows("s2:1.0.0", [(1,)])
        m.ingress.publish_rows("s2:1.0.0", [(1,)])
        m.apply(ExecutionPlan("counts", counting, enabled=False, snapshot_interval_minutes=60))
        assert len(store.list("counts")) == 1  # its last state, taken as it stopped
        m.apply(ExecutionPlan("counts", counting, snapshot_interval_minutes=60))
        counts = m.watch("counts", "Counts")
        m.ingress.publish_rows("s2:1.0.0", [(1,)])
        assert counts == [[(3,)]]
    finally:
        m.close()


def test_a_snapshot_over_the_size_limit_is_not_stored_and_the_older_ones_stay(
    store: RegistrySnapshots, caplog: pytest.LogCaptureFixture
) -> None:
    rt, _ = runtime()
    rt.send("In", [(1,)], timestamps=1000)
    small = keeper(store, [], Clock()).take(plan(), rt)
    capped = SnapshotKeeper(
        store, "node-a", keep=1, deployed=lambda: [(plan(), rt)], max_bytes=small.size - 1
    )
    with pytest.raises(SnapshotTooLarge, match="over persistence.max_snapshot_bytes"):
        capped.take(plan(), rt)
    with caplog.at_level(logging.ERROR):
        capped.take_all()
    assert "not stored, the older ones are kept" in caplog.text
    assert [m.id for m in store.list("sums")] == [small.id]


def test_a_snapshot_of_another_plan_is_skipped_for_the_one_before(
    store: RegistrySnapshots, caplog: pytest.LogCaptureFixture
) -> None:
    rt, _ = runtime()
    rt.send("In", [(1,)], timestamps=1000)
    good = keeper(store, [], Clock()).take(plan(), rt)
    other = engine.compile("define stream X (s string); define table T (s string); from X insert into T;")
    other.send("X", [("x",)], timestamps=1000)
    foreign = keeper(store, [], Clock()).take(plan(), other)  # stored under this plan's name
    fresh, out = runtime()
    with caplog.at_level(logging.WARNING):
        used = keeper(store, [], Clock()).restore(plan(), fresh).meta
    assert used is not None and used.id == good.id
    assert f"snapshot {foreign.id} skipped: none of its" in caplog.text
    fresh.send("In", [(2,)], timestamps=2000)
    assert out == [3]
