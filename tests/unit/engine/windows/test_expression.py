"""`expression` and `expressionBatch` windows: cases ported from Siddhi's
ExpressionWindowTestCase / ExpressionBatchWindowTestCase (their event counts), plus the
exact event order, dynamic conditions, errors and snapshot/restore equivalence."""

from __future__ import annotations

from typing import Any

import pytest

import engine
from tests.support.replaying import assert_restore_equivalent, run

S = "define stream S (symbol string, price float, volume int);"
SE = "define stream S (symbol string, price double, volume int, expr string);"
SEI = "define stream S (symbol string, price float, volume int, expr string, include bool);"
Q = "from S#window.{w} select {sel} insert all events into Out;"


def items(rows: list[list[Any]], stamps: list[int] | None = None) -> list[dict[str, Any]]:
    stamps = stamps or list(range(len(rows)))
    return [{"stream": "S", "timestamp": 1000 + t, "data": r} for t, r in zip(stamps, rows, strict=True)]


def counts(plan: str, events: list[dict[str, Any]]) -> tuple[int, int]:
    c = run(plan, events)
    return len(c.rows("Out", "current")), len(c.rows("Out", "expired"))


def wso2(n: int, *extra: Any) -> list[list[Any]]:
    return [["WSO2", 60.5 + i, i, *extra] for i in range(n)]


# ---- expression (sliding) -------------------------------------------------------


def test_count_keeps_the_last_two_events_in_order() -> None:
    c = run(
        S + Q.format(w="expression('count() <= 2')", sel="symbol, volume"),
        items([["IBM", 700.0, 0], *wso2(5)[1:]]),
    )
    assert [(k, r) for _, _, k, r in c.records] == [
        ("current", ("IBM", 0)),
        ("current", ("WSO2", 1)),
        ("expired", ("IBM", 0)),
        ("current", ("WSO2", 2)),
        ("expired", ("WSO2", 1)),
        ("current", ("WSO2", 3)),
        ("expired", ("WSO2", 2)),
        ("current", ("WSO2", 4)),
    ]
    # expired events are stamped with the time they leave
    assert [t for _, t, k, _ in c.records if k == "expired"] == [1002, 1003, 1004]


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("last.volume - first.volume <= 2", (5, 2)),  # expressionWindowTest2
        ("eventTimestamp(last) - eventTimestamp(first) <= 2", (5, 2)),  # expressionWindowTest3
    ],
)
def test_first_and_last_refer_to_the_oldest_and_newest_event(
    condition: str, expected: tuple[int, int]
) -> None:
    assert (
        counts(S + Q.format(w=f"expression('{condition}')", sel="symbol, price"), items(wso2(5))) == expected
    )


def test_one_chunk_of_seven_events_expires_four() -> None:  # expressionWindowTest4
    plan = S + Q.format(w="expression('eventTimestamp(last) - eventTimestamp(first) <= 2')", sel="symbol")
    rt = engine.compile(plan, start_time=1000)
    seen: list[Any] = []
    rt.subscribe_chunks("Out", lambda s, c: seen.append(c))
    rt.send("S", [tuple(r) for r in wso2(7)], timestamps=list(range(1000, 1007)))
    kinds = [k for c in seen for k in (c.kinds or [0] * len(c.rows))]
    assert (kinds.count(0), kinds.count(1)) == (7, 4)


def test_sum_condition_expires_oldest_until_it_holds() -> None:
    rows = [["A", 40.0, 1, ""], ["A", 50.0, 2, ""], ["A", 30.0, 3, ""], ["A", 60.0, 4, ""]]
    c = run(SE + Q.format(w="expression('sum(price) < 100')", sel="volume"), items(rows))
    assert [(k, r) for _, _, k, r in c.records] == [
        ("current", (1,)),
        ("current", (2,)),
        ("expired", (1,)),  # 40 + 50 + 30 = 120: the 40 leaves
        ("current", (3,)),
        ("expired", (2,)),  # 50 + 30 + 60 = 140: the 50 leaves, 90 < 100
        ("current", (4,)),
    ]
    # an aggregating selector (one row per chunk) sees the window's sum
    c = run(
        SE + "from S#window.expression('sum(price) < 100') select sum(price) as total insert into Out;",
        items(rows),
    )
    assert c.rows("Out") == [(40.0,), (90.0,), (80.0,), (90.0,)]


def test_an_event_failing_alone_expires_at_once() -> None:  # expressionWindowTest8's shape
    c = run(S + Q.format(w="expression('price < 0')", sel="volume"), items(wso2(2)))
    assert [(k, r) for _, _, k, r in c.records] == [
        ("expired", (0,)),
        ("current", (0,)),
        ("expired", (1,)),
        ("current", (1,)),
    ]


