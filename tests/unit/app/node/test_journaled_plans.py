"""Persistence-mode plans on the plan manager with an input log: a process that dies after a
snapshot leaves a log that the next one replays, so the plan carries on where it stopped."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.node.plans import PlanManager
from app.persistence.input_log import InputLog
from app.persistence.journal import Journals
from app.persistence.snapshot_keeper import SnapshotKeeper
from app.registry import ExecutionPlan
from app.registry.snapshots import RegistrySnapshots
from tests.unit.app.node.test_plans import Manager

COUNTING = """
@Import('s2:1.0.0') define stream In (v long);
define stream Counts (n long, total long);
@info(name='count') from In select count() as n, sum(v) as total insert into Counts;
"""


def journaled(m: Manager, tmp_path: Path, segment_bytes: int = 1 << 20) -> tuple[SnapshotKeeper, Journals]:
    journals = Journals(lambda: InputLog(tmp_path / "input-log", "off", segment_bytes=segment_bytes))
    keeper = SnapshotKeeper(
        RegistrySnapshots(m.registry),
        "node-a",
        keep=2,
        deployed=lambda: m.plans.deployments(),
        journals=journals,
    )
    m.plans = PlanManager(
        m.catalog, m.ingress, m.outputs, restore=keeper.restore, retire=keeper.farewell, journals=journals
    )
    return keeper, journals


def plan() -> ExecutionPlan:
    return ExecutionPlan("counts", COUNTING, snapshot_interval_minutes=60)


def test_a_restarted_manager_replays_the_log_after_the_snapshot(tmp_path: Path) -> None:
    first = Manager(tmp_path)
    keeper, journals = journaled(first, tmp_path)
    first.apply(plan())
    for v in (1, 2, 3):
        first.ingress.publish_rows("s2:1.0.0", [(v,)])
    snapshot = keeper.take(*first.plans.deployments()[0])
    assert snapshot.input_log is not None and snapshot.input_position == 4  # the start tick, three bundles
    for v in (10, 20):
        first.ingress.publish_rows("s2:1.0.0", [(v,)])
    # the process dies: nothing is stopped, no final snapshot; its log stays as it is

    second = Manager(tmp_path)
    journaled(second, tmp_path)
    try:
        second.apply(plan())
        counts = second.watch("counts", "Counts")
        second.ingress.publish_rows("s2:1.0.0", [(100,)])
        assert counts == [[(6, 136)]]  # 1+2+3 from the snapshot, 10 and 20 from the log, then 100
    finally:
        second.close()


def test_snapshots_truncate_the_log_behind_the_oldest_kept(tmp_path: Path) -> None:
    m = Manager(tmp_path)
    keeper, journals = journaled(m, tmp_path, segment_bytes=2000)
    try:
        m.apply(plan())
        positions = []
        for round_ in range(4):
            for v in range(200):
                m.ingress.publish_rows("s2:1.0.0", [(round_ * 1000 + v,)])
            positions.append(keeper.take(*m.plans.deployments()[0]).input_position)
        first, last = journals.input_log.bounds("counts")
        assert last == positions[-1]
        assert 1 < first <= positions[-2] + 1  # keep=2: the log still holds what follows the older one
        assert journals.sizes()["counts"] > 0
    finally:
        m.close()


def test_discard_state_starts_a_new_log(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    first = Manager(tmp_path)
    _, journals = journaled(first, tmp_path)
    first.apply(plan())
    first.ingress.publish_rows("s2:1.0.0", [(5,)])
    old_id = journals.input_log.log_id("counts")

    second = Manager(tmp_path)
    journals2 = Journals(lambda: InputLog(tmp_path / "input-log", "off"))
    keeper = SnapshotKeeper(
        RegistrySnapshots(second.registry), "node-a", keep=2, deployed=lambda: second.plans.deployments(),
        journals=journals2, discard_state=True,
    )  # fmt: skip
    second.plans = PlanManager(
        second.catalog, second.ingress, second.outputs, restore=keeper.restore, journals=journals2
    )
    try:
        second.apply(plan())
        counts = second.watch("counts", "Counts")
        second.ingress.publish_rows("s2:1.0.0", [(7,)])
        assert counts == [[(1, 7)]]  # the 5 of the log before is gone with the state
        assert journals2.input_log.log_id("counts") != old_id
    finally:
        second.close()


def test_a_redeploy_takes_a_snapshot_so_a_replay_never_runs_old_input_through_the_new_text(
    tmp_path: Path,
) -> None:
    first = Manager(tmp_path)
    keeper, _ = journaled(first, tmp_path)
    first.plans = PlanManager(
        first.catalog, first.ingress, first.outputs, restore=keeper.restore, retire=keeper.farewell,
        journals=first.plans.journals, checkpoint=keeper.checkpoint,
    )  # fmt: skip
    first.apply(plan())
    first.ingress.publish_rows("s2:1.0.0", [(1,)])
    first.ingress.publish_rows("s2:1.0.0", [(2,)])
    doubled = COUNTING.replace("sum(v) as total", "sum(v * 10) as total")
    first.apply(ExecutionPlan("counts", doubled, snapshot_interval_minutes=60))
    first.ingress.publish_rows("s2:1.0.0", [(3,)])
    # dies here: without the snapshot at the redeploy, the replay would count 1 and 2 times ten

    second = Manager(tmp_path)
    journaled(second, tmp_path)
    try:
        second.apply(ExecutionPlan("counts", doubled, snapshot_interval_minutes=60))
        counts = second.watch("counts", "Counts")
        second.ingress.publish_rows("s2:1.0.0", [(4,)])
        assert counts == [[(2, 70)]]  # 'count' started anew at the edit: 3*10 + 4*10 (not 4 events, 100)
    finally:
        second.close()


def test_one_plans_full_log_refuses_the_bundle_before_another_plan_takes_it(tmp_path: Path) -> None:
    from app.persistence.input_log import Events, InputLogFull
    from app.persistence.records import encode
    from app.persistence.segments import frame

    m = Manager(tmp_path)
    journals = Journals(lambda: InputLog(tmp_path / "input-log", "off", max_bytes=1 << 20))
    m.plans = PlanManager(m.catalog, m.ingress, m.outputs, journals=journals)
    try:
        m.apply(
            plan(), ExecutionPlan("other", COUNTING.replace("Counts", "Others"), snapshot_interval_minutes=60)
        )
        others = m.watch("other", "Others")
        framed = len(frame(encode(Events("In", [0], [("",)]))))
        room = (1 << 20) - journals.sizes()["counts"]
        journals.input_log.append(
            "counts", Events("In", [0], [("x" * (room - framed - 20),)])
        )  # 20 bytes left
        with pytest.raises(InputLogFull, match="input log of plan 'counts' is full"):
            m.ingress.publish_rows("s2:1.0.0", [(1,)])
        assert others == []  # the other plan did not take the refused bundle either
    finally:
        m.close()
