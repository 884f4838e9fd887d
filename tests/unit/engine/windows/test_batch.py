"""lengthBatch, timeBatch and batch windows (spec §1.2, §1.4, §1.12)."""

from __future__ import annotations

import pytest

import engine
from engine.types import AttrType
from tests.support.replaying import assert_restore_equivalent, events, run
from tests.unit.engine.windows.harness import Harness

TYPES = [AttrType.STRING, AttrType.INT]
A, B, C, D, E = ("a", 1), ("b", 2), ("c", 3), ("d", 4), ("e", 5)
PLAN = "define stream S (sym string, v int); from S#window.{w} select sym, v insert all events into Out;"
AGG = "define stream S (sym string, v int); from S#window.{w} select sym, count() as n insert all events into Out;"


def test_length_batch_emits_reset_before_the_next_batch() -> None:
    h = Harness("lengthBatch", [2], TYPES)
    for t, row in zip(range(1000, 1004), [A, B, C, D], strict=True):
        h.send(t, row)
    assert h.take() == [
        [(1001, "R", A), (1000, "C", A), (1001, "C", B)],
        [(1003, "E", A), (1003, "E", B), (1003, "R", C), (1002, "C", C), (1003, "C", D)],
    ]


def test_length_batch_skips_expired_events_nobody_reads() -> None:
    h = Harness("lengthBatch", [2], TYPES, expired=False)
    for t, row in zip(range(1000, 1004), [A, B, C, D], strict=True):
        h.send(t, row)
    assert h.take()[1] == [(1003, "R", C), (1002, "C", C), (1003, "C", D)]


def test_length_batch_splits_one_input_chunk_into_a_chunk_per_batch() -> None:
    h = Harness("lengthBatch", [2], TYPES)
    h.send(1000, A, B, C, D, E)
    assert h.take() == [
        [(1000, "R", A), (1000, "C", A), (1000, "C", B)],
        [(1000, "E", A), (1000, "E", B), (1000, "R", C), (1000, "C", C), (1000, "C", D)],
    ]


def test_length_batch_stream_current_event_expires_when_the_next_batch_starts() -> None:
    h = Harness("lengthBatch", [2, True], TYPES)
    for t, row in zip(range(1000, 1004), [A, B, C, D], strict=True):
        h.send(t, row)
    assert h.take() == [
        [(1000, "C", A)],
        [(1001, "C", B)],
        [(1002, "E", A), (1002, "E", B), (1002, "R", A), (1002, "C", C)],
        [(1003, "C", D)],
    ]


def test_length_batch_zero_emits_every_event_current_expired_then_reset() -> None:
    h = Harness("lengthBatch", [0], TYPES)
    h.send(1000, A)
    assert h.take() == [[(1000, "C", A), (1000, "E", A), (1000, "R", A)]]


def test_length_batch_join_without_expired_output_searches_every_completed_batch() -> None:
    # [BUG-COMPAT] the queue a join searches is cleared only when expired events are emitted
    h = Harness("lengthBatch", [2], TYPES, expired=False, for_join=True)
    for t, row in zip(range(1000, 1005), [A, B, C, D, E], strict=True):
        h.send(t, row)
    assert h.contents() == [A, B, C, D]
    h2 = Harness("lengthBatch", [2], TYPES, expired=True, for_join=True)
    for t, row in zip(range(1000, 1005), [A, B, C, D, E], strict=True):
        h2.send(t, row)
    assert h2.contents() == [C, D]


def test_time_batch_flushes_when_the_period_after_the_first_event_ends() -> None:
    h = Harness("timeBatch", [1000], TYPES)
    h.send(1000, A)
    h.send(1500, B)
    assert h.take() == []
    h.advance(2000)
    assert h.take() == [[(1000, "R", A), (1000, "C", A), (1500, "C", B)]]
    h.send(2100, C)
    h.advance(3000)
    assert h.take() == [[(3000, "E", A), (3000, "E", B), (2100, "R", C), (2100, "C", C)]]
    h.advance(4000)  # an empty period re-emits only the expiry, with no reset
    assert h.take() == [[(4000, "E", C)]]


