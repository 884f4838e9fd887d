"""Drive one window directly (no planner, no selector): feed chunks on a playback clock and
see every chunk it emits, reset events included."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.events import CURRENT, EXPIRED, RESET, Chunk
from engine.runtime.clock import PlaybackClock, Scheduler
from engine.runtime.windows import REGISTRY, WindowContext
from engine.types import AttrType

KIND = {CURRENT: "C", EXPIRED: "E", RESET: "R"}
Out = tuple[int, str, tuple[Any, ...]]  # (timestamp, C/E/R, row)


def attr(i: int) -> Callable[[tuple[Any, ...]], Any]:
    """An attribute parameter reading position `i`, as the planner prepares one."""

    def read(row: tuple[Any, ...]) -> Any:
        return row[i]

    read.code = f"r[{i}]"  # type: ignore[attr-defined]
    return read


class Harness:
    def __init__(
        self,
        name: str,
        args: list[Any],
        types: list[AttrType],
        *,
        expired: bool = True,
        for_join: bool = False,
    ) -> None:
        self.clock = PlaybackClock()
        self.scheduler = Scheduler()
        ctx = WindowContext(self.scheduler, "w", self.clock.now, expired, "q", types, lambda: 0, for_join)
        self.window = REGISTRY[name.lower()].factory(ctx, args)
        self.chunks: list[list[Out]] = []
        self.window.emit = self._collect

    def _collect(self, chunk: Chunk) -> None:
        kinds = chunk.kinds or [CURRENT] * len(chunk.rows)
        self.chunks.append([(t, KIND[k], r) for t, r, k in zip(chunk.ts, chunk.rows, kinds, strict=True)])

    def advance(self, t: int) -> None:
        self.clock.observe(t)
        self.scheduler.fire_until(self.clock.now())

    def send(self, t: int, *rows: tuple[Any, ...]) -> None:
        """One chunk of events stamped `t` (timers due by `t` fire first)."""
        self.advance(t)
        self.window.process(Chunk([t] * len(rows), list(rows)))

    def take(self) -> list[list[Out]]:
        """The chunks emitted since the last call."""
        out, self.chunks = self.chunks, []
        return out

    def contents(self) -> list[tuple[Any, ...]]:
        return [r for _, r in self.window.contents()]
