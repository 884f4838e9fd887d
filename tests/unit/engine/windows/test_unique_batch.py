"""Tumbling unique windows of the unique extension: lengthBatch, firstLengthBatch,
timeBatch, firstTimeBatch and externalTimeBatch."""

from __future__ import annotations

import pytest

import engine
from engine.types import AttrType
from tests.support.replaying import assert_restore_equivalent, events
from tests.unit.engine.windows.harness import Harness, attr

TYPES = [AttrType.STRING, AttrType.INT]
PLAN = "define stream S (ts long, sym string, v int); from S#window.{w} select sym, v insert all events into Out;"
AGG = "define stream S (ts long, sym string, v int); from S#window.{w} select sym, count() as n insert all events into Out;"


def _feed(h: Harness, *rows: tuple[str, int], start: int = 1000, step: int = 1) -> None:
    for i, row in enumerate(rows):
        h.send(start + i * step, row)


def test_unique_length_batch_emits_the_latest_event_per_key_in_hash_map_order() -> None:
    h = Harness("unique:lengthBatch", [attr(0), 2], TYPES)
    _feed(h, ("b", 1), ("a", 2), ("c", 3), ("c", 4), ("d", 5))
    # current events are stamped with the flush time; "a" hashes before "b"
    assert h.take() == [
        [(1001, "C", ("a", 2)), (1001, "C", ("b", 1))],
        [
            (1004, "E", ("a", 2)),
            (1004, "E", ("b", 1)),
            (1001, "R", ("a", 2)),
            (1004, "C", ("c", 4)),
            (1004, "C", ("d", 5)),
        ],
    ]


def test_unique_length_batch_orders_int_keys_by_their_java_hash() -> None:
    h = Harness("unique:lengthBatch", [attr(1), 3], TYPES)
    _feed(h, ("x", 5), ("y", 1), ("z", 20))  # buckets 5, 1, 4
    assert [row for _, _, row in h.take()[0]] == [("y", 1), ("z", 20), ("x", 5)]


def test_unique_first_length_batch_keeps_the_first_event_of_a_key() -> None:
    h = Harness("unique:firstLengthBatch", [attr(0), 2], TYPES)
    _feed(h, ("a", 1), ("a", 2), ("b", 3))
    assert h.take() == [[(1002, "C", ("a", 1)), (1002, "C", ("b", 3))]]


def test_unique_time_batch_flushes_the_latest_event_per_key_on_the_timer() -> None:
    h = Harness("unique:timeBatch", [attr(0), 1000], TYPES)
    _feed(h, ("a", 1), ("a", 2), ("b", 3), step=300)
    h.advance(2000)
    assert h.take() == [[(2000, "C", ("a", 2)), (2000, "C", ("b", 3))]]
    h.advance(3000)
    assert h.take() == [[(3000, "E", ("a", 2)), (3000, "E", ("b", 3))]]


def test_unique_first_time_batch_aligns_to_the_start_time() -> None:
    h = Harness("unique:firstTimeBatch", [attr(0), 1000, 200], TYPES)
    _feed(h, ("a", 1), ("a", 2), step=100)  # boundary at 1200
    h.advance(1200)
    assert h.take() == [[(1200, "C", ("a", 1))]]


def test_unique_external_time_batch_keeps_the_latest_event_per_key_in_arrival_order() -> None:
    types = [AttrType.LONG, AttrType.STRING, AttrType.INT]
    h = Harness("unique:externalTimeBatch", [attr(1), attr(0), 1000], types)
    rows = [(5000, "a", 1), (5100, "b", 2), (5200, "a", 3), (6000, "c", 4)]
    for i, row in enumerate(rows):
        h.send(1000 + i, row)
    assert h.take() == [[(6000, "R", rows[0]), (1002, "C", rows[2]), (1001, "C", rows[1])]]


@pytest.mark.parametrize(
    "window",
    [
        "unique:lengthBatch(sym)",
        "unique:lengthBatch(sym, v)",
        "unique:firstLengthBatch(sym, 2L)",
        "unique:timeBatch(sym)",
        "unique:timeBatch(sym, v)",
        "unique:firstTimeBatch(sym, 1 sec, v)",
        "unique:externalTimeBatch(sym, v, 1 sec)",
        "unique:externalTimeBatch(sym, ts)",
        "unique:externalTimeBatch(sym, ts, 1 sec, ts)",
        "unique:externalTimeBatch(sym, ts, 1 sec, 0, 100, 5)",
    ],
)
def test_unique_batch_windows_reject_bad_parameters(window: str) -> None:
    with pytest.raises(engine.QueryError):
        engine.compile(PLAN.format(w=window))


def test_unique_batch_windows_restore_exactly() -> None:
    rows = [(5000 + 300 * i, s, i) for i, s in enumerate("abacbdaed")]
    for w in ("unique:lengthBatch(sym, 2)", "unique:firstLengthBatch(sym, 2)"):
        assert_restore_equivalent(AGG.format(w=w), events("S", rows))
    timed = events("S", rows, step=300) + [{"time": 6000}]
    for w in (
        "unique:timeBatch(sym, 1 sec)",
        "unique:firstTimeBatch(sym, 1 sec, 0)",
        "unique:externalTimeBatch(sym, ts, 1 sec, 0, 500)",
    ):
        assert_restore_equivalent(AGG.format(w=w), timed)