def test_time_batch_start_time_aligns_the_boundaries() -> None:
    h = Harness("timeBatch", [1000, 300], TYPES)
    h.send(1000, A)  # first boundary: 1000 + (1000 - (1000 - 300) % 1000) = 1300
    h.advance(1300)
    assert h.take() == [[(1000, "R", A), (1000, "C", A)]]
    h.send(1400, B)
    h.advance(2299)
    assert h.take() == []
    h.advance(2300)
    assert h.take() == [[(2300, "E", A), (1400, "R", B), (1400, "C", B)]]


def test_time_batch_stream_current_event_passes_events_through() -> None:
    h = Harness("timeBatch", [1000, True], TYPES)
    h.send(1000, A)
    h.send(1500, B)
    h.advance(2000)
    assert h.take() == [[(1000, "C", A)], [(1500, "C", B)], [(2000, "E", A), (2000, "E", B), (1000, "R", A)]]


def test_time_batch_catches_up_one_period_per_timer() -> None:
    h = Harness("timeBatch", [1000], TYPES)
    h.send(1000, A)
    h.advance(3500)
    assert h.take() == [[(1000, "R", A), (1000, "C", A)], [(3500, "E", A)]]


def test_time_batch_count_restarts_with_each_batch() -> None:
    items = events("S", [A, B], step=300) + [{"time": 2000}] + events("S", [C], start=2100) + [{"time": 3000}]
    c = run(AGG.format(w="timeBatch(1 sec)"), items)
    assert c.rows("Out", "current") == [("b", 2), ("c", 1)]


def test_time_batch_partitions_share_the_next_boundary() -> None:
    # Siddhi keeps nextEmitTime in the processor: partition b's first event finds a's
    # boundary set, schedules nothing, and a's timers keep moving the boundary past b.
    plan = (
        "define stream S (sym string, v int); partition with (sym of S) begin "
        "from S#window.timeBatch(1 sec) select sym, count() as n insert into Out; end;"
    )
    items = events("S", [A], start=1000) + events("S", [B], start=1500) + [{"time": 3000}]
    items += events("S", [("b", 3)], start=3500) + [{"time": 6000}]
    assert run(plan, items).rows("Out") == [("a", 1)]
    assert_restore_equivalent(plan, items)


def test_batch_window_makes_each_input_chunk_a_batch() -> None:
    h = Harness("batch", [], TYPES)
    h.send(1000, A, B)
    h.send(1001, C)
    assert h.take() == [
        [(1000, "C", A), (1000, "C", B)],
        [(1001, "E", A), (1001, "E", B), (1000, "R", A), (1001, "C", C)],
    ]


def test_batch_window_with_a_length_cuts_chunks_into_batches() -> None:
    h = Harness("batch", [2], TYPES)
    h.send(1000, A, B, C)
    h.send(1001, D)
    assert h.take() == [
        [(1000, "C", A), (1000, "C", B)],
        [(1000, "R", A), (1000, "C", C)],
        [(1001, "E", A), (1001, "E", B), (1001, "E", C), (1000, "R", C), (1001, "C", D)],
    ]


def test_batch_window_join_without_expired_output_finds_nothing() -> None:
    # [BUG-COMPAT] the queue a join searches is filled only when expired events are emitted
    h = Harness("batch", [], TYPES, expired=False, for_join=True)
    h.send(1000, A, B)
    assert h.contents() == []


@pytest.mark.parametrize(
    "window",
    [
        "lengthBatch(v)",
        "lengthBatch(2, 3)",
        "lengthBatch(2, true, 1)",
        "lengthBatch()",
        "timeBatch('2 sec', 0)",
        "timeBatch(1 sec, 0, 5)",
        "timeBatch(1 sec, true, 0)",
        "timeBatch(v)",
        "batch(1, 2)",
        "batch(-1)",
        "batch(v)",
    ],
)
def test_batch_windows_reject_bad_parameters(window: str) -> None:
    with pytest.raises(engine.QueryError):
        engine.compile(PLAN.format(w=window))


def test_batch_windows_restore_exactly() -> None:
    rows = [A, B, C, D, E, ("f", 6), ("g", 7)]
    for w in ("lengthBatch(3)", "lengthBatch(2, true)", "batch(2)"):
        assert_restore_equivalent(AGG.format(w=w), events("S", rows))
    timed = events("S", rows, step=400) + [{"time": 6000}]
    for w in ("timeBatch(1 sec)", "timeBatch(1 sec, 200, true)"):
        assert_restore_equivalent(AGG.format(w=w), timed)
