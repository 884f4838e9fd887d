"""Sliding windows: `length(n)` and `time(t)`.

Both emit, for each arriving event, the events it pushes out (as expired, stamped with
the current time) followed by the event itself (current).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from engine.events import CURRENT, EXPIRED, Chunk
from engine.runtime.windows.base import INT_TYPES, TIME, Param, Window, WindowSpec, register


class LengthWindow(Window):
    def __init__(self, ctx: Any, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.length = int(args[0])
        self.buf: deque[tuple[int, tuple[Any, ...]]] = deque()

    def process(self, chunk: Chunk) -> None:
        buf = self.buf
        length = self.length
        now = self.ctx.now()
        if not self.ctx.expired_needed and length > 0:
            # Nothing reads expired events: keep the window, emit the chunk as is.
            buf.extend(zip(chunk.ts, chunk.rows))
            while len(buf) > length:
                buf.popleft()
            self.emit(chunk)
            return
        out_ts: list[int] = []
        out_rows: list[tuple[Any, ...]] = []
        kinds: list[int] = []
        for t, r in zip(chunk.ts, chunk.rows):
            if len(buf) >= length:
                if buf:
                    _, old = buf.popleft()
                    out_ts.append(now)
                    out_rows.append(old)
                    kinds.append(EXPIRED)
                    buf.append((t, r))
                else:
                    out_ts.append(now)
                    out_rows.append(r)
                    kinds.append(EXPIRED)
            else:
                buf.append((t, r))
            out_ts.append(t)
            out_rows.append(r)
            kinds.append(CURRENT)
        self.emit(Chunk(out_ts, out_rows, kinds))

    def contents(self) -> list[tuple[int, tuple[Any, ...]]]:
        return list(self.buf)

    def snapshot(self) -> Any:
        return [list(e) for e in self.buf]

    def restore(self, state: Any) -> None:
        self.buf = deque((t, tuple(r)) for t, r in state)


class TimeWindow(Window):
    def __init__(self, ctx: Any, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.span = int(args[0])
        self.buf: deque[tuple[int, tuple[Any, ...]]] = deque()
        self.last_scheduled = -(2**63)

    def _expire(self, now: int, out_ts: list[int], out_rows: list[Any], kinds: list[int]) -> None:
        buf = self.buf
        span = self.span
        while buf and buf[0][0] - now + span <= 0:
            _, old = buf.popleft()
            out_ts.append(now)
            out_rows.append(old)
            kinds.append(EXPIRED)

    def process(self, chunk: Chunk) -> None:
        now = self.ctx.now()
        out_ts: list[int] = []
        out_rows: list[tuple[Any, ...]] = []
        kinds: list[int] = []
        buf = self.buf
        span = self.span
        for t, r in zip(chunk.ts, chunk.rows):
            self._expire(now, out_ts, out_rows, kinds)
            buf.append((t, r))
            if self.last_scheduled < t:
                self.notify_at(t + span)
                self.last_scheduled = t
            out_ts.append(t)
            out_rows.append(r)
            kinds.append(CURRENT)
        self.emit(Chunk(out_ts, out_rows, kinds))

    def on_timer(self, due: int, now: int) -> None:
        out_ts: list[int] = []
        out_rows: list[tuple[Any, ...]] = []
        kinds: list[int] = []
        self._expire(now, out_ts, out_rows, kinds)
        if out_rows:
            self.emit(Chunk(out_ts, out_rows, kinds))

    def contents(self) -> list[tuple[int, tuple[Any, ...]]]:
        return list(self.buf)

    def snapshot(self) -> Any:
        return {"buf": [list(e) for e in self.buf], "last": self.last_scheduled}

    def restore(self, state: Any) -> None:
        self.buf = deque((t, tuple(r)) for t, r in state["buf"])
        self.last_scheduled = state["last"]

    def restore_timers(self) -> None:
        if self.buf:
            self.notify_at(self.buf[0][0] + self.span)
            if self.buf[-1][0] != self.buf[0][0]:
                self.notify_at(self.buf[-1][0] + self.span)


register(WindowSpec("length", LengthWindow, ((Param("window.length", INT_TYPES),),)))
register(WindowSpec("time", TimeWindow, ((Param("window.time", TIME),),)))
