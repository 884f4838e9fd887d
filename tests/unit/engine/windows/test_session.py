"""session window (spec §1.13)."""

from __future__ import annotations

import pytest

import engine
from engine.events import Chunk
from engine.types import AttrType
from tests.support.replaying import assert_restore_equivalent, events
from tests.unit.engine.windows.harness import Harness, attr

TYPES = [AttrType.STRING, AttrType.INT]
PLAN = "define stream S (sym string, v int); from S#window.{w} select sym, v insert all events into Out;"
AGG = "define stream S (sym string, v int); from S#window.{w} select sym, count() as n insert all events into Out;"


def test_session_passes_events_through_and_expires_a_session_after_the_gap() -> None:
    h = Harness("session", [1000, attr(0)], TYPES)
    h.send(1000, ("a", 1))
    h.send(1500, ("a", 2))
    h.send(1600, ("b", 3))
    assert h.take() == [[(1000, "C", ("a", 1))], [(1500, "C", ("a", 2))], [(1600, "C", ("b", 3))]]
    h.advance(2500)  # a's session: last event 1500 + gap
    assert h.take() == [[(1000, "E", ("a", 1)), (1500, "E", ("a", 2))]]
    h.advance(2600)
    assert h.take() == [[(1600, "E", ("b", 3))]]
    assert h.contents() == []  # a join finds nothing in a session window


def test_session_late_events_go_in_at_the_sessions_iterator_position() -> None:
    h = Harness("session", [1000, attr(0)], TYPES)
    h.send(2000, ("a", 1))
    h.send(2500, ("a", 2))
    h.window.process(_chunk(1800, ("a", 3)))  # late, within the gap: goes in before a1
    h.window.process(_chunk(1700, ("a", 4)))  # Siddhi's iterator has moved on: goes in after a1
    h.take()
    h.advance(3500)
    assert h.take() == [
        [(1800, "E", ("a", 3)), (2000, "E", ("a", 1)), (1700, "E", ("a", 4)), (2500, "E", ("a", 2))]
    ]


def test_session_drops_an_event_too_late_for_its_session() -> None:
    h = Harness("session", [1000], TYPES)
    h.send(3000, ("a", 1))
    h.window.process(_chunk(1500, ("x", 2)))
    assert h.take() == [[(3000, "C", ("a", 1))]]


def test_session_allowed_latency_lets_a_late_event_merge_the_closed_session() -> None:
    h = Harness("session", [1000, attr(0), 500], TYPES)
    h.send(1000, ("a", 1))
    h.advance(2000)  # closed, kept as the previous session until 2500
    h.send(2300, ("a", 2))
    h.window.process(_chunk(1500, ("a", 3)))  # joins the new session, which then merges the old one
    assert h.take() == [[(1000, "C", ("a", 1))], [(2300, "C", ("a", 2))], [(1500, "C", ("a", 3))]]
    h.advance(3300)
    assert h.take() == []  # closed at 3300, kept for late events until 3800
    h.advance(3800)
    assert h.take() == [[(1500, "E", ("a", 3)), (1000, "E", ("a", 1)), (2300, "E", ("a", 2))]]


def test_session_sessions_closing_together_expire_in_java_hash_order() -> None:
    h = Harness("session", [1000, attr(0)], TYPES)
    h.send(1000, ("b", 1), ("a", 2))
    h.advance(2000)
    assert h.take()[-1] == [(1000, "E", ("a", 2)), (1000, "E", ("b", 1))]


def _chunk(t: int, *rows: tuple[str, int]) -> Chunk:
    return Chunk([t] * len(rows), list(rows))


@pytest.mark.parametrize(
    "window",
    [
        "session()",
        "session(5000)",
        "session(5 sec, 2 sec)",
        "session(5 sec, 'k')",
        "session(5 sec, v)",
        "session(1 sec, sym, 2 sec)",
        "session(1 sec, sym, 500)",
        "session(1 sec, sym, 1 sec, 1)",
    ],
)
def test_session_rejects_bad_parameters(window: str) -> None:
    with pytest.raises(engine.QueryError):
        engine.compile(PLAN.format(w=window))


def test_session_restores_exactly() -> None:
    rows = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5), ("a", 6)]
    items = events("S", rows, step=400) + [{"time": 5000}]
    for w in (
        "session(700 millisec, sym)",
        "session(900 millisec, sym, 300 millisec)",
        "session(500 millisec)",
    ):
        assert_restore_equivalent(AGG.format(w=w), items)
