"""sort window (spec §1.8)."""

from __future__ import annotations

import pytest

import engine
from engine.types import AttrType
from tests.support.replaying import assert_restore_equivalent, events
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
    "window",
    [
        "sort(2)",
        "sort(2L, v)",
        "sort(2, ok)",
        "sort(2, v, w)",
        "sort(2, v, 'up')",
        "sort(2, v, 5)",
        "sort(2, v, 'asc', 'desc')",
        "sort(2, v, 'asc', sym, w)",
        "sort(2, v, 'asc', v, 3)",
        "sort(x, v)",
    ],
)
def test_sort_rejects_bad_parameters(window: str) -> None:
    with pytest.raises(engine.QueryError):
        engine.compile(PLAN.format(w=window))


def test_sort_accepts_the_siddhi_parameter_shapes() -> None:
    for w in (
        "sort(2, v)",
        "sort(2, v, 'asc')",
        "sort(2, sym, 'desc', v)",
        "sort(2, v, 'asc', w, 'desc', sym)",
    ):
        engine.compile(PLAN.format(w=w))


def test_sort_restores_exactly() -> None:
    rows = [
        ("a", 3, "x", True),
        ("b", 1, "y", True),
        ("c", 2, "z", False),
        ("d", 0, "x", True),
        ("e", 9, "y", True),
    ]
    assert_restore_equivalent(PLAN.format(w="sort(3, v, 'desc')"), events("S", rows))
