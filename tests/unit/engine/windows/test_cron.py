"""cron window (spec §1.15), on the engine clock."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import engine
from engine.runtime.windows.cron import next_fire, parse_cron
from engine.types import AttrType
from tests.support.replaying import assert_restore_equivalent, events
from tests.unit.engine.windows.harness import Harness

TYPES = [AttrType.STRING, AttrType.INT]
PLAN = "define stream S (sym string, v int); from S#window.{w} select sym, v insert all events into Out;"


def _ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> int:
    return int(datetime(year, month, day, hour, minute, second, tzinfo=UTC).timestamp()) * 1000


def test_cron_window_releases_held_events_at_each_fire_time() -> None:
    h = Harness("cron", ["*/5 * * * * ?"], TYPES)
    h.window.start()
    h.send(1000, ("a", 1), ("b", 2))
    assert h.take() == []
    h.advance(5000)
    assert h.take() == [[(1000, "C", ("a", 1)), (1000, "C", ("b", 2))]]
    h.advance(10_000)  # nothing new arrived: nothing is released, a and b stay
    assert h.take() == []
    h.send(12_000, ("c", 3))
    h.advance(15_000)
    assert h.take() == [[(15_000, "E", ("a", 1)), (15_000, "E", ("b", 2)), (12_000, "C", ("c", 3))]]


@pytest.mark.parametrize(
    ("expression", "after", "fires"),
    [
        ("0 15 10 ? * MON-FRI", 0, _ms(1970, 1, 1, 10, 15)),
        ("0 0/5 14,18 * * ?", _ms(2023, 11, 14, 22, 13, 20), _ms(2023, 11, 15, 14, 0)),
        ("0 0 12 1 JAN ? 2030", _ms(2023, 11, 14), _ms(2030, 1, 1, 12)),
        ("30 59 23 ? * SAT-SUN", _ms(2024, 3, 4), _ms(2024, 3, 9, 23, 59, 30)),
        ("*/5 * * * * ?", 5000, 10_000),
    ],
)
def test_cron_fire_times_follow_quartz_fields(expression: str, after: int, fires: int) -> None:
    assert next_fire(parse_cron(expression), after) == fires


@pytest.mark.parametrize(
    "window",
    ["cron()", "cron(5)", "cron(sym)", "cron('* * * * *')", "cron('* * * * * *')", "cron('0 0 0 L * ?')"],
)
def test_cron_rejects_bad_parameters(window: str) -> None:
    with pytest.raises(engine.QueryError):
        engine.compile(PLAN.format(w=window))


def test_cron_restores_exactly() -> None:
    items = events("S", [("a", 1), ("b", 2), ("c", 3), ("d", 4)], step=3000) + [{"time": 20_000}]
    assert_restore_equivalent(PLAN.format(w="cron('*/5 * * * * ?')"), items)
