"""length and time windows."""

from __future__ import annotations

from tests.support.replaying import assert_restore_equivalent, events, run

PLAN = "define stream S (sym string, v int); from S#window.{w} select sym, sum(v) as total insert all events into Out;"


def test_length_window_expires_oldest_event_before_the_new_one() -> None:
    c = run(PLAN.format(w="length(2)"), events("S", [("a", 1), ("b", 2), ("c", 3)]))
    assert c.records[-1][2:] == ("current", ("c", 5))
    assert c.rows("Out", "current") == [("a", 1), ("b", 3), ("c", 5)]


def test_time_window_expires_each_event_when_its_time_is_up() -> None:
    # a clock marker past both expiries fires each at its own moment, as real time does
    items = events("S", [("a", 1), ("b", 2)], start=1000, step=500) + [{"time": 2600}]
    c = run(PLAN.format(w="time(1 sec)"), items)
    expired = [(t, r) for _, t, k, r in c.records if k == "expired"]
    assert expired == [(2000, ("a", 2)), (2500, ("b", None))]  # sum of nothing is null


def test_length_and_time_windows_restore_exactly() -> None:
    rows = [("a", 1), ("b", 2), ("c", 3), ("d", 4), ("e", 5)]
    assert_restore_equivalent(PLAN.format(w="length(3)"), events("S", rows))
    items = events("S", rows, step=400) + [{"time": 5000}]
    assert_restore_equivalent(PLAN.format(w="time(1 sec)"), items)
