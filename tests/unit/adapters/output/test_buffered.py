"""The shared buffer/writer/retry machinery, through the in-memory double."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from adapters.output import AdapterConfigError, AdapterStopped, Buffering, MemoryAdapter, build_adapter
from adapters.output.base import Fence, Run
from adapters.throttle import Throttle


def fast(**kwargs: Any) -> Buffering:
    return Buffering(**{"retry_initial_ms": 5, "retry_max_ms": 20, **kwargs})


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.005)


Make = Callable[..., MemoryAdapter]


@pytest.fixture
def adapter() -> Iterator[Make]:
    made: list[MemoryAdapter] = []

    def make(
        buffering: Buffering | None = None, refuse: Callable[[object], bool] | None = None, **options: Any
    ) -> MemoryAdapter:
        a = MemoryAdapter(buffering=buffering, refuse=refuse, **options)
        made.append(a)
        return a

    yield make
    for a in made:
        a.stop(timeout=1.0)


def test_records_are_written_in_order_in_bounded_batches(adapter: Make) -> None:
    out = adapter(buffering=fast(batch_events=3))
    assert out.publish(list(range(10))) == 10
    out.start()
    assert out.flush(timeout=5)
    assert out.written == list(range(10))
    assert max(len(b) for b in out.batches) <= 3
    s = out.stats
    assert (s.published, s.written, s.pending, s.dropped) == (10, 10, 0, 0)


def test_records_wait_while_the_target_is_down_and_none_are_lost(adapter: Make) -> None:
    out = adapter(buffering=fast())
    out.available = False
    out.start()
    out.publish(list(range(50)))
    wait_for(lambda: out.stats.errors >= 3)
    assert not out.flush(timeout=0.05)
    assert out.stats.pending == 50 and out.written == []
    out.available = True
    out.publish(list(range(50, 60)))
    assert out.flush(timeout=5)
    assert out.written == list(range(60))
    assert out.stats.dropped == 0


def test_a_full_buffer_that_drops_refuses_records_and_counts_and_logs_the_overflow(
    adapter: Make, caplog: pytest.LogCaptureFixture
) -> None:
    out = adapter(buffering=fast(buffer_events=5, on_full="drop"))
    out.available = False
    out.start()
    with caplog.at_level(logging.WARNING, logger="adapters.output.buffered"):
        assert out.publish(list(range(8))) == 5
        assert out.publish([8, 9]) == 0  # within the log interval: counted, not logged again
    s = out.stats
    assert (s.published, s.overflow, s.pending, s.dropped) == (5, 5, 5, 5)
    lines = [r.getMessage() for r in caplog.records if "buffer full" in r.getMessage()]
    assert len(lines) == 1 and "refused 3 records" in lines[0]
    out.available = True
    assert out.flush(timeout=5)
    assert out.written == [0, 1, 2, 3, 4]


def test_a_full_buffer_that_blocks_takes_every_record_and_has_room_again_once_written(
    adapter: Make,
) -> None:
    out = adapter(buffering=fast(buffer_events=5))
    out.available = False
    out.start()
    assert out.room(0.0)
    assert out.publish(list(range(8))) == 8  # what a bundle admitted with room produces is taken
    assert not out.room(0.05)  # the next bundle waits, then is refused upstream
    s = out.stats
    assert (s.published, s.overflow, s.pending, s.dropped) == (8, 0, 8, 0)
    room = threading.Thread(target=lambda: results.append(out.room(5.0)))
    results: list[bool] = []
    room.start()
    out.available = True  # the target is back: the writer drains and wakes the waiter
    room.join(6.0)
    assert results == [True]
    assert out.flush(timeout=5)
    assert out.written == list(range(8))


def test_on_full_is_checked_by_name() -> None:
    with pytest.raises(AdapterConfigError, match="on_full: must be one of block, drop; got 'wait'"):
        build_adapter("http", "h", {"url": "http://127.0.0.1:9/", "on_full": "wait"})


def test_a_dropping_adapter_never_makes_the_input_wait(adapter: Make) -> None:
    out = adapter(buffering=fast(buffer_events=1, on_full="drop"))
    out.available = False
    out.start()
    out.publish([1, 2, 3])
    assert out.room(0.0)


def test_refused_batches_are_retried_one_by_one_so_only_bad_records_are_rejected(
    adapter: Make, caplog: pytest.LogCaptureFixture
) -> None:
    out = adapter(buffering=fast(batch_events=10), refuse=lambda r: r == "bad")
    out.publish(["a", "bad", "c", "d"])
    with caplog.at_level(logging.ERROR, logger="adapters.output.buffered"):
        out.start()
        assert out.flush(timeout=5)
    assert out.written == ["a", "c", "d"]
    s = out.stats
    assert (s.written, s.rejected, s.dropped) == (3, 1, 1)
    assert any("rejected record 'bad'" in r.getMessage() for r in caplog.records)


def test_a_raising_fence_discards_its_records_and_others_are_written(adapter: Make) -> None:
    out = adapter(buffering=fast())
    calls: list[object] = []

    def deposed(handle: object) -> None:
        calls.append(handle)
        raise RuntimeError("epoch 3 is stale")

    out.publish([1, 2], fence=deposed)
    out.publish([3], fence=lambda handle: None)
    out.start()
    assert out.flush(timeout=5)
    assert out.written == [3]
    assert out.stats.fenced == 2 and calls == [None]
    assert [len(b) for b in out.batches] == [1]  # records of different fences never share a batch


def test_stop_flushes_then_abandons_what_cannot_be_written(
    adapter: Make, caplog: pytest.LogCaptureFixture
) -> None:
    out = adapter(buffering=fast())
    out.available = False
    out.start()
    out.publish([1, 2, 3])
    with caplog.at_level(logging.WARNING, logger="adapters.output.buffered"):
        assert out.stop(timeout=0.1) is False
    s = out.stats
    assert (s.abandoned, s.pending, s.dropped) == (3, 0, 3)
    assert any("3 records not written" in r.getMessage() for r in caplog.records)
    with pytest.raises(AdapterStopped):
        out.publish([4])
    with pytest.raises(AdapterStopped):
        out.start()


def test_stop_waits_for_the_buffer_to_drain(adapter: Make) -> None:
    out = adapter(buffering=fast(batch_events=1))
    out.start()
    out.publish(list(range(100)))
    assert out.stop(timeout=5) is True
    assert out.written == list(range(100))
    assert out.stop() is True  # idempotent


def test_flush_without_a_writer_returns_false_at_once(adapter: Make) -> None:
    out = adapter()
    assert out.flush(timeout=None) is True  # nothing pending
    out.publish([1])
    # without a timeout: a flush that waited for a writer that is not there would never return
    answers: list[bool] = []
    flusher = threading.Thread(target=lambda: answers.append(out.flush(timeout=None)), daemon=True)
    flusher.start()
    flusher.join(5)
    assert answers == [False]


def test_publishing_from_many_threads_keeps_every_record(adapter: Make) -> None:
    out = adapter(buffering=fast(batch_events=7))
    out.start()

    def produce(base: int) -> None:
        for i in range(200):
            out.publish([base + i])

    threads = [threading.Thread(target=produce, args=(k * 1000,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out.flush(timeout=5)
    assert sorted(out.written) == sorted(k * 1000 + i for k in range(4) for i in range(200))
    for k in range(4):  # each producer's records stay in its order
        mine = [r for r in out.written if r // 1000 == k]
        assert mine == sorted(mine)


class Clock:
    """A linger's clock that stands still until the test moves it (`now`), and counts how often
    the writer read it: two reads mean the writer is lingering (a deadline, then what remains)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.reads = 0
        self._read = threading.Condition()

    def __call__(self) -> float:
        with self._read:
            self.reads += 1
            self._read.notify_all()
            return self.now

    def wait_reads(self, reads: int) -> None:
        with self._read:
            assert self._read.wait_for(lambda: self.reads >= reads, 5), f"{self.reads} reads, not {reads}"


