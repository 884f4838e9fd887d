"""Sliding unique windows: 3.x core unique / firstUnique (spec §1.16) and the unique
extension's ever, first, length and time windows."""

from __future__ import annotations

import pytest

import engine
from engine.types import AttrType
from tests.support.replaying import assert_restore_equivalent, events
from tests.unit.engine.windows.harness import Harness, attr

TYPES = [AttrType.STRING, AttrType.INT]
PLAN = "define stream S (sym string, v int); from S#window.{w} select sym, v insert all events into Out;"
AGG = "define stream S (sym string, v int); from S#window.{w} select sym, count() as n insert all events into Out;"


def _feed(h: Harness, *rows: tuple[str, int], start: int = 1000, step: int = 1) -> None:
    for i, row in enumerate(rows):
        h.send(start + i * step, row)


@pytest.mark.parametrize("name", ["unique", "unique:ever"])
def test_unique_expires_the_previous_event_of_the_key_before_the_new_one(name: str) -> None:
    h = Harness(name, [attr(0)], TYPES)
    _feed(h, ("a", 1), ("b", 2), ("a", 3))
    assert h.take()[-1] == [(1002, "E", ("a", 1)), (1002, "C", ("a", 3))]
    assert sorted(h.contents()) == [("a", 3), ("b", 2)]


@pytest.mark.parametrize("name", ["firstUnique", "unique:first"])
def test_first_unique_drops_later_events_of_a_key(name: str) -> None:
    h = Harness(name, [attr(0)], TYPES)
    _feed(h, ("a", 1), ("b", 2), ("a", 3))
    assert h.take() == [[(1000, "C", ("a", 1))], [(1001, "C", ("b", 2))]]


def test_unique_keys_on_several_attributes_concatenated_as_java_strings() -> None:
    h = Harness("unique:ever", [attr(0), attr(1)], TYPES)
    _feed(h, ("a", 11), ("a1", 1))  # both key "a11"
    assert h.take()[-1] == [(1001, "E", ("a", 11)), (1001, "C", ("a1", 1))]


def test_unique_length_expires_the_replaced_event_or_the_oldest() -> None:
    h = Harness("unique:length", [attr(0), 3], TYPES)
    _feed(h, ("a", 1), ("b", 2), ("a", 3), ("c", 4), ("d", 5))
    out = h.take()
    assert out[2] == [(1002, "E", ("a", 1)), (1002, "C", ("a", 3))]
    assert out[4] == [(1004, "E", ("b", 2)), (1004, "C", ("d", 5))]


def test_unique_length_keeps_siddhis_stale_iterator() -> None:
    # Replacing the newest event leaves Siddhi's chunk with a stale tail and iterator: the
    # next replacement finds nothing to remove and a1 is expired a second time later.
    h = Harness("unique:length", [attr(0), 2], TYPES)
    _feed(h, ("a", 1), ("b", 2), ("b", 3), ("a", 4), ("c", 5))
    out = h.take()
    assert out[2] == [(1002, "E", ("b", 2)), (1002, "C", ("b", 3))]
    assert out[3] == [(1003, "E", ("a", 1)), (1003, "C", ("a", 4))]
    assert out[4] == [(1004, "E", ("a", 1)), (1004, "C", ("c", 5))]


def test_unique_time_expires_by_replacement_and_by_the_clock() -> None:
    h = Harness("unique:time", [attr(0), 1000], TYPES)
    _feed(h, ("a", 1), ("b", 2), ("a", 3), step=300)
    assert h.take()[-1] == [(1600, "E", ("a", 1)), (1600, "C", ("a", 3))]
    h.advance(2300)
    assert h.take() == [[(2300, "E", ("b", 2))]]
    h.advance(2600)
    assert h.take() == [[(2600, "E", ("a", 3))]]


@pytest.mark.parametrize(
    "window",
    [
        "unique()",
        "unique('a')",
        "firstUnique()",
        "unique:ever()",
        "unique:first()",
        "unique:length(sym)",
        "unique:length(sym, 2L)",
        "unique:length(sym, v)",
        "unique:time(sym)",
        "unique:time(sym, 'x')",
        "unique:nothing(sym)",
    ],
)
def test_unique_windows_reject_bad_parameters(window: str) -> None:
    with pytest.raises(engine.QueryError):
        engine.compile(PLAN.format(w=window))


def test_unique_windows_restore_exactly() -> None:
    rows = [("a", 1), ("b", 2), ("b", 3), ("a", 4), ("c", 5), ("a", 6), ("d", 7)]
    for w in (
        "unique(sym)",
        "firstUnique(sym)",
        "unique:ever(sym, v)",
        "unique:first(sym)",
        "unique:length(sym, 2)",
    ):
        assert_restore_equivalent(AGG.format(w=w), events("S", rows))
    timed = events("S", rows, step=300) + [{"time": 5000}]
    assert_restore_equivalent(AGG.format(w="unique:time(sym, 1 sec)"), timed)
