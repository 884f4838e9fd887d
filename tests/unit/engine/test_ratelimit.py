"""Output rate limiting: per N events and per time period (all, first, last), and snapshots."""

from __future__ import annotations

from tests.support.replaying import assert_restore_equivalent, events, run

ROWS = [("a",), ("b",), ("a",), ("c",), ("b",)]


def plan(rate: str, group: bool = False, window: str = "") -> str:
    g = " group by ip" if group else ""
    return f"define stream S (ip string); from S{window} select ip{g} output {rate} insert into Out;"


def test_every_n_events_releases_batches() -> None:
    c = run(plan("every 2 events"), events("S", ROWS))
    assert c.rows("Out") == [("a",), ("b",), ("a",), ("c",)]


def test_first_every_n_events_emits_first_of_each_period() -> None:
    c = run(plan("first every 2 events"), events("S", ROWS))
    assert c.rows("Out") == [("a",), ("a",), ("b",)]


def test_last_every_n_events() -> None:
    c = run(plan("last every 2 events"), events("S", ROWS))
    assert c.rows("Out") == [("b",), ("c",)]


def test_first_and_last_per_group() -> None:
    assert run(plan("first every 2 events", group=True), events("S", ROWS)).rows("Out") == [
        ("a",),
        ("b",),
        ("c",),
    ]
    assert run(plan("last every 3 events", group=True), events("S", ROWS)).rows("Out") == [("a",), ("b",)]


def test_time_based_limiters_fire_on_the_clock() -> None:
    items = events("S", ROWS, start=1000, step=300) + [{"time": 4000}]
    assert run(plan("every 1 sec"), items).rows("Out") == [("a",), ("b",), ("a",), ("c",), ("b",)]
    assert run(plan("last every 1 sec"), items).rows("Out") == [("c",), ("b",)]
    assert run(plan("first every 1 sec"), items).rows("Out") == [("a",), ("b",)]  # 1000, then 2200


def test_snapshot_repeats_the_window_contents_every_period() -> None:
    items = events("S", [("a",), ("b",)], start=1000, step=400) + [{"time": 3500}]
    c = run(plan("snapshot every 1 sec", window="#window.length(5)"), items)
    assert c.rows("Out") == [("a",), ("b",), ("a",), ("b",)]  # at 2000 and at 3000


def test_limiter_state_restores_exactly() -> None:
    items = events("S", ROWS, start=1000, step=300) + [{"time": 4000}]
    assert_restore_equivalent(plan("every 1 sec"), items)
    assert_restore_equivalent(plan("last every 2 events", group=True), events("S", ROWS))