class Gated(MemoryAdapter):
    """Its first write waits for `gate`: records published meanwhile arrive during a write."""

    def __init__(self, buffering: Buffering) -> None:
        self.clock = Clock()
        super().__init__(buffering=buffering, clock=self.clock)
        self.gate = threading.Event()
        self.writing = threading.Event()

    def _write(self, records: list[object], fence: Fence | None, origins: list[Run]) -> int:
        if not self.writing.is_set():
            self.writing.set()
            assert self.gate.wait(5)
        return super()._write(records, fence, origins)


@pytest.fixture
def gated() -> Iterator[Callable[..., Gated]]:
    made: list[Gated] = []

    def make(**kwargs: Any) -> Gated:
        a = Gated(fast(**kwargs))
        made.append(a)
        return a

    yield make
    for a in made:
        a.gate.set()
        a.stop(timeout=1.0)


def lingering(out: Gated) -> None:
    """Publish [0] to an idle writer, [1, 2] while it writes [0], and wait until it lingers."""
    out.start()
    out.publish([0])  # an idle writer takes it at once
    assert out.writing.wait(5)
    out.publish([1, 2])  # arrives during that write: the writer lingers for more
    out.gate.set()
    out.clock.wait_reads(2)


def test_under_a_steady_stream_the_writer_lingers_for_a_full_batch(gated: Callable[..., Gated]) -> None:
    out = gated(batch_events=10, linger_ms=1000)
    lingering(out)
    assert out.batches == [[0]]
    out.publish(list(range(3, 11)))  # a full batch ends the linger, with its clock standing still
    assert out.flush(timeout=5)
    assert out.batches == [[0], list(range(1, 11))] and out.clock.now == 0.0


