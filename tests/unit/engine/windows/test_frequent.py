"""frequent and lossyFrequent windows (spec §1.9, §1.10)."""

from __future__ import annotations

import pytest

import engine
from engine.types import AttrType
from tests.support.replaying import assert_restore_equivalent, events
from tests.unit.engine.windows.harness import Harness, attr

TYPES = [AttrType.STRING, AttrType.INT]
PLAN = "define stream S (sym string, v int); from S#window.{w} select sym, v insert all events into Out;"
AGG = "define stream S (sym string, v int); from S#window.{w} select sym, count() as n insert all events into Out;"


def _feed(h: Harness, syms: str) -> None:
    for i, sym in enumerate(syms):
        h.send(1000 + i, (sym, i))


def test_frequent_counts_down_every_key_when_a_new_key_finds_the_window_full() -> None:
    h = Harness("frequent", [2, attr(0)], TYPES)
    _feed(h, "aabc")
    # "a" and "b" lose one each (ConcurrentHashMap order a, b); b reaches zero and leaves
    assert h.take()[-1] == [(1003, "E", ("b", 2)), (1003, "C", ("c", 3))]
    assert h.contents() == [("a", 1), ("c", 3)]


def test_frequent_drops_a_new_key_when_no_count_reaches_zero() -> None:
    h = Harness("frequent", [2, attr(0)], TYPES)
    _feed(h, "aabbc")
    assert len(h.take()) == 4  # nothing for c
    assert h.contents() == [("a", 1), ("b", 3)]


def test_frequent_without_an_attribute_keys_on_the_whole_event() -> None:
    h = Harness("frequent", [1], TYPES)
    h.send(1000, ("a", 1))
    h.send(1001, ("a", 1))  # same key "a1": counted, not a new key
    h.send(1002, ("a", 2))  # new key "a2": "a1" drops from 2 to 1, so "a2" is dropped
    assert h.take() == [[(1000, "C", ("a", 1))], [(1001, "C", ("a", 1))]]


def test_lossy_frequent_emits_only_keys_above_support_minus_error() -> None:
    h = Harness("lossyFrequent", [0.5, 0.1, attr(0)], TYPES)
    _feed(h, "abcabd")
    assert [c[0][2][0] for c in h.take()] == ["a", "b", "a", "b"]  # counts >= 0.4 * events so far


def test_lossy_frequent_prunes_rare_keys_every_window_width() -> None:
    h = Harness("lossyFrequent", [0.1, 0.5, attr(0)], TYPES)  # window width 2
    _feed(h, "aabc")
    assert h.take()[-1] == [
        (1003, "C", ("c", 3)),
        (1003, "E", ("a", 1)),
        (1003, "E", ("b", 2)),
        (1003, "E", ("c", 3)),
    ]
    assert h.contents() == []


@pytest.mark.parametrize(
    "window",
    [
        "frequent()",
        "frequent(2, v)",
        "frequent(2, 'a')",
        "frequent(2, sym, sym)",
        "frequent(2L)",
        "lossyFrequent(0.1)",
        "lossyFrequent(0.1, 0.01, v)",
        "lossyFrequent(1, 0.1)",
        "lossyFrequent(0.1, 0.01, 'sym')",
    ],
)
def test_frequent_windows_reject_bad_parameters(window: str) -> None:
    with pytest.raises(engine.QueryError):
        engine.compile(PLAN.format(w=window))


def test_frequent_windows_restore_exactly() -> None:
    rows = [(s, i) for i, s in enumerate("aabcbbdaceeaf")]
    for w in ("frequent(2)", "frequent(3, sym)", "lossyFrequent(0.3, 0.2, sym)"):
        assert_restore_equivalent(AGG.format(w=w), events("S", rows))
