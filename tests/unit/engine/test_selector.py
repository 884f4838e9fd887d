"""Selection: aggregates (also as events expire), group by, having, order by, limit and
offset, with Siddhi's per-chunk (batch) output rules."""

from __future__ import annotations

import pytest

import engine
from tests.support.replaying import assert_restore_equivalent, events, run


def test_aggregates_follow_events_leaving_a_window() -> None:
    plan = (
        "define stream S (k string, v double); from S#window.length(2) "
        "select sum(v) as s, avg(v) as a, count() as c, min(v) as mn, max(v) as mx, stdDev(v) as sd, "
        "distinctCount(k) as dc insert all events into Out;"
    )
    c = run(plan, events("S", [("a", 1.0), ("b", 3.0), ("a", 5.0)]))
    assert c.rows("Out", "current") == [
        (1.0, 1.0, 1, 1.0, 1.0, 0.0, 1),
        (4.0, 2.0, 2, 1.0, 3.0, 1.0, 2),
        (8.0, 4.0, 2, 3.0, 5.0, 1.0, 2),  # the expired event 1.0 went first, in the same chunk
    ]


def test_sum_of_nothing_is_null_and_count_is_zero() -> None:
    plan = "define stream S (v int); from S#window.time(1 sec) select sum(v) as s, count() as c insert expired events into Out;"
    c = run(plan, events("S", [(5,)]) + [{"time": 3000}])
    assert c.rows("Out", "expired") == [(None, 0)]


def test_forever_and_boolean_aggregates() -> None:
    plan = (
        "define stream S (v int, ok bool); from S#window.length(1) "
        "select maxForever(v) as mx, minForever(v) as mn, and(ok) as all_ok, or(ok) as any_ok insert into Out;"
    )
    c = run(plan, events("S", [(3, True), (9, False), (1, True)]))
    assert c.rows("Out") == [(3, 3, True, True), (9, 3, False, False), (9, 1, True, True)]


def test_group_by_keeps_state_per_key_and_emits_last_per_group_per_chunk() -> None:
    plan = "define stream S (k string, v int); from S select k, sum(v) as t group by k insert into Out;"
    rt = engine.compile(plan, start_time=1000)
    got = []
    rt.subscribe("Out", lambda evs: got.append([tuple(e.data) for e in evs]))
    rt.send("S", [("a", 1), ("b", 2), ("a", 3)], timestamps=1000)  # one chunk
    rt.send("S", [("b", 4)], timestamps=1001)
    assert got == [[("a", 4), ("b", 2)], [("b", 6)]]


def test_aggregate_without_group_by_emits_the_last_event_of_a_chunk() -> None:
    rt = engine.compile(
        "define stream S (v int); from S select sum(v) as t insert into Out;", start_time=1000
    )
    got = []
    rt.subscribe("Out", lambda evs: got.extend(tuple(e.data) for e in evs))
    rt.send("S", [(1,), (2,), (3,)], timestamps=1000)
    assert got == [(6,)]


def test_having_filters_on_output_names() -> None:
    plan = "define stream S (k string, v int); from S select k, sum(v) as t group by k having t > 3 insert into Out;"
    c = run(plan, events("S", [("a", 1), ("a", 3), ("b", 2)]))
    assert c.rows("Out") == [("a", 4)]


def test_order_by_puts_nulls_last_and_limit_offset_apply_per_batch() -> None:
    plan = (
        "define stream S (k string, v int); from S#window.lengthBatch(4) select k, v "
        "order by v desc limit 2 offset 1 insert into Out;"
    )
    c = run(plan, events("S", [("a", 1), ("b", None), ("c", 3), ("d", 2)]))
    assert c.rows("Out") == [("d", 2), ("a", 1)]


def test_limit_and_offset_must_be_non_negative_constants() -> None:
    with pytest.raises(engine.QueryError, match="cannot be negative"):
        engine.compile("define stream S (v int); from S select v limit -1 insert into Out;")
    with pytest.raises(engine.QueryError, match="order by"):
        engine.compile("define stream S (v int); from S select v as w order by v insert into Out;")


def test_selector_state_restores_exactly() -> None:
    plan = "define stream S (k string, v double); from S#window.length(3) select k, avg(v) as a, max(v) as m group by k insert all events into Out;"
    assert_restore_equivalent(
        plan, events("S", [("a", 1.0), ("b", 2.0), ("a", 3.0), ("b", 4.0), ("a", 5.0), ("b", 6.0)])
    )


def test_insert_into_a_stream_defined_differently_is_an_error() -> None:
    with pytest.raises(engine.QueryError, match="does not match stream 'Out'"):
        engine.compile(
            "define stream S (v int); define stream Out (v long); from S select v insert into Out;"
        )


@pytest.mark.parametrize(
    "aggregate",
    ["sum(v)", "avg(v)", "count()", "count(v)", "min(v)", "max(v)", "minForever(v)", "maxForever(v)",
     "stdDev(v)", "distinctCount(k)", "and(v > 2.0)", "or(v > 4.0)", "unionSet(createSet(k))"],
)  # fmt: skip
@pytest.mark.parametrize("window", ["length(3)", "lengthBatch(2)", "time(1 sec)"])
def test_every_aggregate_restores_exactly_in_every_window_kind(aggregate: str, window: str) -> None:
    plan = f"define stream S (k string, v double); from S#window.{window} select {aggregate} as x insert all events into Out;"
    items = events("S", [("a", 1.0), ("b", 3.0), ("a", 5.0), ("c", 2.0), ("b", 4.0), ("a", 6.0)], step=300)
    assert_restore_equivalent(plan, items + [{"time": 5000}])