def test_a_linger_ends_after_linger_ms_with_what_arrived(gated: Callable[..., Gated]) -> None:
    out = gated(batch_events=10, linger_ms=100)  # each wait for more records lasts 0.1 s at most
    lingering(out)
    out.clock.now = 0.099
    out.clock.wait_reads(out.clock.reads + 2)  # its waits time out, it reads the clock: still lingering
    assert out.batches == [[0]]
    out.clock.now = 0.1  # linger_ms after the linger began
    assert out.flush(timeout=5)
    assert out.batches == [[0], [1, 2]]


def test_an_idle_writer_adds_no_linger(adapter: Make) -> None:
    clock = Clock()
    out = adapter(buffering=fast(batch_events=10, linger_ms=1000), clock=clock)
    out.start()
    for i in range(3):
        out.publish([i])
        assert out.flush(timeout=5)  # (a linger would never end: its clock stands still)
    assert out.batches == [[0], [1], [2]] and clock.reads == 0


def test_without_linger_records_that_arrived_during_a_write_go_at_once(gated: Callable[..., Gated]) -> None:
    out = gated(batch_events=10, linger_ms=0)
    out.start()
    out.publish([0])
    assert out.writing.wait(5)
    out.publish([1, 2])
    out.gate.set()
    assert out.flush(timeout=5)
    assert out.batches == [[0], [1, 2]] and out.clock.reads == 0


def test_stop_ends_a_linger(gated: Callable[..., Gated]) -> None:
    out = gated(batch_events=10, linger_ms=1000)
    lingering(out)
    assert out.stop(timeout=5)  # not by the linger's clock: it stands still
    assert out.written == [0, 1, 2] and out.clock.now == 0.0


@pytest.mark.parametrize("value", [-1, 1001])
def test_linger_ms_is_from_0_to_1000(value: float) -> None:
    config = {"url": "http://127.0.0.1:9/", "linger_ms": value}
    with pytest.raises(AdapterConfigError, match="linger_ms") as info:
        build_adapter("http", "out", config)
    assert info.value.key == "linger_ms"


def test_backoff_doubles_up_to_the_maximum() -> None:
    b = Buffering(retry_initial_ms=100, retry_max_ms=1000)
    assert [b.backoff(n) for n in range(1, 7)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert b.backoff(10_000) == 1.0


def test_throttle_lets_one_through_per_interval_and_counts_the_rest() -> None:
    now = [0.0]
    t = Throttle(10.0, clock=lambda: now[0])
    assert t.allow() == (True, 0)
    assert t.allow() == (False, 0)
    assert t.allow() == (False, 0)
    now[0] = 10.0
    assert t.allow() == (True, 2)
