"""externalTime and externalTimeBatch windows (spec §1.5, §1.6)."""

from __future__ import annotations

import pytest

import engine
from engine.types import AttrType
from tests.support.replaying import assert_restore_equivalent, events
from tests.unit.engine.windows.harness import Harness, attr

TYPES = [AttrType.LONG, AttrType.STRING]
PLAN = "define stream S (ts long, sym string, v int); from S#window.{w} select ts, sym insert all events into Out;"
AGG = "define stream S (ts long, sym string, v int); from S#window.{w} select sym, count() as n insert all events into Out;"


def test_external_time_expires_by_the_timestamp_attribute_not_the_clock() -> None:
    h = Harness("externalTime", [attr(0), 1000], TYPES)
    a, b, c = (5000, "a"), (5600, "b"), (6000, "c")
    h.send(1000, a)
    h.send(1001, b)
    h.advance(99_000)  # the engine clock expires nothing
    h.send(99_001, c)
    assert h.take() == [[(1000, "C", a)], [(1001, "C", b)], [(6000, "E", a), (99_001, "C", c)]]
    assert h.contents() == [b, c]


def test_external_time_batch_closes_a_batch_on_the_first_event_past_its_end() -> None:
    h = Harness("externalTimeBatch", [attr(0), 1000], TYPES)
    a, b, c, d = (5000, "a"), (5500, "b"), (6000, "c"), (7200, "d")
    for t, row in zip(range(1000, 1004), [a, b, c, d], strict=True):
        h.send(t, row)
    # expired events and the reset carry the external time of the event that closed the batch
    assert h.take() == [
        [(6000, "R", a), (1000, "C", a), (1001, "C", b)],
        [(7200, "E", a), (7200, "E", b), (7200, "R", c), (1002, "C", c)],
    ]


def test_external_time_batch_start_time_aligns_batches() -> None:
    h = Harness("externalTimeBatch", [attr(0), 1000, 0], TYPES)
    a, b, c = (5300, "a"), (5900, "b"), (6000, "c")
    for t, row in zip(range(1000, 1003), [a, b, c], strict=True):
        h.send(t, row)
    assert h.take() == [[(6000, "R", a), (1000, "C", a), (1001, "C", b)]]


def test_external_time_batch_start_time_attribute_is_read_from_the_first_event() -> None:
    types = [AttrType.LONG, AttrType.STRING, AttrType.LONG]
    h = Harness("externalTimeBatch", [attr(0), 1000, attr(2)], types)
    a, b, c = (5300, "a", 4900), (5800, "b", 0), (5900, "c", 0)
    for t, row in zip(range(1000, 1003), [a, b, c], strict=True):
        h.send(t, row)
    assert h.take() == [[(5900, "R", a), (1000, "C", a), (1001, "C", b)]]  # the batch ends at 4900 + 1000


def test_external_time_batch_timeout_flushes_then_sends_the_batch_again_with_late_events() -> None:
    h = Harness("externalTimeBatch", [attr(0), 1000, 0, 500], TYPES, expired=False)
    a, b, c, d = (5000, "a"), (5100, "b"), (5200, "c"), (6100, "d")
    h.send(1000, a)
    h.send(1100, b)
    h.advance(1600)  # the timeout (1000 + 500) flushes the open batch
    assert h.take() == [[(5100, "R", a), (1000, "C", a), (1100, "C", b)]]
    h.send(1700, c)  # still before the batch end: it goes out with the flushed batch
    h.advance(2100)
    assert h.take() == [[(5200, "R", c), (1000, "C", a), (1100, "C", b), (1700, "C", c)]]
    h.send(2200, d)
    assert h.take() == []
    h.advance(2700)
    # the reset event re-sent above is kept (Siddhi never clears it there), so it is c's
    assert h.take() == [[(6100, "R", c), (2200, "C", d)]]


def test_external_time_batch_can_replace_the_timestamp_with_the_batch_end() -> None:
    h = Harness("externalTimeBatch", [attr(0), 1000, 0, 0, True], TYPES)
    h.send(1000, (5300, "a"))
    h.send(1001, (6100, "b"))
    h.send(1002, (7000, "c"))
    assert h.take() == [
        [(6100, "R", (5300, "a")), (1000, "C", (6000, "a"))],
        [(7000, "E", (6000, "a")), (7000, "R", (6100, "b")), (1001, "C", (7000, "b"))],
    ]


@pytest.mark.parametrize(
    "window",
    [
        "externalTime(ts)",
        "externalTime(1000L, 1 sec)",
        "externalTime(v, 1 sec)",
        "externalTime(ts + 1, 1 sec)",
        "externalTime(ts, sym)",
        "externalTimeBatch(ts)",
        "externalTimeBatch(ts, 1 sec, 0, 100, 100)",
        "externalTimeBatch(ts, 1 sec, v)",
        "externalTimeBatch(ts, 1 sec, 0, v)",
        "externalTimeBatch(ts, 1 sec, 0, 100, true, 1)",
    ],
)
def test_external_windows_reject_bad_parameters(window: str) -> None:
    with pytest.raises(engine.QueryError):
        engine.compile(PLAN.format(w=window))


def test_external_windows_restore_exactly() -> None:
    rows = [(5000, "a", 1), (5400, "b", 2), (6100, "c", 3), (5900, "d", 4), (7600, "e", 5), (7700, "f", 6)]
    items = events("S", rows, step=400) + [{"time": 6000}]
    for w in (
        "externalTime(ts, 1 sec)",
        "externalTimeBatch(ts, 1 sec)",
        "externalTimeBatch(ts, 1 sec, 0, 500)",
        "externalTimeBatch(ts, 1 sec, ts, 300, true)",
    ):
        assert_restore_equivalent(AGG.format(w=w), items)
