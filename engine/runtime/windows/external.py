"""Windows on a timestamp carried in the events: `externalTime` (sliding) and
`externalTimeBatch` (tumbling, with an optional start time, flush timeout and
batch-end-time replacement).

Time here is the attribute's value, not the engine clock: externalTime expires events only
when a later event arrives. externalTimeBatch closes a batch when an event at or past the
batch end arrives; with a timeout, an engine-clock timer also flushes the open batch when
no such event comes, and events that arrive for a batch already flushed that way are sent
again together with it (spec §1.6).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from engine.errors import ProcessingError
from engine.events import Chunk
from engine.runtime.windows.base import Param, Window, WindowContext, WindowSpec, check_args, register
from engine.runtime.windows.javacompat import java_rem
from engine.runtime.windows.shared import (
    Ev,
    Out,
    arg_types,
    attribute_index,
    load,
    load_ev,
    load_list,
    save,
    save_ev,
)
from engine.types import AttrType

LONG = (AttrType.LONG,)
LONGS = (AttrType.INT, AttrType.LONG)
Row = tuple[Any, ...]


def timestamp_reader(window: Window, fn: Callable[[Row], Any], what: str) -> Callable[[Row], int]:
    """The timestamp attribute of a row as an int; a null stops the query with `what`."""

    def read(row: Row) -> int:
        value = fn(row)
        if value is None:
            msg = f"{what} is null"
            raise ProcessingError(msg, window.ctx.query)
        return int(value)

    return read


def _check_timestamp(args: list[Any], types: list[AttrType]) -> str | None:
    if attribute_index(args[0]) is None:
        return "the timestamp must be an attribute of the input stream"
    return None


class ExternalTimeWindow(Window):
    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        check_args("externalTime", _check_timestamp, args, arg_types(args, ctx.attribute_types))
        self.ext = timestamp_reader(self, args[0], "externalTime timestamp")
        self.span = int(args[1])
        self.buf: deque[tuple[int, Row, int]] = deque()  # (ts, row, external time)

    def process(self, chunk: Chunk) -> None:
        buf, span, out = self.buf, self.span, Out()
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            cur = self.ext(r)
            while buf and buf[0][2] + span <= cur:
                out.expired(cur, buf.popleft()[1])
            buf.append((t, r, cur))
            out.current(t, r)
        self.emit(out.chunk())

    def contents(self) -> list[Ev]:
        return [(t, r) for t, r, _ in self.buf]

    def snapshot(self) -> Any:
        return [[t, list(r), x] for t, r, x in self.buf]

    def restore(self, state: Any) -> None:
        self.buf = deque((t, tuple(r), x) for t, r, x in state)


class ExternalBatching(Window):
    """What externalTimeBatch and unique:externalTimeBatch share: batches that end on the
    events' own timestamps, the timeout that flushes a batch early, and the resend of a
    flushed batch with its late events. Subclasses hold the batch (`current`, `expired`),
    set the parameters below, then call `start_batching`."""

    ext: Callable[[Row], int]
    ts_index: int | None
    span: int
    has_start: bool
    start_of: Callable[[Row], int] | None
    start_time: int
    timeout: int
    replace: bool
    current: Any
    reset: Ev | None

    def start_batching(self) -> None:
        self.reset = None
        self.end_time = -1
        self.last_scheduled = 0
        self.last_current = 0
        self.flushed = False
        self.register_timer()

    def _end_after(self, cur: int) -> int:
        return cur + (self.span - java_rem(cur - self.start_time, self.span))

    def _schedule(self) -> None:
        self.last_scheduled = self.ctx.now() + self.timeout
        self.notify_at(self.last_scheduled)

    def process(self, chunk: Chunk) -> None:
        if not chunk.rows:
            return
        outs: list[Chunk] = []
        if self.end_time < 0:
            first = chunk.rows[0]
            if self.has_start and self.start_of is None:
                self.end_time = self._end_after(self.ext(first))
            else:
                self.start_time = self.start_of(first) if self.start_of is not None else self.ext(first)
                self.end_time = self.start_time + self.span
            if self.timeout > 0:
                self._schedule()
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            cur = self.ext(r)
            self.last_current = max(self.last_current, cur)
            if cur >= self.end_time:
                if self.flushed:
                    self._append_out(outs, False)
                    self.flushed = False
                else:
                    self._flush_out(outs, False)
                self.end_time = self._end_after(self.last_current)
                self._clone_append(t, r)
                if self.timeout > 0:
                    self._schedule()
            else:
                self._clone_append(t, r)  # late events of older batches join the open one
        for c in outs:
            self.emit(c)

    def on_timer(self, due: int, now: int) -> None:
        if self.last_scheduled > due:
            return
        outs: list[Chunk] = []
        if not self.flushed:
            self._flush_out(outs, True)
            self.flushed = True
        elif self.current:
            self._append_out(outs, True)
        self._schedule()  # keeps firing every timeout while the app runs, as in Siddhi
        for c in outs:
            self.emit(c)

    def _clone_append(self, t: int, r: Row) -> None:
        row = r
        if self.replace and self.ts_index is not None:
            row = r[: self.ts_index] + (self.end_time,) + r[self.ts_index + 1 :]
        self._add(t, row)
        if self.reset is None:
            self.reset = (t, r)

    def _add(self, t: int, row: Row) -> None:
        raise NotImplementedError

    def _flush_out(self, outs: list[Chunk], preserve: bool) -> None:
        """Close the batch: expire the last one, send this one (`preserve`: by the timeout)."""
        raise NotImplementedError

    def _append_out(self, outs: list[Chunk], preserve: bool) -> None:
        """Events for a batch a timeout already flushed: the batch goes out again with them."""
        raise NotImplementedError


class ExternalTimeBatchWindow(ExternalBatching):
    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        check_args("externalTimeBatch", _check_timestamp, args, arg_types(args, ctx.attribute_types))
        self.ext = timestamp_reader(self, args[0], "externalTimeBatch timestamp")
        self.ts_index = attribute_index(args[0])
        self.span = int(args[1])
        self.has_start = len(args) > 2
        start = args[2] if self.has_start else 0
        self.start_of = (
            timestamp_reader(self, start, "externalTimeBatch start.time") if callable(start) else None
        )
        self.start_time = 0 if callable(start) else int(start)
        self.timeout = int(args[3]) if len(args) > 3 else 0
        self.replace = bool(args[4]) if len(args) > 4 else False
        keep = ctx.expired_needed or ctx.for_join or self.timeout > 0
        self.current: list[Ev] = []
        self.expired: list[Ev] | None = [] if keep else None
        self.start_batching()

    def _add(self, t: int, row: Row) -> None:
        self.current.append((t, row))

    def _flush_out(self, outs: list[Chunk], preserve: bool) -> None:
        at, out = self.last_current, Out()
        if self.ctx.expired_needed and self.expired:
            out.expire_all(at, self.expired)
        if self.expired is not None:
            self.expired.clear()
        if self.current:
            assert self.reset is not None
            out.reset(at, self.reset[1])
            self.reset = None
            if self.expired is not None:
                self.expired.extend(self.current)
            out.current_all(self.current)
        self.current = []
        if out:
            outs.append(out.chunk())

    def _append_out(self, outs: list[Chunk], preserve: bool) -> None:
        if not self.current:
            return
        at, out = self.last_current, Out()
        sent = list(self.expired or ())
        if self.ctx.expired_needed:
            out.expire_all(at, sent)
        assert self.reset is not None
        out.reset(at, self.reset[1])
        if self.expired is not None:
            self.expired.extend(self.current)
        out.current_all(sent)
        out.current_all(self.current)
        self.current = []
        outs.append(out.chunk())

    def contents(self) -> list[Ev]:
        return list(self.expired or ())

    def snapshot(self) -> Any:
        return {
            "start": self.start_time,
            "end": self.end_time,
            "scheduled": self.last_scheduled,
            "last": self.last_current,
            "current": save(self.current),
            "expired": save(self.expired),
            "reset": save_ev(self.reset),
            "flushed": self.flushed,
        }

    def restore(self, state: Any) -> None:
        self.start_time = state["start"]
        self.end_time = state["end"]
        self.last_scheduled = state["scheduled"]
        self.last_current = state["last"]
        self.current = load_list(state["current"])
        self.expired = load(state["expired"])
        self.reset = load_ev(state["reset"])
        self.flushed = state["flushed"]


TS = Param("timestamp", LONG, attribute=True)
TIME = Param("window.time", LONGS)
TAIL = (
    Param("timeout", LONGS, optional=True),
    Param("replace.with.batchtime", (AttrType.BOOL,), optional=True),
)
register(WindowSpec("externalTime", ExternalTimeWindow, ((TS, TIME),), check=_check_timestamp))
register(
    WindowSpec(
        "externalTimeBatch",
        ExternalTimeBatchWindow,
        (
            (TS, TIME, Param("start.time", LONGS, optional=True), *TAIL),
            (TS, TIME, Param("start.time", LONG, attribute=True), *TAIL),
        ),
        batch=True,
        check=_check_timestamp,
    )
)
