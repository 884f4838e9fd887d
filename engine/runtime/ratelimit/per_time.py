"""`output [all | first | last] every T`: limiters over time periods (Siddhi's
`TimeOutputRateLimiter` family). `all` and `last` release on the clock at the end of each
period; `first` needs no timer: it lets an event through once a period has passed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from engine.events import Chunk
from engine.runtime.ratelimit.base import Item, Limiter, LimiterEnv, Periodic, items_of


@dataclass(frozen=True)
class TimeLimiterSpec:
    """`output <which> every <period> ms`, with or without `group by`."""

    which: Literal["all", "first", "last"]
    period: int
    group_by: bool = False

    def build(self, env: LimiterEnv) -> Limiter:
        if self.which == "all":
            return AllPerTime(self.period, env)
        if self.which == "first":
            if self.group_by:
                return FirstGroupByPerTime(self.period, env.now)
            return FirstPerTime(self.period, env.now)
        return LastGroupByPerTime(self.period, env) if self.group_by else LastPerTime(self.period, env)


class AllPerTime(Periodic):
    """At the end of each period, every event of the period."""

    __slots__ = ("buffer",)

    def __init__(self, period: int, env: LimiterEnv) -> None:
        super().__init__(period, env)
        self.buffer: list[Item] = []

    def process(self, chunk: Chunk) -> None:
        self.buffer.extend(items_of(chunk))

    def flush(self) -> None:
        out, self.buffer = self.buffer, []
        self.send(out)

    def held(self) -> Any:
        return list(self.buffer)

    def hold(self, state: Any) -> None:
        self.buffer = list(state)


class LastPerTime(Periodic):
    """At the end of each period, its last event."""

    __slots__ = ("last",)

    def __init__(self, period: int, env: LimiterEnv) -> None:
        super().__init__(period, env)
        self.last: Item | None = None

    def process(self, chunk: Chunk) -> None:
        items = items_of(chunk)
        if items:
            self.last = items[-1]

    def flush(self) -> None:
        if self.last is not None:
            item, self.last = self.last, None
            self.send([item])

    def held(self) -> Any:
        return self.last

    def hold(self, state: Any) -> None:
        self.last = state


class LastGroupByPerTime(Periodic):
    """At the end of each period, the last event of each group."""

    __slots__ = ("latest",)

    def __init__(self, period: int, env: LimiterEnv) -> None:
        super().__init__(period, env)
        self.latest: dict[Any, Item] = {}

    def process(self, chunk: Chunk) -> None:
        for item in items_of(chunk):
            self.latest[item[3]] = item

    def flush(self) -> None:
        out = list(self.latest.values())
        self.latest = {}
        self.send(out)

    def held(self) -> Any:
        return dict(self.latest)

    def hold(self, state: Any) -> None:
        self.latest = dict(state)


class FirstPerTime(Limiter):
    """No timer: the first event of a chunk passes if a period has gone by since the last."""

    __slots__ = ("period", "now", "output_time")

    def __init__(self, period: int, now: Callable[[], int]) -> None:
        super().__init__()
        self.period = period
        self.now = now
        self.output_time: int | None = None

    def process(self, chunk: Chunk) -> None:
        now = self.now()
        if self.output_time is None or self.output_time + self.period <= now:
            items = items_of(chunk)
            if items:
                self.output_time = now
                self.send(items[:1])

    def snapshot(self) -> Any:
        return self.output_time

    def restore(self, state: Any) -> None:
        self.output_time = state


class FirstGroupByPerTime(Limiter):
    """Per group, an event passes if a period has gone by since the group's last one."""

    __slots__ = ("period", "now", "last_output")

    def __init__(self, period: int, now: Callable[[], int]) -> None:
        super().__init__()
        self.period = period
        self.now = now
        self.last_output: dict[Any, int] = {}

    def process(self, chunk: Chunk) -> None:
        now = self.now()
        out = []
        for item in items_of(chunk):
            last = self.last_output.get(item[3])
            if last is None or last + self.period <= now:
                out.append(item)
                self.last_output[item[3]] = now
        self.send(out)

    def snapshot(self) -> Any:
        return dict(self.last_output)

    def restore(self, state: Any) -> None:
        self.last_output = dict(state)
