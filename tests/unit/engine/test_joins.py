"""Joins: inner and outer (with nulls), unidirectional, self joins, tables, expiry."""

from __future__ import annotations

import pytest

import engine
from tests.support.replaying import assert_restore_equivalent, run

DEFS = "define stream L (k string, a int); define stream R (k string, b int);\n"


def ev(stream: str, t: int, *data: object) -> dict:
    return {"stream": stream, "timestamp": t, "data": list(data)}


def test_inner_join_matches_either_side_against_the_other_window() -> None:
    plan = (
        DEFS
        + "from L#window.length(5) join R#window.length(5) on L.k == R.k select L.k, a, b insert into Out;"
    )
    c = run(
        plan, [ev("L", 1000, "x", 1), ev("R", 1001, "x", 10), ev("L", 1002, "x", 2), ev("R", 1003, "y", 20)]
    )
    assert c.rows("Out") == [("x", 1, 10), ("x", 2, 10)]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("left outer join", [("x", 1, None), ("z", 3, None)]),
        ("right outer join", [("y", None, 10)]),
        ("full outer join", [("x", 1, None), ("y", None, 10), ("z", 3, None)]),
    ],
)
def test_outer_joins_emit_nulls_for_the_missing_side(kind: str, expected: list) -> None:
    plan = (
        DEFS
        + f"from L#window.length(5) as l {kind} R#window.length(5) as r on l.k == r.k select l.k as lk, a, b insert into Out;"
    )
    c = run(plan, [ev("L", 1000, "x", 1), ev("R", 1001, "y", 10), ev("L", 1002, "z", 3)])
    got = [(r[0] if r[0] is not None else "y", r[1], r[2]) for r in c.rows("Out")]
    assert got == expected


def test_unidirectional_side_alone_triggers() -> None:
    plan = (
        DEFS + "from L unidirectional join R#window.length(5) on L.k == R.k select L.k, a, b insert into Out;"
    )
    c = run(plan, [ev("L", 1000, "x", 1), ev("R", 1001, "x", 10), ev("L", 1002, "x", 2)])
    assert c.rows("Out") == [("x", 2, 10)]


def test_expired_events_of_a_window_side_join_as_expired() -> None:
    plan = (
        DEFS
        + "from L#window.length(1) join R#window.length(5) on L.k == R.k select a, b insert all events into Out;"
    )
    c = run(plan, [ev("R", 1000, "x", 10), ev("L", 1001, "x", 1), ev("L", 1002, "x", 2)])
    assert c.records == [
        ("Out", 1001, "current", (1, 10)),
        ("Out", 1002, "expired", (1, 10)),
        ("Out", 1002, "current", (2, 10)),
    ]


def test_self_join_runs_each_event_left_then_right() -> None:
    plan = "define stream S (v int); from S#window.length(2) as a join S#window.length(2) as b select a.v as x, b.v as y insert into Out;"
    c = run(plan, [ev("S", 1000, 1), ev("S", 1001, 2)])
    assert c.rows("Out") == [(1, 1), (2, 1), (1, 2), (2, 2)]


def test_aggregating_join_emits_per_triggering_event_and_windowless_side_resets() -> None:
    plan = DEFS + "from L join R#window.length(5) on L.k == R.k select count() as c insert into Out;"
    c = run(
        plan, [ev("R", 1000, "x", 1), ev("R", 1001, "x", 2), ev("L", 1002, "x", 0), ev("L", 1003, "x", 0)]
    )
    assert c.rows("Out") == [(2,), (2,)]  # Siddhi 5 resets a windowless side's aggregates per event


def test_the_cep3_dialect_keeps_counting_across_windowless_events() -> None:
    plan = (
        "@Plan:name('p') "
        + DEFS
        + "from L join R#window.length(5) on L.k == R.k select count() as c insert into Out;"
    )
    c = run(plan, [ev("R", 1000, "x", 1), ev("L", 1002, "x", 0), ev("L", 1003, "x", 0)])
    assert c.rows("Out") == [(1,), (2,)]


def test_join_with_a_table() -> None:
    plan = (
        "define stream S (k string); define stream Add (k string, v int); define table T (k string, v int);"
        "from Add insert into T; from S join T on S.k == T.k select S.k, T.v insert into Out;"
    )
    c = run(plan, [ev("Add", 1000, "a", 1), ev("Add", 1001, "b", 2), ev("S", 1002, "b"), ev("S", 1003, "c")])
    assert c.rows("Out") == [("b", 2)]


def test_a_join_side_is_null_checks_the_event() -> None:
    """Siddhi's `t is null` on a join reference: true where an outer join found no event
    (the siddhi-io null example); `t.v is null` checks the attribute."""
    plan = (
        "define stream S (k string); define stream Add (k string, v int); define table T (k string, v int);"
        "from Add insert into T;"
        "from S as s left outer join T as t on s.k == t.k"
        " select s.k, t is null as noT, s is null as noS, t.v is null as noV insert into Out;"
    )
    items = [ev("Add", 1000, "a", 1), ev("S", 1001, "a"), ev("S", 1002, "c")]
    assert run(plan, items).rows("Out") == [("a", False, False, False), ("c", True, False, True)]


def test_a_tables_window_in_a_join_does_nothing_as_in_siddhi() -> None:
    """Siddhi replaces a table side's processor chain with the table lookup, so
    `T#window.time(10 min)` reads the whole table; a filter on the table is refused."""
    base = (
        "define stream S (k string); define stream Add (k string, v int); define table T (k string, v int);"
    )
    plan = base + (
        "from Add insert into T;"
        "from S left outer join T#window.length(1) as t on S.k == t.k select S.k, t.v insert into Out;"
    )
    items = [ev("Add", 1000, "a", 1), ev("Add", 1001, "b", 2), ev("S", 1002, "a"), ev("S", 1003, "c")]
    assert run(plan, items).rows("Out") == [("a", 1), ("c", None)]
    with pytest.raises(engine.QueryError, match="table 'T' cannot have a filter in a join"):
        engine.compile(base + "from S join T[v > 1] on S.k == T.k select S.k insert into Out;")
    with pytest.raises(engine.QueryError, match="unknown window"):
        engine.compile(base + "from S join T#window.nope(1) on S.k == T.k select S.k insert into Out;")


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("from L join R on k == k select a insert into O;", "ambiguous"),
        ("from L#window.length(1) as x join R#window.length(1) as x select a insert into O;", "both sides"),
        ("from L join R select * insert into O;", "twice"),
        ("from L join R on L.k == R.k within 1 sec per 'day' select a insert into O;", "aggregations"),
    ],
)
def test_join_mistakes_are_rejected(query: str, words: str) -> None:
    with pytest.raises(engine.QueryError, match=words):
        engine.compile(DEFS + query)


def test_join_windows_restore_exactly() -> None:
    plan = (
        DEFS
        + "from L#window.length(2) join R#window.time(1 sec) on L.k == R.k select a, b insert all events into Out;"
    )
    items = [
        ev("R", 1000, "x", 10),
        ev("L", 1100, "x", 1),
        ev("L", 1200, "x", 2),
        ev("R", 1300, "x", 20),
        ev("L", 1400, "x", 3),
        {"time": 3000},
    ]
    assert_restore_equivalent(plan, items)