@pytest.mark.parametrize(
    ("exprs", "expected"),
    [
        (["<= 2"] * 5, (5, 2)),  # expressionWindowTest5
        (["< 2", "< 2", "< 4", "< 4", "< 4"], (5, 1)),  # expressionWindowTest6
        (["< 2"] * 3 + ["< 0"] * 2 + ["< 2"] * 4, (9, 7)),  # expressionWindowTest7
        (["< 0"] * 3, (3, 3)),  # expressionWindowTest8
    ],
)
def test_condition_read_from_an_attribute(exprs: list[str], expected: tuple[int, int]) -> None:
    rows = [
        [*r, f"eventTimestamp(last) - eventTimestamp(first) {e}"]
        for r, e in zip(wso2(len(exprs)), exprs, strict=True)
    ]
    assert counts(SE + Q.format(w="expression(expr)", sel="symbol, price"), items(rows)) == expected


def test_expression_window_restores_at_every_cut() -> None:
    rows = [[*r, e] for r, e in zip(wso2(8), ["sum(price) < 130"] * 4 + ["count() <= 1"] * 4, strict=True)]
    assert_restore_equivalent(
        SE + Q.format(w="expression(expr)", sel="volume, sum(price) as total"), items(rows)
    )
    assert_restore_equivalent(
        S + Q.format(w="expression('max(price) - min(price) < 2.5')", sel="volume"), items(wso2(8))
    )


# ---- expressionBatch --------------------------------------------------------------


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("count() <= 2", (4, 2)),  # expressionBatchWindowTest1
        ("last.volume - first.volume < 2", (4, 2)),  # expressionBatchWindowTest2
        ("eventTimestamp(last) - eventTimestamp(first) < 2", (4, 2)),  # expressionBatchWindowTest3
    ],
)
def test_batch_counts(condition: str, expected: tuple[int, int]) -> None:
    assert (
        counts(S + Q.format(w=f"expressionBatch('{condition}')", sel="symbol, price"), items(wso2(5)))
        == expected
    )


def test_batch_flushes_the_gathered_events_stamped_now_after_the_last_batch_expired() -> None:
    c = run(
        S + Q.format(w="expressionBatch('count() <= 2')", sel="volume"), items(wso2(7), [0, 1, 2, 3, 4, 5, 6])
    )
    assert c.records == [
        ("Out", 1002, "current", (0,)),
        ("Out", 1002, "current", (1,)),
        ("Out", 1004, "expired", (0,)),
        ("Out", 1004, "expired", (1,)),
        ("Out", 1004, "current", (2,)),
        ("Out", 1004, "current", (3,)),
        ("Out", 1006, "expired", (2,)),
        ("Out", 1006, "expired", (3,)),
        ("Out", 1006, "current", (4,)),
        ("Out", 1006, "current", (5,)),
    ]


def test_batch_aggregate_downstream_sees_one_row_per_batch() -> None:
    c = run(
        S + "from S#window.expressionBatch('count() <= 2') select sum(volume) as total insert into Out;",
        items(wso2(7)),
    )
    # each flush is one chunk: an aggregating selector emits its last row (Siddhi's batching)
    assert c.rows("Out") == [(1,), (5,), (9,)]


@pytest.mark.parametrize(
    ("exprs", "expected"),
    [
        (["eventTimestamp(last) - eventTimestamp(first) < 2"] * 5, (4, 2)),  # expressionBatchWindowTest5
        (["sum(price) < 50"] * 9, (8, 4)),  # expressionBatchWindowTest12
        (["sum(price) < 40"] * 4 + ["sum(price) < 50"] * 5, (7, 3)),  # expressionBatchWindowTest13
        (["sum(price) < 40"] * 4 + ["sum(price) < 0"] * 2 + ["sum(price) < 40"] * 4, (9, 6)),  # Test14
    ],
)
def test_batch_condition_read_from_an_attribute(exprs: list[str], expected: tuple[int, int]) -> None:
    rows = [["WSO2", 10.0, i, e] for i, e in enumerate(exprs)]
    assert counts(SE + Q.format(w="expressionBatch(expr)", sel="symbol, volume"), items(rows)) == expected


def test_batch_sum_and_time_condition() -> None:  # expressionBatchWindowTest15
    prices = [10.0, 5.0, 10.0, 10.0, 10.0, 10.0, 15.0, 10.0, 10.0]
    rows = [
        ["WSO2", p, i, "sum(price) < 30 and eventTimestamp(last) - eventTimestamp(first) < 3"]
        for i, p in enumerate(prices)
    ]
    plan = SE + Q.format(w="expressionBatch(expr)", sel="symbol, volume")
    assert counts(plan, items(rows, [0, 1, 2, 2, 2, 7, 8, 9, 10])) == (7, 5)


