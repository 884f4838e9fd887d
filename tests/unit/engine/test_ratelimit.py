"""Output rate limiting: per N events and per time period (all, first, last), and snapshots."""

from __future__ import annotations

from typing import Any

import pytest

from engine.events import CURRENT, Chunk
from engine.runtime.clock import Scheduler
from engine.runtime.ratelimit import EventLimiterSpec, LimiterEnv
from engine.runtime.state import decode, encode
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


# ---- every kind of limiter: what it emits, and that a snapshot at any point changes nothing --

ROWS_KV = [("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5), ("a", 6), ("c", 7), ("a", 8), ("b", 9)]


def timeline() -> list[dict[str, Any]]:
    """Events 100 ms to 800 ms apart, then the clock runs on past three more periods."""
    out: list[dict[str, Any]] = []
    t = 1000
    for i, row in enumerate(ROWS_KV):
        out.append({"stream": "S", "timestamp": t, "data": list(row)})
        t += [300, 450, 800, 100][i % 4]
    out.append({"time": t + 2500})
    return out


# (window, selection, output clause) -> (timestamp, row) of every event emitted (all current)
KINDS: dict[str, tuple[str, str, str, list[tuple[int, tuple[Any, ...]]]]] = {
    "all_per_event": (
        "",
        "select ip, v",
        "output every 3 events",
        [
            (1000, ("a", 1)),
            (1300, ("b", 2)),
            (1750, ("a", 3)),
            (2550, ("c", 4)),
            (2650, ("b", 5)),
            (2950, ("a", 6)),
            (3400, ("c", 7)),
            (4200, ("a", 8)),
            (4300, ("b", 9)),
        ],
    ),
    "first_per_event": (
        "",
        "select ip, v",
        "output first every 3 events",
        [(1000, ("a", 1)), (2550, ("c", 4)), (3400, ("c", 7))],
    ),
    "first_group_per_event": (
        "",
        "select ip, v group by ip",
        "output first every 2 events",
        [(1000, ("a", 1)), (1300, ("b", 2)), (2550, ("c", 4)), (2950, ("a", 6)), (4300, ("b", 9))],
    ),
    "last_per_event": (
        "",
        "select ip, v",
        "output last every 3 events",
        [(1750, ("a", 3)), (2950, ("a", 6)), (4300, ("b", 9))],
    ),
    "last_group_per_event": (
        "",
        "select ip, v group by ip",
        "output last every 3 events",
        [
            (1750, ("a", 3)),
            (1300, ("b", 2)),
            (2550, ("c", 4)),
            (2650, ("b", 5)),
            (2950, ("a", 6)),
            (3400, ("c", 7)),
            (4200, ("a", 8)),
            (4300, ("b", 9)),
        ],
    ),
    "all_per_time": (
        "",
        "select ip, v",
        "output all every 1 sec",
        [
            (1000, ("a", 1)),
            (1300, ("b", 2)),
            (1750, ("a", 3)),
            (2550, ("c", 4)),
            (2650, ("b", 5)),
            (2950, ("a", 6)),
            (3400, ("c", 7)),
            (4200, ("a", 8)),
            (4300, ("b", 9)),
        ],
    ),
    "first_per_time": (
        "",
        "select ip, v",
        "output first every 1 sec",
        [(1000, ("a", 1)), (2550, ("c", 4)), (4200, ("a", 8))],
    ),
    "first_group_per_time": (
        "",
        "select ip, v group by ip",
        "output first every 1 sec",
        [
            (1000, ("a", 1)),
            (1300, ("b", 2)),
            (2550, ("c", 4)),
            (2650, ("b", 5)),
            (2950, ("a", 6)),
            (4200, ("a", 8)),
            (4300, ("b", 9)),
        ],
    ),
    "last_per_time": (
        "",
        "select ip, v",
        "output last every 1 sec",
        [(1750, ("a", 3)), (2950, ("a", 6)), (3400, ("c", 7)), (4300, ("b", 9))],
    ),
    "last_group_per_time": (
        "",
        "select ip, v group by ip",
        "output last every 1 sec",
        [
            (1750, ("a", 3)),
            (1300, ("b", 2)),
            (2550, ("c", 4)),
            (2650, ("b", 5)),
            (2950, ("a", 6)),
            (3400, ("c", 7)),
            (4200, ("a", 8)),
            (4300, ("b", 9)),
        ],
    ),
    "snapshot": (
        "",
        "select ip, v",
        "output snapshot every 1 sec",
        [
            (1750, ("a", 3)),
            (2950, ("a", 6)),
            (3400, ("c", 7)),
            (4300, ("b", 9)),
            (4300, ("b", 9)),
            (4300, ("b", 9)),
        ],
    ),
    "snapshot_group": (
        "",
        "select ip, v group by ip",
        "output snapshot every 1 sec",
        [
            (1750, ("a", 3)),
            (1300, ("b", 2)),
            (2950, ("a", 6)),
            (2650, ("b", 5)),
            (2550, ("c", 4)),
            (2950, ("a", 6)),
            (2650, ("b", 5)),
            (3400, ("c", 7)),
            (4200, ("a", 8)),
            (4300, ("b", 9)),
            (3400, ("c", 7)),
            (4200, ("a", 8)),
            (4300, ("b", 9)),
            (3400, ("c", 7)),
            (4200, ("a", 8)),
            (4300, ("b", 9)),
            (3400, ("c", 7)),
        ],
    ),
    "snapshot_window": (
        "#window.length(3)",
        "select ip, v",
        "output snapshot every 1 sec",
        [
            (1000, ("a", 1)),
            (1300, ("b", 2)),
            (1750, ("a", 3)),
            (2550, ("c", 4)),
            (2650, ("b", 5)),
            (2950, ("a", 6)),
            (2650, ("b", 5)),
            (2950, ("a", 6)),
            (3400, ("c", 7)),
            (3400, ("c", 7)),
            (4200, ("a", 8)),
            (4300, ("b", 9)),
            (3400, ("c", 7)),
            (4200, ("a", 8)),
            (4300, ("b", 9)),
            (3400, ("c", 7)),
            (4200, ("a", 8)),
            (4300, ("b", 9)),
        ],
    ),
    "snapshot_window_group": (
        "#window.length(3)",
        "select ip, v group by ip",
        "output snapshot every 1 sec",
        [
            (1000, ("a", 1)),
            (1300, ("b", 2)),
            (1750, ("a", 3)),
            (2550, ("c", 4)),
            (2650, ("b", 5)),
            (2950, ("a", 6)),
            (2650, ("b", 5)),
            (2950, ("a", 6)),
            (3400, ("c", 7)),
            (3400, ("c", 7)),
            (4200, ("a", 8)),
            (4300, ("b", 9)),
            (3400, ("c", 7)),
            (4200, ("a", 8)),
            (4300, ("b", 9)),
            (3400, ("c", 7)),
            (4200, ("a", 8)),
            (4300, ("b", 9)),
        ],
    ),
    "snapshot_window_all_aggs": (
        "#window.length(3)",
        "select sum(v) as s",
        "output snapshot every 1 sec",
        [(1750, (6,)), (2950, (15,)), (3400, (18,)), (4300, (24,)), (4300, (24,)), (4300, (24,))],
    ),
    "snapshot_window_some_aggs": (
        "#window.length(3)",
        "select ip, sum(v) as s",
        "output snapshot every 1 sec",
        [
            (1000, ("a", 6)),
            (1300, ("b", 6)),
            (1750, ("a", 6)),
            (2550, ("c", 15)),
            (2650, ("b", 15)),
            (2950, ("a", 15)),
            (2650, ("b", 18)),
            (2950, ("a", 18)),
            (3400, ("c", 18)),
            (3400, ("c", 24)),
            (4200, ("a", 24)),
            (4300, ("b", 24)),
            (3400, ("c", 24)),
            (4200, ("a", 24)),
            (4300, ("b", 24)),
            (3400, ("c", 24)),
            (4200, ("a", 24)),
            (4300, ("b", 24)),
        ],
    ),
    "snapshot_window_group_some_aggs": (
        "#window.length(3)",
        "select ip, sum(v) as s group by ip",
        "output snapshot every 1 sec",
        [
            (1000, ("a", 4)),
            (1300, ("b", 2)),
            (2550, ("c", 4)),
            (2650, ("b", 5)),
            (2950, ("a", 6)),
            (2650, ("b", 5)),
            (2950, ("a", 6)),
            (3400, ("c", 7)),
            (3400, ("c", 7)),
            (4200, ("a", 8)),
            (4300, ("b", 9)),
            (3400, ("c", 7)),
            (4200, ("a", 8)),
            (4300, ("b", 9)),
            (3400, ("c", 7)),
            (4200, ("a", 8)),
            (4300, ("b", 9)),
        ],
    ),
    "snapshot_window_group_all_aggs": (
        "#window.lengthBatch(3)",
        "select sum(v) as s group by ip",
        "output snapshot every 1 sec",
        [
            (1750, (4,)),
            (1300, (2,)),
            (2950, (6,)),
            (2650, (5,)),
            (2550, (4,)),
            (2950, (6,)),
            (2650, (5,)),
            (2550, (4,)),
            (4200, (8,)),
            (4300, (9,)),
            (3400, (7,)),
            (4200, (8,)),
            (4300, (9,)),
            (3400, (7,)),
            (4200, (8,)),
            (4300, (9,)),
            (3400, (7,)),
        ],
    ),
}


def kind_plan(window: str, selection: str, rate: str) -> str:
    return (
        f"define stream S (ip string, v int); from S{window} {selection} {rate} insert all events into Out;"
    )


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_limiter_kind_emits_as_before(kind: str) -> None:
    window, selection, rate, expected = KINDS[kind]
    records = run(kind_plan(window, selection, rate), timeline()).records
    assert [(t, row) for _, t, _, row in records] == expected


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_limiter_kind_restores_exactly(kind: str) -> None:
    window, selection, rate, _ = KINDS[kind]
    assert_restore_equivalent(kind_plan(window, selection, rate), timeline())


def test_a_limiter_snapshot_keeps_its_items_as_they_are() -> None:
    spec = EventLimiterSpec("last", 3, group_by=True)
    env = LimiterEnv(Scheduler(), "q/ratelimit", lambda: 0, lambda: 0)
    limiter = spec.build(env)
    limiter.process(Chunk([1, 2], [("a", 1), ("b", 2)], None, [("a",), ("b",)]))
    state = decode(encode(limiter.snapshot(), "plan"), "plan")
    again = spec.build(env)
    again.restore(state)
    assert (
        again.snapshot()
        == limiter.snapshot()
        == {
            "counter": 2,
            "latest": {("a",): (1, ("a", 1), CURRENT, ("a",)), ("b",): (2, ("b", 2), CURRENT, ("b",))},
        }
    )
