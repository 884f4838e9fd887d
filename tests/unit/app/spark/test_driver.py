"""Plans with `distributed_mode = "spark"` on a node with `[spark] enabled`, up to the Spark
session: the hand-off takes their input (checked) while Spark starts, one driver per checkpoint
directory, the node's adapters take their output exactly once, and the states and messages an
operator sees. The session is a function of the test's (Spark itself runs in
tests/integration/spark/test_node.py)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from app.config import Spark, load
from app.node.plans import PlanManager, PlanStatus
from app.persistence.errors import InputLogError
from app.registry import DataSource, ExecutionPlan, Formatter, OutputAdapter
from app.spark.driver import SparkDriver, plan_directory
from app.spark.errors import SparkPlanError
from engine.errors import ConfigError
from engine.events import Event
from tests.unit.app.node.test_plans import PLAN_A, Manager

SPARK_A = "@App:name('A')\n" + PLAN_A
NO_IMPORT = "@App:name('lonely')\ndefine stream In (v long);\nfrom In select v insert into Out;\n"


class Starting:
    """A Spark session that is still starting (the JVM takes seconds) until `fail` says why not."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def __call__(self, master: str) -> Any:
        self.calls += 1
        self.release.wait(10)
        msg = f"cannot start Spark on {master}: no cluster in a unit test"
        raise SparkPlanError(msg)


def spark_manager(m: Manager, tmp_path: Path, session: Starting, node: str = "n1") -> PlanManager:
    driver = SparkDriver(
        Spark(enabled=True, master="local[1]"), tmp_path / "spark", node, m.outputs, m.ingress, session
    )
    return PlanManager(m.catalog, m.ingress, m.outputs, spark=driver)


@pytest.fixture
def m(tmp_path: Path) -> Iterator[Manager]:
    manager = Manager(tmp_path)
    yield manager
    manager.close()


@pytest.fixture
def session() -> Iterator[Starting]:
    made = Starting()
    yield made
    made.release.set()


def handed_off(tmp_path: Path, plan: str) -> list[dict[str, Any]]:
    lines = []
    for path in sorted(plan_directory(tmp_path / "spark", plan).glob("*/in/*.jsonl")):
        lines += [json.loads(line) for line in path.read_text().splitlines()]
    return lines


def test_events_for_a_spark_plan_are_handed_off_while_spark_starts(
    m: Manager, tmp_path: Path, session: Starting
) -> None:
    plans = spark_manager(m, tmp_path, session)
    try:
        status = plans.apply([ExecutionPlan("A", SPARK_A, distributed_mode="spark").checked()])
        assert status["A"].state == "starting" and "local[1]" in status["A"].message
        m.ingress.publish_rows("s1:1.0.0", [("web", 2), ("app", 7)], [1000, 1001])
        assert handed_off(tmp_path, "A") == [
            {"i": 0, "stream": "In", "timestamp": 1000, "data": ["web", 2]},
            {"i": 1, "stream": "In", "timestamp": 1001, "data": ["app", 7]},
        ]
        m.ingress.publish_rows("s1:1.0.0", [("web", "not a number")])  # refused at the door, not in Spark
        assert len(handed_off(tmp_path, "A")) == 2 and m.ingress.stats().failed == 1
        assert plans.spark_status()["A"]["state"] == "starting"
        session.release.set()  # Spark cannot start: the plan says why
        assert wait(lambda: plans.status()["A"].state == "failed")
        assert plans.status()["A"].message == "cannot start Spark on local[1]: no cluster in a unit test"
    finally:
        session.release.set()
        plans.stop()


def test_one_driver_per_checkpoint_directory(m: Manager, tmp_path: Path, session: Starting) -> None:
    first = spark_manager(m, tmp_path, session, "n1")
    second = spark_manager(m, tmp_path, session, "n2")  # another node with the same [spark] dir
    plan = ExecutionPlan("A", SPARK_A, distributed_mode="spark").checked()
    try:
        assert first.apply([plan])["A"].state == "starting"
        refused = second.apply([plan])["A"]
        assert refused.state == "failed"
        assert (
            refused.message.startswith("checkpoint directory ")
            and "is in use by node n1 (pid " in refused.message
        )
        assert "give each node its own [spark] dir" in refused.message
        first.apply([])  # undeployed: the directory is free again
        assert second.apply([plan])["A"].state == "starting"
    finally:
        session.release.set()
        first.stop()
        second.stop()


def test_a_spark_plan_must_import_a_stream(m: Manager, tmp_path: Path, session: Starting) -> None:
    plans = spark_manager(m, tmp_path, session)
    try:
        status = plans.apply([ExecutionPlan("lonely", NO_IMPORT, distributed_mode="spark").checked()])
        assert status["lonely"] == PlanStatus(
            "lonely",
            "failed",
            "a plan on Spark reads only what the node receives: @Import at least one stream",
        )
        assert session.calls == 0
    finally:
        plans.stop()


