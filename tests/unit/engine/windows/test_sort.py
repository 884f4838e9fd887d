"""sort window (spec §1.8)."""

from __future__ import annotations

import pytest

import engine
from engine.types import AttrType
from tests.support.replaying import assert_restore_equivalent, events, run
from tests.unit.engine.windows.harness import Harness, attr

TYPES = [AttrType.STRING, AttrType.INT]
PLAN = "define stream S (sym string, v int, w string, ok bool); from S#window.{w} select sym, v insert all events into Out;"


def test_sort_emits_the_arrival_then_the_event_that_sorts_last() -> None:
    h = Harness("sort", [2, attr(1)], TYPES)
    h.send(1000, ("a", 3))
    h.send(1001, ("b", 1))
    h.send(1002, ("c", 2))
    assert h.take()[-1] == [(1002, "C", ("c", 2)), (1002, "E", ("a", 3))]
    assert h.contents() == [("b", 1), ("c", 2)]


def test_sort_expires_the_newest_among_equal_keys() -> None:
    h = Harness("sort", [2, attr(1)], TYPES)
    for t, sym in zip((1000, 1001, 1002), "abc", strict=True):
        h.send(t, (sym, 1))
    assert h.take()[-1] == [(1002, "C", ("c", 1)), (1002, "E", ("c", 1))]


def test_sort_orders_by_each_attribute_in_its_own_direction() -> None:
    h = Harness("sort", [2, attr(1), "desc", attr(0), "DESC"], TYPES)
    h.send(1000, ("a", 2))
    h.send(1001, ("b", 2))
    h.send(1002, ("c", 1))  # v desc: c sorts last
    h.send(1003, ("d", 2))  # v ties; sym desc: d, b, a
    out = h.take()
    assert out[2][1] == (1002, "E", ("c", 1))
    assert out[3][1] == (1003, "E", ("a", 2))
    assert h.contents() == [("d", 2), ("b", 2)]


@pytest.mark.parametrize(
    ("window", "col", "message"),
    [
        ("sort(2)", 71, "sort window: expects 2 to 35 parameters, got 1"),
        ("sort(2L, v)", 76, "sort window: parameter 1 (window.length) must be int, found long"),
        (
            "sort(2, ok)",
            79,
            "sort window: parameter 2 (attribute) must be string or double or int or long or float, found bool",
        ),
        (
            "sort(2, v, w)",
            82,
            "sort window: parameter 3 (order) must be a constant, found a value read from each event",
        ),
        ("sort(2, v, 'up')", 71, "sort window: parameter 3 must be 'asc' or 'desc', found 'up'"),
        ("sort(2, v, 5)", 82, "sort window: parameter 3 (order) must be string, found int"),
        (
            "sort(2, v, 'asc', 'desc')",
            71,
            "sort window: parameter 4 must be an attribute to sort by, found the constant 'desc'",
        ),
        (
            "sort(2, v, 'asc', sym, w)",
            71,
            "sort window: parameter 5 must be the constant 'asc' or 'desc', found a string attribute",
        ),
        (
            "sort(2, v, 'asc', v, 3)",
            71,
            "sort window: parameter 5 must be an attribute to sort by, found the constant 3",
        ),
        ("sort(x, v)", 76, "unknown attribute 'x'"),
    ],
)
def test_sort_rejects_bad_parameters(window: str, col: int, message: str) -> None:
    """Column 71 is the window call; 76, 79 and 82 its first, second and third parameter."""
    with pytest.raises(engine.QueryError) as info:
        engine.compile(PLAN.format(w=window))
    assert [(e.line, e.col, e.message) for e in info.value.errors] == [(1, col, message)]


SHAPES = PLAN.replace("select sym, v", "select sym, v, w")


@pytest.mark.parametrize(
    ("window", "rows", "expired"),
    [
        # v ascending: a (3) sorts last
        ("sort(2, v)", [("a", 3, "x"), ("b", 1, "x"), ("c", 2, "x")], [(1002, ("a", 3, "x"))]),
        ("sort(2, v, 'asc')", [("a", 3, "x"), ("b", 1, "x"), ("c", 2, "x")], [(1002, ("a", 3, "x"))]),
        ("sort(2, v, 'desc')", [("a", 3, "x"), ("b", 1, "x"), ("c", 2, "x")], [(1002, ("b", 1, "x"))]),
        # sym descending puts the two a's last, v ascending orders them: (a, 5) is last (by arrival,
        # or with v descending, it would be (a, 2))
        ("sort(2, sym, 'desc', v)", [("b", 1, "x"), ("a", 5, "x"), ("a", 2, "x")], [(1002, ("a", 5, "x"))]),
        # v ties at 1: first sym breaks the tie of q and p (w ties too), then w descending the tie
        # of s and p (w m before k)
        (
            "sort(2, v, 'asc', w, 'desc', sym)",
            [("q", 1, "k"), ("p", 1, "k"), ("r", 0, "a"), ("s", 1, "m")],
            [(1002, ("q", 1, "k")), (1003, ("p", 1, "k"))],
        ),
    ],
)
def test_sort_accepts_the_siddhi_parameter_shapes_and_expires_what_sorts_last(
    window: str, rows: list[tuple[str, int, str]], expired: list[tuple[int, tuple[str, int, str]]]
) -> None:
    records = run(SHAPES.format(w=window), events("S", [(*r, True) for r in rows])).records
    expected = []  # each arrival, then what it pushed out, in the same instant
    for i, row in enumerate(rows):
        expected.append((1000 + i, "current", row))
        expected += [(t, "expired", gone) for t, gone in expired if t == 1000 + i]
    assert [(t, kind, row) for _, t, kind, row in records] == expected


def test_sort_restores_exactly() -> None:
    rows = [
        ("a", 3, "x", True),
        ("b", 1, "y", True),
        ("c", 2, "z", False),
        ("d", 0, "x", True),
        ("e", 9, "y", True),
    ]
    assert_restore_equivalent(PLAN.format(w="sort(3, v, 'desc')"), events("S", rows))
