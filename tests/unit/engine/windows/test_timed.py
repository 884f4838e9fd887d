"""timeLength and delay windows (spec §1.7, §1.11)."""

from __future__ import annotations

import pytest

import engine
from engine.types import AttrType
from tests.support.replaying import assert_restore_equivalent, events
from tests.unit.engine.windows.harness import Harness

TYPES = [AttrType.STRING, AttrType.INT]
A, B, C = ("a", 1), ("b", 2), ("c", 3)
PLAN = "define stream S (sym string, v int); from S#window.{w} select sym, v insert all events into Out;"
AGG = "define stream S (sym string, v int); from S#window.{w} select sym, sum(v) as total insert all events into Out;"


def test_time_length_expires_the_oldest_event_when_full() -> None:
    h = Harness("timeLength", [1000, 2], TYPES)
    h.send(1000, A)
    h.send(1100, B)
    h.send(1200, C)
    assert h.take() == [[(1000, "C", A)], [(1100, "C", B)], [(1200, "E", A), (1200, "C", C)]]


def test_time_length_expires_events_on_the_clock() -> None:
    h = Harness("timeLength", [1000, 2], TYPES)
    h.send(1000, A)
    h.send(1100, B)
    h.take()
    h.advance(2100)  # the timer due at 2000 fires with the clock at 2100: b's time is up too
    assert h.take() == [[(2100, "E", A), (2100, "E", B)]]
    assert h.contents() == []


def test_time_length_of_zero_keeps_nothing() -> None:
    h = Harness("timeLength", [1000, 0], TYPES)
    h.send(1000, A)
    h.advance(5000)
    assert h.take() == [[(1000, "C", A)]]


def test_delay_releases_events_as_current_stamped_with_the_release_time() -> None:
    h = Harness("delay", [500], TYPES)
    h.send(1000, A)
    h.send(1200, B)
    assert h.take() == []
    h.advance(1500)
    assert h.take() == [[(1500, "C", A)]]
    h.send(1800, C)  # b was due at 1700: the timer releases it before c is taken in
    assert h.take() == [[(1800, "C", B)]]
    assert h.contents() == [C]


@pytest.mark.parametrize(
    "window",
    [
        "timeLength(1 sec)",
        "timeLength(1 sec, 2L)",
        "timeLength(v, 2)",
        "delay()",
        "delay(v)",
        "delay('1 sec')",
    ],
)
def test_timed_windows_reject_bad_parameters(window: str) -> None:
    with pytest.raises(engine.QueryError):
        engine.compile(PLAN.format(w=window))


def test_timed_windows_restore_exactly() -> None:
    rows = [A, B, C, ("d", 4), ("e", 5)]
    items = events("S", rows, step=300) + [{"time": 4000}]
    for w in ("timeLength(1 sec, 2)", "delay(700 millisec)"):
        assert_restore_equivalent(AGG.format(w=w), items)
