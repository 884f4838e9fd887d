"""Origins: checked at publish, carried to `_write` with each record, and skipped records counted."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.output import (
    AdapterStats,
    BufferedAdapter,
    Buffering,
    Fence,
    MemoryAdapter,
    Origin,
    RecordError,
    Run,
    build_adapter,
    per_record,
)


def origins(source: str, log_id: str, *positions: int) -> list[Origin]:
    return [Origin(source, log_id, p, 0) for p in positions]


def balanced(s: AdapterStats) -> bool:
    return s.published == s.written + s.rejected + s.fenced + s.skipped + s.abandoned + s.pending


class Recording(BufferedAdapter):
    """A target that remembers what `_write` was given and reports `skip(records)` as skipped."""

    kind = "recording"

    def __init__(self, skip: Callable[[list[Any]], int | None] = lambda records: None) -> None:
        super().__init__("recording", Buffering(retry_initial_ms=5, retry_max_ms=20))
        self.skip = skip
        self.calls: list[tuple[list[Any], list[Origin | None]]] = []
        self.runs: list[list[Run]] = []

    def _write(self, records: list[Any], fence: Fence | None, origins: list[Run]) -> int | None:
        assert sum(count for _, count in origins) == len(records)
        self.calls.append((list(records), per_record(origins)))
        self.runs.append(list(origins))
        return self.skip(records)


@pytest.fixture
def stop_after() -> Iterator[Callable[[BufferedAdapter], BufferedAdapter]]:
    made: list[BufferedAdapter] = []

    def keep(adapter: BufferedAdapter) -> BufferedAdapter:
        made.append(adapter)
        return adapter

    yield keep
    for adapter in made:
        adapter.stop(timeout=1.0)


def test_an_origin_follows_the_last_one_of_its_log_or_any_of_another_log() -> None:
    last = Origin("pizza/out/table", "log-a", 7, 1)
    assert Origin("pizza/out/table", "log-a", 7, 2).follows(last)
    assert Origin("pizza/out/table", "log-a", 8, 0).follows(last)
    assert not Origin("pizza/out/table", "log-a", 7, 1).follows(last)
    assert not Origin("pizza/out/table", "log-a", 6, 9).follows(last)
    assert Origin("pizza/out/table", "log-b", 0, 0).follows(last)
    assert Origin("pizza/out/table", "log-a", 0, 0).follows(None)


def test_origins_must_be_parallel_to_the_records(stop_after: Callable[..., Any]) -> None:
    out = stop_after(MemoryAdapter())
    with pytest.raises(RecordError, match="2 origins for 3 records"):
        out.publish(["a", "b", "c"], origins=origins("s", "l", 1, 2))
    logged = build_adapter("logger", "log")
    with pytest.raises(RecordError, match="1 origins for 2 records"):
        logged.publish(["a", "b"], origins=[None])
    assert out.stats.published == 0 and logged.stats.published == 0


@pytest.mark.parametrize(
    ("origin", "problem"),
    [
        (Origin("x" * 201, "l", 0, 0), "source must be a string of 1 to 200"),
        (Origin("", "l", 0, 0), "source must be a string of 1 to 200"),
        (Origin("plan ", "l", 0, 0), "must not end with a space"),
        (Origin("s", "l" * 65, 0, 0), "log_id must be a string of 1 to 64"),
        (Origin("s", "l", -1, 0), "position must be an integer"),
        (Origin("s", "l", 0, 2**63), "index must be an integer"),
        (("s", "l", 0, 0), "is a tuple"),
    ],
)
def test_an_origin_a_table_could_not_hold_refuses_the_call(
    stop_after: Callable[..., Any], origin: Any, problem: str
) -> None:
    out = stop_after(MemoryAdapter())
    with pytest.raises(RecordError, match=problem):
        out.publish(["a", "b"], origins=[None, origin])


def test_origins_reach_the_write_with_their_records_none_included(stop_after: Callable[..., Any]) -> None:
    out = stop_after(Recording())
    first = origins("s", "l", 1, 2)
    out.publish(["a", "b"], origins=first)
    out.publish(["c"])
    out.publish(["d", "e"], origins=[None, Origin("s", "l", 3, 0)])
    out.start()
    assert out.flush(timeout=5)
    assert out.calls == [(["a", "b", "c", "d", "e"], [*first, None, None, Origin("s", "l", 3, 0)])]


def test_skipped_records_are_counted_apart_from_written_ones(stop_after: Callable[..., Any]) -> None:
    out = stop_after(Recording(skip=lambda records: sum(1 for r in records if r.startswith("old"))))
    out.publish(["old1", "old2", "new1"], origins=origins("s", "l", 1, 2, 3))
    out.start()
    assert out.flush(timeout=5)
    s = out.stats
    assert (s.published, s.written, s.skipped, s.pending) == (3, 1, 2, 0)
    assert balanced(s)


def test_batches_with_origins_still_never_mix_fences(stop_after: Callable[..., Any]) -> None:
    out = stop_after(Recording())
    out.publish(["a"], fence=lambda handle: None, origins=origins("s", "l", 1))
    out.publish(["b"], origins=origins("s", "l", 2))
    out.start()
    assert out.flush(timeout=5)
    assert [records for records, _ in out.calls] == [["a"], ["b"]]


def test_records_retried_one_by_one_keep_their_origins(stop_after: Callable[..., Any]) -> None:
    out = stop_after(MemoryAdapter(refuse=lambda r: r == "bad", skip_delivered=True))
    out.publish(["a", "bad", "c"], origins=origins("s", "l", 1, 2, 3))
    out.start()
    assert out.flush(timeout=5)
    assert out.written == ["a", "c"]
    assert out.origins == [Origin("s", "l", 1, 0), Origin("s", "l", 3, 0)]
    s = out.stats
    assert (s.written, s.rejected, s.skipped) == (2, 1, 0) and balanced(s)


def test_the_memory_double_skips_a_replay_like_a_table_that_records_origins(
    stop_after: Callable[..., Any],
) -> None:
    out = stop_after(MemoryAdapter(skip_delivered=True))
    out.delivered["s"] = Origin("s", "l", 2, 0)  # as the process before the restart left it
    out.publish(["r1", "r2", "r3", "r4", "plain"], origins=[*origins("s", "l", 1, 2, 3, 4), None])
    out.publish(["other"], origins=[Origin("t", "l", 1, 0)])  # another source: its own mark
    out.publish(["new log"], origins=[Origin("s", "m", 0, 0)])
    out.start()
    assert out.flush(timeout=5)
    assert out.written == ["r3", "r4", "plain", "other", "new log"]
    assert out.delivered == {"s": Origin("s", "m", 0, 0), "t": Origin("t", "l", 1, 0)}
    s = out.stats
    assert (s.written, s.skipped) == (5, 2) and balanced(s)


def test_adapters_that_cannot_tell_deliver_a_replay_again(caplog: pytest.LogCaptureFixture) -> None:
    out = build_adapter("logger", "log", {"logger": "test.origins"})
    with caplog.at_level(logging.INFO, logger="test.origins"):
        for _ in range(2):
            out.publish(["hello"], origins=origins("s", "l", 1))
    assert [r.getMessage() for r in caplog.records] == ["hello", "hello"]
    s = out.stats
    assert (s.written, s.skipped) == (2, 0) and balanced(s)


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (Origin("s", "l", 5, -1), "origin 7 .*index must be an integer"),
        (Origin("s", "l", True, 0), "origin 7 .*position must be an integer"),
        (Origin("s ", "l", 5, 7), "origin 7 .*must not end with a space"),
    ],
)
def test_one_bad_origin_among_many_good_ones_is_named(
    stop_after: Callable[..., Any], bad: Origin, problem: str
) -> None:
    out = stop_after(MemoryAdapter())
    many = [Origin("s", "l", 5, i) for i in range(50)]
    many[7] = bad
    with pytest.raises(RecordError, match=problem):
        out.publish(list(range(50)), origins=many)


def test_one_origin_stands_for_a_run_and_batches_cut_it_where_they_end(
    stop_after: Callable[..., Any],
) -> None:
    out = stop_after(Recording())
    out.buffering = Buffering(batch_events=3, retry_initial_ms=5, retry_max_ms=20)
    out.publish(["a", "b", "c", "d", "e"], origins=Origin("s", "l", 7, 0))
    out.publish(["f"])
    out.publish(["g", "h"], origins=Origin("s", "l", 8, 4))
    out.start()
    assert out.flush(timeout=5)
    assert out.runs == [
        [(Origin("s", "l", 7, 0), 3)],
        [(Origin("s", "l", 7, 3), 2), (None, 1)],
        [(Origin("s", "l", 8, 4), 2)],
    ]
    assert [o for _, origins in out.calls for o in origins] == [
        *(Origin("s", "l", 7, i) for i in range(5)),
        None,
        Origin("s", "l", 8, 4),
        Origin("s", "l", 8, 5),
    ]


def test_per_record_origins_reach_the_write_as_runs(stop_after: Callable[..., Any]) -> None:
    out = stop_after(Recording())
    given: list[Origin | None] = [Origin("s", "l", 1, 0), Origin("s", "l", 1, 1), None, None]
    given += [Origin("s", "l", 2, 0), Origin("t", "l", 2, 1), Origin("t", "l", 2, 2)]
    out.publish(list(range(7)), origins=given)
    out.start()
    assert out.flush(timeout=5)
    assert out.runs == [
        [
            (Origin("s", "l", 1, 0), 2),
            (None, 2),
            (Origin("s", "l", 2, 0), 1),
            (Origin("t", "l", 2, 1), 2),
        ]
    ]


@pytest.mark.parametrize(
    ("first", "n", "problem"),
    [
        (Origin("s ", "l", 5, 0), 3, r"origin Origin\(source='s '.*must not end with a space"),
        (Origin("s", "l", -1, 0), 3, "position must be an integer"),
        (Origin("s", "l", 0, 2**63 - 2), 3, r"index \+ 3 records must stay under 2\*\*63"),
    ],
)
def test_a_run_a_table_could_not_hold_refuses_the_call(
    stop_after: Callable[..., Any], first: Origin, n: int, problem: str
) -> None:
    out = stop_after(MemoryAdapter())
    with pytest.raises(RecordError, match=problem):
        out.publish(list(range(n)), origins=first)
    assert out.stats.published == 0


def test_a_full_buffer_cuts_a_run_and_the_counts_add_up(stop_after: Callable[..., Any]) -> None:
    out = stop_after(MemoryAdapter(buffering=Buffering(buffer_events=4, on_full="drop"), skip_delivered=True))
    assert out.publish(["a", "b"], origins=Origin("s", "l", 1, 0)) == 2
    assert out.publish(["c", "d", "e", "f"], origins=Origin("s", "l", 2, 0)) == 2
    out.start()
    assert out.flush(timeout=5)
    assert out.written == ["a", "b", "c", "d"]
    assert out.origins == [
        Origin("s", "l", 1, 0),
        Origin("s", "l", 1, 1),
        Origin("s", "l", 2, 0),
        Origin("s", "l", 2, 1),
    ]
    s = out.stats
    assert (s.published, s.overflow, s.written) == (4, 2, 4) and balanced(s)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["s", "t"]), st.integers(1, 6)), min_size=1, max_size=8),
    st.data(),
)
def test_a_replay_after_a_crash_mid_run_delivers_every_record_once(
    outputs: list[tuple[str, int]], data: st.DataObject
) -> None:
    """Input record p caused `n` outputs on source `s` or `t`; the dead process wrote the first
    `crash` records (published as runs, in batches of its size) and the restarted one replays
    everything, in batches of another size, from the marks the first one left."""
    published = [(source, p, n) for p, (source, n) in enumerate(outputs)]
    total = sum(n for _, _, n in published)
    crash = data.draw(st.integers(0, total), label="crash")
    sizes = st.integers(1, 7)

    def run(adapter: MemoryAdapter, upto: int) -> None:
        at = 0
        for source, p, n in published:
            take = min(n, upto - at)
            if take > 0:
                adapter.publish([(p, i) for i in range(take)], origins=Origin(source, "l", p, 0))
            at += n
        adapter.start()
        assert adapter.flush(timeout=5)
        adapter.stop(timeout=1)

    dead = MemoryAdapter(
        buffering=Buffering(batch_events=data.draw(sizes, label="batch")), skip_delivered=True
    )
    run(dead, crash)
    again = MemoryAdapter(
        buffering=Buffering(batch_events=data.draw(sizes, label="batch again")), skip_delivered=True
    )
    again.delivered = dict(dead.delivered)
    run(again, total)
    everything = [(p, i) for _, p, n in published for i in range(n)]
    assert dead.written + again.written == everything
    s = again.stats
    assert (s.written, s.skipped) == (total - crash, crash) and balanced(s)
    assert dead.origins + again.origins == [
        Origin(src, "l", p, i) for src, p, n in published for i in range(n)
    ]
