"""Clocks and the timer scheduler.

The engine never reads the wall clock itself: a `PlaybackClock` moves only when events
or `advance_to` say so, and a `WallClock` is handed a time source by the embedding
application. Timers fire in (due time, request order); a timer due at `t` fires before an
event stamped `t` is processed, as in Siddhi's playback mode. Timers belong to owners
with stable ids, so pending timers are part of a snapshot and come back exactly.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

TimerCallback = Callable[[int, int], None]  # (due time, current time)


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
    """A heap of (due, sequence, owner id); owners register a callback under their id."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, str]] = []
        self._seq = itertools.count()
        self._owners: dict[str, TimerCallback] = {}
        # The earliest timestamp an event may still carry when timers fire: timers fired
        # ahead of a chunk spanning several timestamps must not assume the chunk's end.
        # Only patterns read it, so a chunk's minimum is computed when first asked for.
        self._floor: int | None = None
        self._floor_ts: list[int] | None = None

    @property
    def floor(self) -> int | None:
        if self._floor_ts is not None:
            self._floor = min(self._floor_ts)
            self._floor_ts = None
        return self._floor

    @floor.setter
    def floor(self, value: int | None) -> None:
        self._floor = value
        self._floor_ts = None

    def floor_of(self, ts: list[int]) -> None:
        """The floor is the smallest of these timestamps (computed if someone reads it)."""
        self._floor_ts = ts

    def register(self, owner: str, callback: TimerCallback) -> str:
        """Register a timer owner; ids are made unique and must be stable for a plan."""
        key = owner
        n = 2
        while key in self._owners:
            key = f"{owner}#{n}"
            n += 1
        self._owners[key] = callback
        return key

    def unregister(self, owner: str) -> None:
        self._owners.pop(owner, None)

    def unregister_prefix(self, prefix: str) -> None:
        """Forget every owner whose id starts with `prefix`; their timers become no-ops."""
        for owner in [o for o in self._owners if o.startswith(prefix)]:
            del self._owners[owner]
        # in place: a timer firing now (a partition's purge) may call this, and `fire_until`
        # must see the timers it schedules next in the heap it is working through
        self._heap[:] = [e for e in self._heap if not e[2].startswith(prefix)]
        heapq.heapify(self._heap)

    def notify_at(self, due: int, owner: str) -> None:
        heapq.heappush(self._heap, (due, next(self._seq), owner))

    def next_due(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def fire_until(self, now: int) -> None:
        heap = self._heap
        owners = self._owners
        while heap and heap[0][0] <= now:
            due, _, owner = heapq.heappop(heap)
            callback = owners.get(owner)
            if callback is not None:
                callback(due, now)

    def pending(self) -> list[tuple[int, int, str]]:
        """A copy of the pending timers (due, order, owner), in no particular order."""
        return list(self._heap)

    def discard(self, owned: Callable[[str], bool]) -> None:
        """Drop the pending timers whose owner id `owned` accepts."""
        self._heap[:] = [e for e in self._heap if not owned(e[2])]
        heapq.heapify(self._heap)

    def restore(self, timers: Any) -> None:
        """Add timers `[[due, owner], ...]`; those due together fire in the given order."""
        for due, owner in timers:
            heapq.heappush(self._heap, (due, next(self._seq), owner))

    def clear(self) -> None:
        self._heap.clear()

    def __len__(self) -> int:
        return len(self._heap)


class Timer:
    """A component's handle on the scheduler: `timer.at(due)` calls back `fn(due, now)`."""

    __slots__ = ("scheduler", "owner")

    def __init__(self, scheduler: Scheduler, owner: str, fn: TimerCallback) -> None:
        self.scheduler = scheduler
        self.owner = scheduler.register(owner, fn)

    def at(self, due: int) -> None:
        self.scheduler.notify_at(due, self.owner)
