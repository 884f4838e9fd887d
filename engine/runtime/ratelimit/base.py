"""What every output rate limiter shares: the items it holds (event time, row, kind,
group key), turning chunks into items and back, the runtime it runs in, and the
periodic base of limiters that fire on the clock.

Imports only engine.events and runtime modules below queries (clock, query stages).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.events import CURRENT, EXPIRED, Chunk
from engine.runtime.clock import Scheduler, Timer
from engine.runtime.query import Stage

Item = tuple[int, tuple[Any, ...], int, Any]  # ts, row, kind, group key


def items_of(chunk: Chunk) -> list[Item]:
    kinds = chunk.kinds or [CURRENT] * len(chunk.rows)
    keys = chunk.keys or [None] * len(chunk.rows)
    return list(zip(chunk.ts, chunk.rows, kinds, keys, strict=True))


def chunk_of(items: list[Item]) -> Chunk:
    kinds = [i[2] for i in items]
    return Chunk(
        [i[0] for i in items],
        [i[1] for i in items],
        None if EXPIRED not in kinds else kinds,
        [i[3] for i in items],
    )


@dataclass(frozen=True)
class LimiterEnv:
    """Where a limiter runs: the scheduler and the owner id of its timer, the runtime's
    clock, and the time the runtime started (periods count from it)."""

    scheduler: Scheduler
    owner: str
    now: Callable[[], int]
    start_time: Callable[[], int]


class Limiter(Stage):
    """A stage between the selector and the output that holds events back."""

    __slots__ = ()

    def send(self, items: list[Item]) -> None:
        if items:
            assert self.next is not None
            self.next.process(chunk_of(items))

    def start(self) -> None:
        """Called once the runtime starts (time-based limiters set their first timer)."""

    def snapshot(self) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def restore(self, state: Any) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class Periodic(Limiter):
    """Fires every `period` ms from the runtime's start; `flush` releases what is held.
    Its snapshot is `{"scheduled": next due time, "held": held()}`."""

    __slots__ = ("period", "start_time", "scheduled", "timer")

    def __init__(self, period: int, env: LimiterEnv) -> None:
        super().__init__()
        self.period = period
        self.start_time = env.start_time
        self.scheduled: int | None = None
        self.timer = Timer(env.scheduler, env.owner, self.on_timer)

    def start(self) -> None:
        if self.scheduled is None:
            self.scheduled = self.start_time() + self.period
            self.timer.at(self.scheduled)

    def on_timer(self, due: int, now: int) -> None:
        if self.scheduled is None or due < self.scheduled:
            return
        self.flush()
        self.scheduled += self.period
        self.timer.at(self.scheduled)

    def flush(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def held(self) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def hold(self, state: Any) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def snapshot(self) -> Any:
        return {"scheduled": self.scheduled, "held": self.held()}

    def restore(self, state: Any) -> None:
        self.scheduled = state["scheduled"]
        self.hold(state["held"])
