"""`output [all | first | last] every N events`: limiters that count events (Siddhi's
`EventOutputRateLimiter` family); no timers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from engine.events import Chunk
from engine.runtime.ratelimit.base import Item, Limiter, LimiterEnv, items_of


@dataclass(frozen=True)
class EventLimiterSpec:
    """`output <which> every <events> events`, with or without `group by`."""

    which: Literal["all", "first", "last"]
    events: int
    group_by: bool = False

    def build(self, env: LimiterEnv) -> Limiter:
        if self.which == "all":
            return AllPerEvent(self.events)
        if self.which == "first":
            return FirstGroupByPerEvent(self.events) if self.group_by else FirstPerEvent(self.events)
        return LastGroupByPerEvent(self.events) if self.group_by else LastPerEvent(self.events)


class AllPerEvent(Limiter):
    """Every N events, all N of them."""

    __slots__ = ("events", "buffer")

    def __init__(self, events: int) -> None:
        super().__init__()
        self.events = events
        self.buffer: list[Item] = []

    def process(self, chunk: Chunk) -> None:
        out: list[Item] = []
        for item in items_of(chunk):
            self.buffer.append(item)
            if len(self.buffer) == self.events:
                out.extend(self.buffer)
                self.buffer = []
        self.send(out)

    def snapshot(self) -> Any:
        return list(self.buffer)

    def restore(self, state: Any) -> None:
        self.buffer = list(state)


class FirstPerEvent(Limiter):
    """The first event of every N."""

    __slots__ = ("events", "counter")

    def __init__(self, events: int) -> None:
        super().__init__()
        self.events = events
        self.counter = 0

    def process(self, chunk: Chunk) -> None:
        out = []
        for item in items_of(chunk):
            self.counter += 1
            if self.counter == 1:
                out.append(item)
            elif self.counter == self.events:
                self.counter = 0
        self.send(out)

    def snapshot(self) -> Any:
        return self.counter

    def restore(self, state: Any) -> None:
        self.counter = state


class FirstGroupByPerEvent(Limiter):
    """Per group, the first event of every N of that group."""

    __slots__ = ("events", "counts")

    def __init__(self, events: int) -> None:
        super().__init__()
        self.events = events
        self.counts: dict[Any, int] = {}

    def process(self, chunk: Chunk) -> None:
        out = []
        for item in items_of(chunk):
            key = item[3]
            n = self.counts.get(key)
            if n is None:
                self.counts[key] = 1
                out.append(item)
            elif n == self.events - 1:
                del self.counts[key]
            else:
                self.counts[key] = n + 1
        self.send(out)

    def snapshot(self) -> Any:
        return dict(self.counts)

    def restore(self, state: Any) -> None:
        self.counts = dict(state)


class LastPerEvent(Limiter):
    """The last event of every N."""

    __slots__ = ("events", "counter")

    def __init__(self, events: int) -> None:
        super().__init__()
        self.events = events
        self.counter = 0

    def process(self, chunk: Chunk) -> None:
        out = []
        for item in items_of(chunk):
            self.counter += 1
            if self.counter == self.events:
                out.append(item)
                self.counter = 0
        self.send(out)

    def snapshot(self) -> Any:
        return self.counter

    def restore(self, state: Any) -> None:
        self.counter = state


class LastGroupByPerEvent(Limiter):
    """Every N events, the last event of each group among them."""

    __slots__ = ("events", "counter", "latest")

    def __init__(self, events: int) -> None:
        super().__init__()
        self.events = events
        self.counter = 0
        self.latest: dict[Any, Item] = {}

    def process(self, chunk: Chunk) -> None:
        out: list[Item] = []
        for item in items_of(chunk):
            self.latest[item[3]] = item
            self.counter += 1
            if self.counter == self.events:
                out.extend(self.latest.values())
                self.latest = {}
                self.counter = 0
        self.send(out)

    def snapshot(self) -> Any:
        return {"counter": self.counter, "latest": dict(self.latest)}

    def restore(self, state: Any) -> None:
        self.counter = state["counter"]
        self.latest = dict(state["latest"])
