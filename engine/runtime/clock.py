"""Clocks and the timer scheduler.

The engine never reads the wall clock itself: a `PlaybackClock` moves only when events
or `advance_to` say so, and a `WallClock` is handed the time by its driver (the server's
ticker thread). Timers fire in time order; a timer due at `t` fires before an event
stamped `t` is processed, as in Siddhi's playback mode.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Protocol

TimerCallback = Callable[[int, int], None]  # (due time, current time)


class Clock(Protocol):
    def now(self) -> int: ...


class PlaybackClock:
    """Time is the latest event timestamp or `advance_to` target (never moves back)."""

    def __init__(self, start: int | None = None) -> None:
        self.current: int | None = start

    def now(self) -> int:
        return self.current if self.current is not None else 0

    def observe(self, t: int) -> int:
        if self.current is None or t > self.current:
            self.current = t
        return self.current


class WallClock:
    """Wall time in ms, read through a function supplied by the embedding application."""

    def __init__(self, read_ms: Callable[[], int]) -> None:
        self._read = read_ms

    def now(self) -> int:
        return self._read()


class Scheduler:
    """A heap of (due time, sequence, callback); callbacks may schedule further timers."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, TimerCallback]] = []
        self._seq = itertools.count()

    def notify_at(self, due: int, callback: TimerCallback) -> None:
        heapq.heappush(self._heap, (due, next(self._seq), callback))

    def next_due(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def fire_until(self, now: int) -> None:
        heap = self._heap
        while heap and heap[0][0] <= now:
            due, _, callback = heapq.heappop(heap)
            callback(due, now)

    def pending(self) -> list[tuple[int, TimerCallback]]:
        return [(d, cb) for d, _, cb in sorted(self._heap)]

    def clear(self) -> None:
        self._heap.clear()

    def __len__(self) -> int:
        return len(self._heap)
