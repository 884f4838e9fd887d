"""The plans of the original WSO2 material (samples/)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import engine
from app.cli import main
from engine.query.definitions import find_annotation
from tests.support.replaying import events, run

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_pizza_plan_prints_exactly_the_three_delivered_orders() -> None:
    result = CliRunner().invoke(
        main,
        ["run", str(SAMPLES / "pizza" / "plan.siddhi"), "--input", str(SAMPLES / "pizza" / "events.jsonl")],
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["stream"], r["type"], r["data"]) for r in rows] == [
        ("deliveredOrders", "current", [1, "Tom"]),
        ("deliveredOrders", "current", [2, "John"]),
        ("deliveredOrders", "current", [3, "Ratha"]),
    ]


def test_rising_temperature_alerts_when_the_next_reading_is_over_a_degree_warmer() -> None:
    plan = (SAMPLES / "rising-temperature" / "plan.siddhi").read_text()
    temps = [20.0, 20.5, 22.0, 21.0, 23.5, 23.6, 30.0]
    c = run(plan, events("TempStream", [(t,) for t in temps]))
    assert c.rows("AlertStream") == [(20.5, 22.0), (21.0, 23.5), (23.6, 30.0)]


def test_temperature_plan_compiles_keeps_dist_annotations_and_runs_locally() -> None:
    plan = (SAMPLES / "temperature" / "plan.siddhi").read_text()
    app = engine.parse(plan)
    dist = [find_annotation(q.annotations, "dist") for q in app.elements]
    assert [d.get("execGroup") for d in dist] == ["group1", "group1", "group2"]
    assert dist[2].get("parallel") == "2"
    items = events(
        "TempStream", [(1, 101, 35.0), (2, 101, 41.0), (3, 105, 45.0), (4, 120, 50.0)], step=60_000
    )
    c = run(plan, items)
    assert c.rows("HighTempStream") == [(101, 41.0), (105, 45.0)]
    assert c.rows("AlertStream") == [(101, 35.0, 41.0)]
    averages = c.rows("AvgTempStream", "current")
    assert averages[0] == (35.0, 101, 1) and averages[1] == (38.0, 101, 2)
