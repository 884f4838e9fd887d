"""`PlanManager`: plans deployed from the registry, chained through @Import/@Export, on the wall clock."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import engine
from app.config import Adapters
from app.node.catalog import StreamCatalog
from app.node.ingress import Ingress
from app.node.outputs import OutputHub
from app.node.plans import SPARK_ELSEWHERE, PlanManager, PlanStatus
from app.persistence.snapshot_keeper import Restored
from app.registry import (
    Attribute,
    DataSource,
    ExecutionPlan,
    Formatter,
    OutputAdapter,
    Registry,
    StreamDefinition,
)
from engine import CEPError, Event

CYCLE = "its @Import/@Export streams form a cycle with other plans; break the cycle"

# s1 (meta src, payload v) → A → s2 (v) → B → s3 (v)
PLAN_A = """
@Import('s1:1.0.0') define stream In (meta_src string, v long);
@Export('s2:1.0.0') define stream Out (v long);
from In[v > 1] select v * 10 as v insert into Out;
"""
PLAN_B = """
@Import('s2:1.0.0') define stream In (v long);
@Export('s3:1.0.0') define stream Out (v long);
from In select v + 1 as v insert into Out;
"""
SUMS = """
@Import('s2:1.0.0') define stream In (v long);
define stream Sums (total long);
from In#window.length(10) select sum(v) as total insert into Sums;
"""


class Manager:
    """A plan manager over a real registry, with the ingress and output hub it feeds."""

    def __init__(self, tmp_path: Path) -> None:
        self.registry = Registry(f"sqlite:///{tmp_path / 'registry.db'}")
        self.registry.migrate()
        self.registry.put_stream(
            StreamDefinition("s1", meta=(Attribute("src", "STRING"),), payload=(Attribute("v", "LONG"),))
        )
        for name in ("s2", "s3"):
            self.registry.put_stream(StreamDefinition(name, payload=(Attribute("v", "LONG"),)))
        self.catalog = StreamCatalog(self.registry)
        self.catalog.reload()
        self.ingress = Ingress()
        self.outputs = OutputHub(Adapters(), stop_timeout=5.0)
        self.plans = PlanManager(self.catalog, self.ingress, self.outputs)

    def apply(self, *plans: ExecutionPlan) -> dict[str, PlanStatus]:
        return self.plans.apply([p.checked() for p in plans])

    def watch(self, plan: str, stream: str) -> list[list[Any]]:
        """Every chunk emitted into `stream` of the running `plan`, as lists of data tuples."""
        got: list[list[Any]] = []
        runtime = self.plans.runtime(plan)
        assert runtime is not None
        runtime.subscribe(stream, lambda events: got.append([tuple(e.data) for e in events]))
        return got

    def close(self) -> None:
        self.plans.stop()
        self.outputs.stop()
        self.registry.close()


@pytest.fixture
def m(tmp_path: Path) -> Iterator[Manager]:
    manager = Manager(tmp_path)
    yield manager
    manager.close()


def running(*names: str) -> dict[str, PlanStatus]:
    return {name: PlanStatus(name, "running") for name in names}


def wait_for(condition: Callable[[], bool], seconds: float = 3.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_a_deployed_plan_takes_imported_events_and_exports_its_results(m: Manager) -> None:
    assert m.apply(ExecutionPlan("A", PLAN_A)) == running("A")
    assert m.plans.deployed() == ["A"]
    assert m.plans.status() == running("A")
    out = m.watch("A", "Out")
    m.ingress.publish_rows("s1:1.0.0", [("web", 1), ("web", 5), ("app", 7)], [1000, 1001, 1002])
    assert out == [[(50,), (70,)]]
    assert m.ingress.stats().received == {"s1:1.0.0": 3}


def test_exported_events_reach_the_output_adapters(m: Manager, tmp_path: Path) -> None:
    db = tmp_path / "out.db"

    def attributes(stream_id: str) -> Sequence[tuple[str, Any]] | None:
        known = m.catalog.get(stream_id)
        return None if known is None else known.attributes

    problems = m.outputs.configure(
        [
            OutputAdapter(
                "out",
                "rdbms",
                {
                    "datasource": "db",
                    "table": "t",
                    "create_table": True,
                    "columns": [{"name": "v", "type": "BIGINT"}],
                },
            )
        ],
        [Formatter("f", "s2:1.0.0", "out", "map", {})],
        [DataSource("db", f"sqlite:///{db}")],
        attributes,
    )
    assert problems == []
    m.apply(ExecutionPlan("A", PLAN_A))
    m.ingress.publish_rows("s1:1.0.0", [("web", 2), ("web", 0), ("web", 3)])
    assert m.outputs.flush(5.0)
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT v FROM t ORDER BY rowid").fetchall() == [(20,), (30,)]


def test_a_plan_importing_what_another_exports_receives_its_output(m: Manager) -> None:
    assert m.apply(ExecutionPlan("A", PLAN_A), ExecutionPlan("B", PLAN_B)) == running("A", "B")
    out = m.watch("B", "Out")
    m.ingress.publish_rows("s1:1.0.0", [("web", 4), ("web", 1), ("web", 6)], [5000, 5001, 5002])
    assert out == [[(41,), (61,)]]


def test_an_unchanged_plan_keeps_its_runtime_and_state(m: Manager) -> None:
    m.apply(ExecutionPlan("sums", SUMS))
    runtime = m.plans.runtime("sums")
    sums = m.watch("sums", "Sums")
    m.ingress.publish_rows("s2:1.0.0", [(1,)])
    assert m.apply(ExecutionPlan("sums", SUMS)) == running("sums")
    assert m.plans.runtime("sums") is runtime
    m.ingress.publish_rows("s2:1.0.0", [(2,)])
    assert sums == [[(1,)], [(3,)]]


def test_a_changed_plan_is_redeployed_with_fresh_state(m: Manager) -> None:
    m.apply(ExecutionPlan("sums", SUMS))
    old = m.plans.runtime("sums")
    assert old is not None
    m.ingress.publish_rows("s2:1.0.0", [(1,)])
    assert m.apply(ExecutionPlan("sums", SUMS.replace("length(10)", "length(5)"))) == running("sums")
    new = m.plans.runtime("sums")
    assert new is not None and new is not old
    sums = m.watch("sums", "Sums")
    m.ingress.publish_rows("s2:1.0.0", [(2,)])
    assert sums == [[(2,)]]
    with pytest.raises(CEPError, match="has been shut down"):
        old.send("In", [(1,)])


def test_a_redeployed_plan_keeps_the_state_of_its_unchanged_queries(
    m: Manager, caplog: pytest.LogCaptureFixture
) -> None:
    m.apply(ExecutionPlan("sums", SUMS))
    m.ingress.publish_rows("s2:1.0.0", [(1,)])
    edited = SUMS + "-- doubled too\nfrom In select v * 2 as total insert into Sums;\n"
    with caplog.at_level(logging.INFO, logger="app.node.plans"):
        assert m.apply(ExecutionPlan("sums", edited)) == running("sums")
    sums = m.watch("sums", "Sums")
    m.ingress.publish_rows("s2:1.0.0", [(2,)])
    assert sorted(row for chunk in sums for row in chunk) == [
        (3,),
        (4,),
    ]  # the window kept 1 (1 + 2); the new query doubled 2
    assert any("carried its state over" in r.getMessage() for r in caplog.records)


def test_a_changed_stream_definition_redeploys_the_plans_bound_to_it(m: Manager) -> None:
    m.apply(ExecutionPlan("A", PLAN_A), ExecutionPlan("B", PLAN_B))
    a, b = m.plans.runtime("A"), m.plans.runtime("B")
    streams = {s.id: s for s in m.registry.list_streams()}
    streams["s3:1.0.0"] = StreamDefinition("s3", payload=(Attribute("v", "LONG"), Attribute("w", "INT")))
    m.catalog.replace(streams.values())
    status = m.apply(ExecutionPlan("A", PLAN_A), ExecutionPlan("B", PLAN_B))
    assert status["A"] == PlanStatus("A", "running")
    assert status["B"] == PlanStatus(
        "B", "failed", "stream Out does not match the definition of s3:1.0.0 (v long, w int)"
    )
    assert m.plans.runtime("A") is a
    assert m.plans.runtime("B") is None and b is not None
    assert m.plans.deployed() == ["A"]


def test_a_plan_that_does_not_compile_fails_without_affecting_the_others(m: Manager) -> None:
    bad = "@Import('s2:1.0.0') define stream In (v long);\nfrom In select nope insert into Out;\n"
    status = m.apply(ExecutionPlan("bad", bad), ExecutionPlan("A", PLAN_A))
    assert status["A"] == PlanStatus("A", "running")
    assert status["bad"].state == "failed"
    assert status["bad"].message.startswith("plan bad:2:16: ")
    assert "nope" in status["bad"].message
    assert m.plans.deployed() == ["A"]
    out = m.watch("A", "Out")
    m.ingress.publish_rows("s1:1.0.0", [("web", 2)])
    assert out == [[(20,)]]


def test_a_failed_redeploy_takes_the_old_version_down(m: Manager) -> None:
    m.apply(ExecutionPlan("A", PLAN_A))
    status = m.apply(ExecutionPlan("A", PLAN_A + "from Nowhere select x insert into Out;\n"))
    assert status["A"].state == "failed" and status["A"].message.startswith("plan A:")
    assert m.plans.runtime("A") is None
    assert dict(m.ingress.routes()) == {}


def test_disabled_and_spark_plans_do_not_run_here_without_spark_enabled(m: Manager) -> None:
    m.apply(ExecutionPlan("A", PLAN_A))
    status = m.apply(
        ExecutionPlan("A", PLAN_A, enabled=False),
        ExecutionPlan("B", PLAN_B, distributed_mode="spark"),
        ExecutionPlan("sums", SUMS, distributed_mode="redundant"),
    )
    assert status == {
        "A": PlanStatus("A", "disabled"),
        "B": PlanStatus("B", "elsewhere", SPARK_ELSEWHERE),
        "sums": PlanStatus("sums", "running"),
    }
    assert m.plans.deployed() == ["sums"]
    assert sorted(m.ingress.routes()) == ["s2:1.0.0"]


def test_a_removed_plan_is_undeployed(m: Manager) -> None:
    m.apply(ExecutionPlan("A", PLAN_A))
    runtime = m.plans.runtime("A")
    assert runtime is not None
    assert m.apply() == {}
    assert m.plans.deployed() == [] and dict(m.ingress.routes()) == {}
    m.ingress.publish_rows("s1:1.0.0", [("web", 2)])
    assert m.ingress.stats().unrouted == {"s1:1.0.0": 1}
    with pytest.raises(CEPError, match="has been shut down"):
        runtime.send("In", [("web", 2)])


def test_stream_attributes_must_match_the_registered_definition(m: Manager) -> None:
    wrong = "@Import('s1:1.0.0') define stream In (src string, v long);\nfrom In select v insert into O;\n"
    undefined = "@Import('nope:1.0.0') define stream In (v long);\nfrom In select v insert into O;\n"
    status = m.plans.apply([ExecutionPlan("wrong", wrong), ExecutionPlan("undefined", undefined)])
    assert status == {
        "wrong": PlanStatus(
            "wrong", "failed", "stream In does not match the definition of s1:1.0.0 (meta_src string, v long)"
        ),
        "undefined": PlanStatus("undefined", "failed", "stream nope:1.0.0 (@Import of In) is not defined"),
    }
    assert m.plans.deployed() == []


def test_plans_forming_an_export_import_cycle_both_fail(m: Manager) -> None:
    back = "@Import('s3:1.0.0') define stream In (v long);\n@Export('s2:1.0.0') define stream Out (v long);\nfrom In select v insert into Out;\n"
    status = m.apply(ExecutionPlan("A", PLAN_A), ExecutionPlan("B", PLAN_B), ExecutionPlan("back", back))
    assert status == {
        "A": PlanStatus("A", "running"),  # feeds the cycle but is not on it
        "B": PlanStatus("B", "failed", CYCLE),
        "back": PlanStatus("back", "failed", CYCLE),
    }
    assert m.plans.deployed() == ["A"]
    assert sorted(m.ingress.routes()) == ["s1:1.0.0"]


def test_a_plan_closing_a_cycle_is_refused_and_the_running_ones_stay(m: Manager) -> None:
    back = "@Import('s3:1.0.0') define stream In (v long);\n@Export('s2:1.0.0') define stream Out (v long);\nfrom In select v insert into Out;\n"
    m.apply(ExecutionPlan("B", PLAN_B))
    running = m.plans.runtime("B")
    status = m.apply(ExecutionPlan("B", PLAN_B), ExecutionPlan("back", back))
    assert status == {"B": PlanStatus("B", "running"), "back": PlanStatus("back", "failed", CYCLE)}
    assert m.plans.runtime("B") is running


def test_breaking_the_cycle_deploys_the_plans_again(m: Manager) -> None:
    back = "@Import('s3:1.0.0') define stream In (v long);\n@Export('s2:1.0.0') define stream Out (v long);\nfrom In select v insert into Out;\n"
    m.apply(ExecutionPlan("B", PLAN_B), ExecutionPlan("back", back))
    assert m.apply(ExecutionPlan("B", PLAN_B), ExecutionPlan("back", back, enabled=False)) == {
        "B": PlanStatus("B", "running"),
        "back": PlanStatus("back", "disabled"),
    }
    assert m.plans.deployed() == ["B"]


def test_the_clock_fires_timers_without_further_events(m: Manager) -> None:
    batch = """
    @Import('s2:1.0.0') define stream In (v long);
    define stream Totals (total long);
    from In#window.timeBatch(100 millisecond) select sum(v) as total insert into Totals;
    """
    m.apply(ExecutionPlan("batch", batch))
    totals = m.watch("batch", "Totals")
    m.ingress.publish_rows("s2:1.0.0", [(3,), (4,)])
    time.sleep(0.15)
    assert totals == []  # nothing fires the timer yet
    m.plans.start_clock()
    assert wait_for(lambda: bool(totals))
    assert totals[0] == [(7,)]
    m.plans.stop()
    assert m.plans.deployed() == [] and dict(m.ingress.routes()) == {}
    emitted = len(totals)
    time.sleep(0.15)
    assert len(totals) == emitted


def test_exports_carry_the_event_timestamps(m: Manager) -> None:
    m.apply(ExecutionPlan("A", PLAN_A), ExecutionPlan("B", PLAN_B))
    seen: list[Event] = []
    runtime = m.plans.runtime("B")
    assert runtime is not None
    runtime.subscribe("In", seen.extend)
    m.ingress.publish_rows("s1:1.0.0", [("web", 2), ("web", 3)], [1111, 2222])
    assert [(e.timestamp, tuple(e.data)) for e in seen] == [(1111, (20,)), (2222, (30,))]


COUNTS = """
@Import('s2:1.0.0') define stream In (v long);
define stream Counts (n long);
@info(name='count') from In select count() as n insert into Counts;
"""


def test_events_flowing_during_a_redeploy_all_reach_the_kept_state(tmp_path: Path) -> None:
    m = Manager(tmp_path)

    def slow_compile(text: str, wall_time: Callable[[], int] | None) -> engine.Runtime:
        time.sleep(0.05)  # a plan that takes a while to compile widens the window a loss would need
        return engine.compile(text, clock="wall", wall_time=wall_time)

    m.plans = PlanManager(m.catalog, m.ingress, m.outputs, compile_plan=slow_compile)
    try:
        m.apply(ExecutionPlan("counts", COUNTS))
        seen: list[int] = []
        stop = threading.Event()
        published = [0]

        def publish() -> None:
            while not stop.is_set():
                m.ingress.publish_rows("s2:1.0.0", [(1,)])
                published[0] += 1

        def watch_latest() -> None:
            runtime = m.plans.runtime("counts")
            assert runtime is not None
            runtime.subscribe("Counts", lambda events: seen.extend(e.data[0] for e in events))

        publisher = threading.Thread(target=publish)
        publisher.start()
        for i in range(8):
            m.apply(
                ExecutionPlan(
                    "counts", COUNTS + f"-- edit {i}\nfrom In select v as n insert into Counts;\n" * (i % 2)
                )
            )
        stop.set()
        publisher.join(30)
        watch_latest()
        m.ingress.publish_rows("s2:1.0.0", [(1,)])
        assert published[0] > 100
        assert max(seen) == published[0] + 1  # every event counted once, across eight hand-overs
    finally:
        m.close()


def test_a_failing_restore_hook_never_keeps_a_plan_from_running(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    m = Manager(tmp_path)

    def broken(plan: ExecutionPlan, runtime: engine.Runtime) -> Restored:
        raise RuntimeError("registry went away")

    m.plans = PlanManager(m.catalog, m.ingress, m.outputs, restore=broken)
    try:
        assert m.apply(ExecutionPlan("counts", COUNTS, snapshot_interval_minutes=1)) == running("counts")
        assert "restoring its snapshot failed" in caplog.text
    finally:
        m.close()


def test_the_counts_for_metrics_follow_a_bundle_through_chained_plans(m: Manager) -> None:
    m.apply(ExecutionPlan("A", PLAN_A), ExecutionPlan("B", PLAN_B))
    m.ingress.publish_rows("s1:1.0.0", [("web", 4), ("web", 1), ("web", 6)], [5000, 5001, 5002])
    m.ingress.publish_rows("s1:1.0.0", [("web", 9)], [5003])
    m.ingress.publish_rows("s3:1.0.0", [(1,)], [5004])  # no plan imports it
    stats = m.ingress.stats()
    assert stats.received == {"s1:1.0.0": 4, "s3:1.0.0": 1}
    assert stats.unrouted == {"s3:1.0.0": 1}
    assert m.plans.emitted() == {("A", "s2:1.0.0"): 3, ("B", "s3:1.0.0"): 3}
    # one observation per bundle from a receiver; B's share is timed inside A's send
    assert {plan: sum(h.counts) for plan, h in stats.latency.items()} == {"A": 2}
    assert stats.latency["A"].seconds > 0


def test_a_plan_restoring_its_snapshot_is_reported_until_it_runs(tmp_path: Path) -> None:
    m = Manager(tmp_path)
    seen: list[dict[str, str]] = []

    def restore(plan: ExecutionPlan, runtime: engine.Runtime) -> Restored:
        seen.append(m.plans.restoring())
        return Restored()

    m.plans = PlanManager(m.catalog, m.ingress, m.outputs, restore=restore)
    try:
        assert m.apply(ExecutionPlan("counts", COUNTS, snapshot_interval_minutes=1)) == running("counts")
        assert seen == [{"counts": "restoring a snapshot"}]
        assert m.plans.restoring() == {}
    finally:
        m.close()