def test_a_changed_text_gets_a_directory_of_its_own(m: Manager, tmp_path: Path, session: Starting) -> None:
    plans = spark_manager(m, tmp_path, session)
    try:
        plans.apply([ExecutionPlan("A", SPARK_A, distributed_mode="spark").checked()])
        m.ingress.publish_rows("s1:1.0.0", [("web", 2)], [1000])
        plans.apply(
            [ExecutionPlan("A", SPARK_A.replace("v > 1", "v > 2"), distributed_mode="spark").checked()]
        )
        m.ingress.publish_rows("s1:1.0.0", [("web", 3)], [2000])
        texts = sorted(
            p.parent.parent.name for p in plan_directory(tmp_path / "spark", "A").glob("*/in/*.jsonl")
        )
        assert len(set(texts)) == 2  # the new text reads only what came after it
    finally:
        session.release.set()
        plans.stop()


def test_a_spark_plans_output_reaches_the_node_adapters_once(
    m: Manager, tmp_path: Path, session: Starting
) -> None:
    db = tmp_path / "out.db"

    def attributes(stream_id: str) -> Sequence[tuple[str, Any]] | None:
        known = m.catalog.get(stream_id)
        return None if known is None else known.attributes

    adapter = {
        "datasource": "db",
        "table": "t",
        "create_table": True,
        "columns": [{"name": "v", "type": "BIGINT"}],
    }
    m.outputs.configure(
        [OutputAdapter("out", "rdbms", adapter)],
        [Formatter("f", "s2:1.0.0", "out", "map", {})],
        [DataSource("db", f"sqlite:///{db}")],
        attributes,
    )
    plans = spark_manager(m, tmp_path, session)
    try:
        plans.apply([ExecutionPlan("A", SPARK_A, distributed_mode="spark").checked()])
        sink = plans.spark.plans()["A"].sinks["Out"]  # type: ignore[union-attr]
        sink.deliver([Event(1, (20,)), Event(2, (30,))], "cepheus_A_main", 0)
        sink.deliver([Event(1, (20,)), Event(2, (30,))], "cepheus_A_main", 0)  # replayed after a restart
        sink.deliver([Event(3, (40,))], "cepheus_A_main", 1)
        with closing(sqlite3.connect(db)) as conn:
            assert conn.execute("SELECT v FROM t ORDER BY rowid").fetchall() == [(20,), (30,), (40,)]
        assert m.outputs.stats()["out"].skipped == 2
        assert plans.emitted()[("A", "s2:1.0.0")] == 5
    finally:
        session.release.set()
        plans.stop()


def test_spark_configuration_defaults_and_checks() -> None:
    cfg = load(env={})
    assert (cfg.spark.enabled, cfg.spark.master, cfg.spark_dir) == (False, "local[*]", Path("var/spark"))
    cfg = load(env={"CEPHEUS__SPARK__ENABLED": "true", "CEPHEUS__SPARK__DIR": "/srv/spark"})
    assert cfg.spark.enabled and cfg.spark_dir == Path("/srv/spark")
    for key, value, message in (
        ("master", " ", 'spark.master must name a Spark master, e.g. "local[*]" or "spark://head:7077"'),
        ("trigger_seconds", 0, "spark.trigger_seconds must be positive, got 0.0"),
        ("watermark_delay_ms", -1, "spark.watermark_delay_ms must be 0 or more, got -1"),
        (
            "state_partitions",
            -2,
            "spark.state_partitions must be 0 (Spark's default parallelism) or more, got -2",
        ),
        ("drain_seconds", -1, "spark.drain_seconds must be 0 or more, got -1.0"),
    ):
        with pytest.raises(ConfigError) as caught:
            load(env={}, overrides={"spark": {key: value}})
        assert str(caught.value) == message
    with pytest.raises(
        ConfigError, match=r"^overrides: unknown key spark.workers \(known: enabled, master, dir"
    ):
        load(env={}, overrides={"spark": {"workers": 3}})


def wait(condition: Any, seconds: float = 5.0) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_bundle_the_hand_off_cannot_keep_is_refused(m: Manager, tmp_path: Path, session: Starting) -> None:
    plans = spark_manager(m, tmp_path, session)
    try:
        plans.apply([ExecutionPlan("A", SPARK_A, distributed_mode="spark").checked()])
        handoff = next(plan_directory(tmp_path / "spark", "A").glob("*/in"))
        shutil.rmtree(handoff)  # as a disk that fails: the receiver must not acknowledge
        with pytest.raises(InputLogError, match=f"^cannot write to the hand-off {handoff}: "):
            m.ingress.publish_rows("s1:1.0.0", [("web", 2)], [1000])
    finally:
        session.release.set()
        plans.stop()