_FLIP = ["< 1"] * 3 + ["< 0"] * 2 + ["< 2"] * 5
_ZERO = ["< 2"] * 3 + ["< 0"] * 3 + ["< 2"] * 4


def _include_rows(exprs: list[str], includes: list[bool]) -> list[list[Any]]:
    return [
        ["WSO2", 60.5 + i, i, f"eventTimestamp(last) - eventTimestamp(first) {e}", inc]
        for i, (e, inc) in enumerate(zip(exprs, includes, strict=True))
    ]


@pytest.mark.parametrize(
    ("window", "select", "exprs", "includes", "expected"),
    [
        # expressionBatchWindowTest16: include.triggering.event constant true
        ("expressionBatch(expr, true)", "", ["< 1"] * 3 + ["< 0"] * 2 + ["< 1"] * 5, [True] * 10, (9, 7)),
        # expressionBatchWindowTest17: the flag read from an attribute
        ("expressionBatch(expr, include)", "", _FLIP, [True] * 5 + [False] * 5, (9, 7)),
        # expressionBatchWindowTest18: stream.current.event
        ("expressionBatch(expr, include, true)", "", _FLIP, [True] * 5 + [False] * 5, (10, 9)),
        # expressionBatchWindowTest21 / 22: an aggregating selector emits one row per chunk
        ("expressionBatch(expr, include, true)", ", count() as n", _ZERO, [True] * 10, (8, 2)),
        ("expressionBatch(expr, include, true)", ", count() as n", _ZERO, [False] * 10, (10, 0)),
    ],
)
def test_batch_triggering_event_and_streaming(
    window: str, select: str, exprs: list[str], includes: list[bool], expected: tuple[int, int]
) -> None:
    plan = SEI + Q.format(w=window, sel="symbol, price" + select)
    assert counts(plan, items(_include_rows(exprs, includes))) == expected


@pytest.mark.parametrize(
    "window",
    ["expressionBatch(expr)", "expressionBatch(expr, include)", "expressionBatch(expr, include, true)"],
)
def test_batch_restores_at_every_cut(window: str) -> None:
    rows = _include_rows(["< 2"] * 3 + ["< 0"] * 2 + ["< 3"] * 5, [True, False] * 5)
    assert_restore_equivalent(SEI + Q.format(w=window, sel="volume, count() as n"), items(rows))


def test_batch_constant_condition_restores_at_every_cut() -> None:
    rows = [["WSO2", float(p), i, ""] for i, p in enumerate([10, 20, 30, 5, 50, 60, 1, 2])]
    assert_restore_equivalent(
        SE + Q.format(w="expressionBatch('sum(price) < 50', true, true)", sel="volume"), items(rows)
    )


# ---- errors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "message"),
    [
        (
            "expressionBatch('eventTimestamp(last)')",
            "must be a bool condition",
        ),  # expressionBatchWindowTest20
        ("expression('count() <')", "expression 'count() <'"),
        ("expression('nope > 1')", "unknown attribute 'nope'"),
        ("expression('sum(symbol) > 1')", "sum() needs a numeric argument"),
        ("expression(1)", "must be string"),
        ("expressionBatch('count() < 2', 'yes')", "must be bool"),
    ],
)
def test_bad_conditions_are_positioned_query_errors(window: str, message: str) -> None:
    plan = S + "\nfrom S#window." + window + " select symbol insert into Out;"
    with pytest.raises(engine.QueryError) as err:
        engine.compile(plan)
    assert message in str(err.value)
    assert err.value.line == 2
    assert err.value.col > 1


def test_a_bad_condition_in_an_attribute_is_a_processing_error() -> None:
    rt = engine.compile(SE + Q.format(w="expression(expr)", sel="symbol"), start_time=1000)
    with pytest.raises(engine.ProcessingError, match="expression 'price >'"):
        rt.send("S", [("A", 1.0, 1, "price >")], timestamps=1000)


def test_windows_are_joinable() -> None:
    plan = (
        "define stream S (symbol string, price float, volume int); define stream Q (symbol string);"
        "from Q join S#window.expression('count() <= 2') on Q.symbol == S.symbol "
        "select S.volume as v insert into Out;"
    )
    c = run(
        plan,
        [
            *items([["A", 1.0, 1], ["B", 1.0, 2], ["A", 1.0, 3]]),
            {"stream": "Q", "timestamp": 1010, "data": ["A"]},
        ],
    )
    assert c.rows("Out") == [(3,)]


def test_a_condition_that_is_not_bool_in_an_attribute_is_a_processing_error() -> None:
    rt = engine.compile(
        SEI + Q.format(w="expressionBatch(expr, include, true)", sel="symbol"), start_time=1000
    )
    with pytest.raises(engine.ProcessingError, match="must be a bool condition"):
        rt.send("S", [("A", 1.0, 1, "eventTimestamp(last)", True)], timestamps=1000)
