"""Sliding windows: `length(n)` and `time(t)`.

Both emit, for each arriving event, the events it pushes out (as expired, stamped with
the current time) followed by the event itself (current). The common cases are built
with list slicing rather than a Python step per event.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from engine.events import CURRENT, EXPIRED, RESET, Chunk
from engine.runtime.windows.base import INT_TYPES, TIME, Param, Window, WindowSpec, register

Row = tuple[Any, ...]


def _interleave(first: list[Any], second: list[Any]) -> list[Any]:
    out: list[Any] = [None] * (len(first) + len(second))
    out[0::2] = first
    out[1::2] = second
    return out


class LengthWindow(Window):
    def __init__(self, ctx: Any, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.length = int(args[0])
        self.buf_ts: deque[int] = deque()
        self.buf_rows: deque[Row] = deque()

    def process(self, chunk: Chunk) -> None:
        length = self.length
        ts, rows = chunk.ts, chunk.rows
        n = len(rows)
        if length <= 0:
            self._process_zero(chunk)
            return
        buf_ts, buf_rows = self.buf_ts, self.buf_rows
        start = max(0, length - len(buf_rows))  # events before this index push nothing out
        buf_ts.extend(ts)
        buf_rows.extend(rows)
        if start >= n:
            self.emit(chunk)
            return
        drop = n - start
        pop_ts, pop_rows = buf_ts.popleft, buf_rows.popleft
        expired = [pop_rows() for _ in range(drop)]
        for _ in range(drop):
            pop_ts()
        if not self.ctx.expired_used:
            self.emit(chunk)
            return
        now = self.ctx.now()
        out_rows = rows[:start] + _interleave(expired, rows[start:])
        out_ts = ts[:start] + _interleave([now] * drop, ts[start:])
        kinds = [CURRENT] * start + [EXPIRED, CURRENT] * drop
        self.emit(Chunk(out_ts, out_rows, kinds))

    def _process_zero(self, chunk: Chunk) -> None:
        """length(0): every event is current, then at once expired, then a reset."""
        now = self.ctx.now()
        out_ts: list[int] = []
        out_rows: list[Row] = []
        kinds: list[int] = []
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            out_ts += [t, t, now]
            out_rows += [r, r, r]
            kinds += [CURRENT, EXPIRED, RESET]
        self.emit(Chunk(out_ts, out_rows, kinds))

    def contents(self) -> list[tuple[int, Row]]:
        return list(zip(self.buf_ts, self.buf_rows, strict=True))

    def rows(self) -> deque[Row]:
        return self.buf_rows

    def snapshot(self) -> Any:
        return {"ts": list(self.buf_ts), "rows": list(self.buf_rows)}

    def restore(self, state: Any) -> None:
        self.buf_ts = deque(state["ts"])
        self.buf_rows = deque(tuple(r) for r in state["rows"])


class TimeWindow(Window):
    """Keeps events for `span` ms. One timer is pending at a time, at the oldest event's
    expiry: the same moments Siddhi's per-timestamp timers expire events at."""

    def __init__(self, ctx: Any, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.span = int(args[0])
        self.buf_ts: deque[int] = deque()
        self.buf_rows: deque[Row] = deque()
        self.pending: int | None = None
        self.register_timer()

    def _expire_into(self, now: int, out_ts: list[int], out_rows: list[Row], kinds: list[int]) -> None:
        buf_ts, buf_rows, span = self.buf_ts, self.buf_rows, self.span
        while buf_ts and buf_ts[0] + span <= now:
            buf_ts.popleft()
            out_rows.append(buf_rows.popleft())
            out_ts.append(now)
            kinds.append(EXPIRED)

    def process(self, chunk: Chunk) -> None:
        now = self.ctx.now()
        ts, rows = chunk.ts, chunk.rows
        out_ts: list[int] = []
        out_rows: list[Row] = []
        kinds: list[int] = []
        self._expire_into(now, out_ts, out_rows, kinds)
        if min(ts) + self.span > now:
            # no event of this chunk can expire while the chunk is processed
            self.buf_ts.extend(ts)
            self.buf_rows.extend(rows)
            if not out_rows:
                self.emit(Chunk(ts, rows, None, None, chunk.uniform, chunk.ascending))
            else:
                self.emit(Chunk(out_ts + ts, out_rows + rows, kinds + [CURRENT] * len(rows)))
        else:
            for t, r in zip(ts, rows, strict=True):
                self._expire_into(now, out_ts, out_rows, kinds)
                self.buf_ts.append(t)
                self.buf_rows.append(r)
                out_ts.append(t)
                out_rows.append(r)
                kinds.append(CURRENT)
            self.emit(Chunk(out_ts, out_rows, kinds))
        self._schedule()

    def _schedule(self) -> None:
        if self.pending is None and self.buf_ts:
            self.pending = self.buf_ts[0] + self.span
            self.notify_at(self.pending)

    def on_timer(self, due: int, now: int) -> None:
        if due != self.pending:
            return
        self.pending = None
        out_ts: list[int] = []
        out_rows: list[Row] = []
        kinds: list[int] = []
        self._expire_into(now, out_ts, out_rows, kinds)
        if out_rows:
            self.emit(Chunk(out_ts, out_rows, kinds))
        self._schedule()

    def contents(self) -> list[tuple[int, Row]]:
        return list(zip(self.buf_ts, self.buf_rows, strict=True))

    def rows(self) -> deque[Row]:
        return self.buf_rows

    def snapshot(self) -> Any:
        return {"ts": list(self.buf_ts), "rows": list(self.buf_rows), "pending": self.pending}

    def restore(self, state: Any) -> None:
        self.buf_ts = deque(state["ts"])
        self.buf_rows = deque(tuple(r) for r in state["rows"])
        self.pending = state["pending"]


register(WindowSpec("length", LengthWindow, ((Param("window.length", (INT_TYPES[0],)),),)))
register(WindowSpec("time", TimeWindow, ((Param("window.time", TIME),),)))
