"""Clock-driven sliding windows besides `time`: `timeLength` (time and count bounded) and
`delay` (holds events back, then releases them as current events).

Both expire or release an event once the engine clock reaches its timestamp plus the
window time, on arrival of a later event or on a timer; released and expired events are
stamped with the clock's time at that moment.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from engine.events import Chunk
from engine.runtime.windows.base import Param, Window, WindowContext, WindowSpec, register
from engine.runtime.windows.shared import Ev, Out
from engine.types import AttrType

LONGS = (AttrType.INT, AttrType.LONG)
NEVER = -(2**63)


class TimeLengthWindow(Window):
    """At most `length` events, none older than `span` ms. Siddhi asks for a timer per
    event; timers for the same moment are asked for once here, which fires identically."""

    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.span = int(args[0])
        self.length = int(args[1])
        self.buf: deque[Ev] = deque()
        self.last_notified = NEVER
        self.register_timer()

    def _expire(self, out: Out, now: int) -> None:
        buf, span = self.buf, self.span
        while buf and buf[0][0] + span <= now:
            out.expired(now, buf.popleft()[1])

    def process(self, chunk: Chunk) -> None:
        now = self.ctx.now()
        out = Out()
        buf = self.buf
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            self._expire(out, now)
            if len(buf) < self.length:
                buf.append((t, r))
            elif buf:
                out.expired(now, buf.popleft()[1])
                buf.append((t, r))
            if t + self.span != self.last_notified:
                self.last_notified = t + self.span
                self.notify_at(self.last_notified)
            out.current(t, r)
        if out:
            self.emit(out.chunk())

    def on_timer(self, due: int, now: int) -> None:
        out = Out()
        self._expire(out, now)
        if out:
            self.emit(out.chunk())

    def contents(self) -> list[Ev]:
        return list(self.buf)

    def snapshot(self) -> Any:
        return {"buf": [[t, list(r)] for t, r in self.buf], "notified": self.last_notified}

    def restore(self, state: Any) -> None:
        self.buf = deque((t, tuple(r)) for t, r in state["buf"])
        self.last_notified = state["notified"]


class DelayWindow(Window):
    """Events wait `delay` ms and then leave as current events stamped with the release
    time; nothing is ever expired. A join finds the events still waiting."""

    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.delay = int(args[0])
        self.buf: deque[Ev] = deque()
        self.last_ts = NEVER
        self.register_timer()

    def _release(self, out: Out, now: int) -> None:
        buf, delay = self.buf, self.delay
        while buf and buf[0][0] + delay <= now:
            out.current(now, buf.popleft()[1])

    def process(self, chunk: Chunk) -> None:
        out = Out()
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            self._release(out, self.ctx.now())
            self.buf.append((t, r))
            if self.last_ts < t:
                self.notify_at(t + self.delay)
                self.last_ts = t
        if out:
            self.emit(out.chunk())

    def on_timer(self, due: int, now: int) -> None:
        out = Out()
        self._release(out, now)
        if out:
            self.emit(out.chunk())

    def contents(self) -> list[Ev]:
        return list(self.buf)

    def snapshot(self) -> Any:
        return {"buf": [[t, list(r)] for t, r in self.buf], "last": self.last_ts}

    def restore(self, state: Any) -> None:
        self.buf = deque((t, tuple(r)) for t, r in state["buf"])
        self.last_ts = state["last"]


register(
    WindowSpec(
        "timeLength",
        TimeLengthWindow,
        ((Param("window.time", LONGS), Param("window.length", (AttrType.INT,))),),
    )
)
register(WindowSpec("delay", DelayWindow, ((Param("window.delay", LONGS),),)))
