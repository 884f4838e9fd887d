"""Tumbling windows over event counts and the clock: `lengthBatch`, `timeBatch`, `batch`.

Each completed batch leaves as one chunk: the previous batch as expired events (stamped
now, only when something downstream reads expired events), a reset, then the new batch as
current events. With `stream.current.event` lengthBatch and timeBatch pass events through
as they arrive and emit only the expiry and reset at the batch boundary. As in Siddhi, the
expired queue that joins search is cleared only when expired events are emitted, so a
join with plain `insert into` searches every completed batch (spec [BUG-COMPAT]).
"""

from __future__ import annotations

from typing import Any

from engine.events import Chunk
from engine.runtime.windows.base import Param, Window, WindowContext, WindowSpec, check_args, register
from engine.runtime.windows.javacompat import java_rem
from engine.runtime.windows.shared import Ev, Out, load, load_ev, load_list, save, save_ev
from engine.types import AttrType

INT = (AttrType.INT,)
LONGS = (AttrType.INT, AttrType.LONG)
BOOL = (AttrType.BOOL,)


class _Batching(Window):
    """State shared by the batch windows: the expired queue (the last emitted batch, the one
    joins search) and the pending reset event."""

    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.expired: list[Ev] | None = [] if (ctx.expired_needed or ctx.for_join) else None
        self.reset: Ev | None = None

    def _expire(self, out: Out, now: int) -> None:
        """Emit the expired queue stamped `now` and clear it (only if expired events are read)."""
        if self.ctx.expired_needed and self.expired:
            out.expire_all(now, self.expired)
            self.expired.clear()

    def contents(self) -> list[Ev]:
        return list(self.expired or ())


class LengthBatchWindow(_Batching):
    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.length = int(args[0])
        self.stream = bool(args[1]) if len(args) > 1 else False
        self.count = 0
        self.cur_ts: list[int] = []  # the batch being filled, as parallel lists
        self.cur_rows: list[Any] = []

    def process(self, chunk: Chunk) -> None:
        if self.length > 0 and not self.stream:
            self._process_batches(chunk)
            return
        now = self.ctx.now()
        outs: list[Chunk] = []
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            out = Out()
            if self.length == 0:
                out.current(t, r)
                if self.ctx.expired_needed:
                    out.expired(now, r)
                out.reset(now, r)
            else:
                if self.reset is None:
                    self.reset = (t, r)
                self._stream_event(out, now, t, r)
            if out:
                outs.append(out.chunk())
        for c in outs:
            self.emit(c)

    def _process_batches(self, chunk: Chunk) -> None:
        """Batch mode by slices: the same events as `_batch_event` one by one, in bulk."""
        now = self.ctx.now()
        ts, rows = chunk.ts, chunk.rows
        n, i = len(rows), 0
        outs: list[Chunk] = []
        while i < n:
            take = min(self.length - self.count, n - i)
            if self.reset is None:
                self.reset = (ts[i], rows[i])
            self.cur_ts += ts[i : i + take]
            self.cur_rows += rows[i : i + take]
            self.count += take
            i += take
            if self.count == self.length:
                out = Out()
                self._boundary(out, now)
                if self.expired is not None:
                    self.expired.extend(zip(self.cur_ts, self.cur_rows, strict=True))
                out.current_columns(self.cur_ts, self.cur_rows)
                self.cur_ts, self.cur_rows = [], []
                self.count = 0
                outs.append(out.chunk())
        for c in outs:
            self.emit(c)

    def _boundary(self, out: Out, now: int) -> None:
        self._expire(out, now)
        if self.reset is not None:
            out.reset(now, self.reset[1])
            self.reset = None

    def _stream_event(self, out: Out, now: int, t: int, r: Any) -> None:
        self.count += 1
        if self.count == self.length + 1:
            self._boundary(out, now)
            self.count = 1
        out.current(t, r)
        if self.expired is not None:
            self.expired.append((t, r))

    def snapshot(self) -> Any:
        return {
            "count": self.count,
            "current": save(zip(self.cur_ts, self.cur_rows, strict=True)),
            "expired": save(self.expired),
            "reset": save_ev(self.reset),
        }

    def restore(self, state: Any) -> None:
        self.count = state["count"]
        current = load_list(state["current"])
        self.cur_ts = [t for t, _ in current]
        self.cur_rows = [r for _, r in current]
        self.expired = load(state["expired"])
        self.reset = load_ev(state["reset"])


def processor_field(ctx: WindowContext, args: list[Any], initial: int) -> list[int]:
    """A field Siddhi keeps in the window processor rather than in its per-partition state:
    every partition instance of the query shares it. The cell lives with the runtime (its
    scheduler), keyed by the query and the planned arguments all instances share."""
    fields: dict[tuple[str, int], list[int]] = ctx.scheduler.__dict__.setdefault(
        "_window_processor_fields", {}
    )
    return fields.setdefault((ctx.query, id(args)), [initial])


class TimeBatchWindow(_Batching):
    """Batches end every `span` ms from the first event (or aligned to `start.time`). As in
    Siddhi, the next boundary is shared by the query's partition instances: an instance whose
    first event comes after another's schedules no timer of its own and flushes only when an
    event or timer of its own finds the shared boundary passed. Siddhi keeps the boundary out
    of its snapshot; it is saved here so a restore is exact."""

    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.span = int(args[0])
        self.start_at: int | None = None
        self.stream = False
        for a in args[1:]:
            if isinstance(a, bool):
                self.stream = a
            else:
                self.start_at = int(a)
        self.shared = processor_field(ctx, args, -1)
        self.current: list[Ev] = []
        self.register_timer()

    @property
    def next_emit(self) -> int:
        return self.shared[0]

    @next_emit.setter
    def next_emit(self, value: int) -> None:
        self.shared[0] = value

    def process(self, chunk: Chunk) -> None:
        if self.next_emit == -1:
            now = self.ctx.now()
            if self.start_at is not None:
                self.next_emit = now + (self.span - java_rem(now - self.start_at, self.span))
            else:
                self.next_emit = now + self.span
            self.notify_at(self.next_emit)
        self._run(chunk.ts, chunk.rows, self.ctx.now())

    def on_timer(self, due: int, now: int) -> None:
        self._run([], [], now)

    def _run(self, ts: list[int], rows: list[Any], now: int) -> None:
        send = False
        if now >= self.next_emit:
            self.next_emit += self.span  # one period only, even after a long pause
            self.notify_at(self.next_emit)
            send = True
        out = Out()
        for t, r in zip(ts, rows, strict=True):
            if self.reset is None:
                self.reset = (t, r)
            if not self.stream:
                self.current.append((t, r))
            else:
                if self.expired is not None:
                    self.expired.append((t, r))
                out.current(t, r)
        if send:
            self._expire(out, now)
            if self.reset is not None:
                out.reset(*self.reset)
                self.reset = None
            if self.current:
                if self.expired is not None:
                    self.expired.extend(self.current)
                out.current_all(self.current)
                self.current = []
        if out:
            self.emit(out.chunk())

    def snapshot(self) -> Any:
        return {
            "next": self.next_emit,
            "current": save(self.current),
            "expired": save(self.expired),
            "reset": save_ev(self.reset),
        }

    def restore(self, state: Any) -> None:
        self.next_emit = state["next"]
        self.current = load_list(state["current"])
        self.expired = load(state["expired"])
        self.reset = load_ev(state["reset"])


class BatchWindow(_Batching):
    """Each incoming chunk is a batch (or is cut into batches of `window.length`). The
    expired queue fills only when expired events are read, so a join finds nothing in it
    otherwise (spec [BUG-COMPAT])."""

    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        check_args("batch", _check_batch, args, [])
        self.length = int(args[0]) if args else 0

    def process(self, chunk: Chunk) -> None:
        now = self.ctx.now()
        need = self.ctx.expired_needed
        outs: list[Chunk] = []
        out = Out()
        if need and self.expired is not None:
            if self.expired:
                out.expire_all(now, self.expired)
                if self.reset is not None:
                    out.reset(*self.reset)
                    self.reset = None
            self.expired.clear()
        pending: list[Ev] = []
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            if need and self.expired is not None:
                self.expired.append((t, r))
            pending.append((t, r))
            if len(pending) == self.length:
                self._release(out, pending)
                pending = []
                if out:
                    outs.append(out.chunk())
                    out = Out()
        if pending:
            self._release(out, pending)
        if out:
            outs.append(out.chunk())
        for c in outs:
            self.emit(c)

    def _release(self, out: Out, pending: list[Ev]) -> None:
        if self.reset is not None:
            out.reset(*self.reset)
        self.reset = pending[0]
        out.current_all(pending)

    def snapshot(self) -> Any:
        return {"expired": save(self.expired), "reset": save_ev(self.reset)}

    def restore(self, state: Any) -> None:
        self.expired = load(state["expired"])
        self.reset = load_ev(state["reset"])


def _check_batch(args: list[Any], types: list[AttrType]) -> str | None:
    if args and int(args[0]) < 0:
        return f"window.length must be zero (one batch per chunk) or more, found {args[0]}"
    return None


register(
    WindowSpec(
        "lengthBatch",
        LengthBatchWindow,
        ((Param("window.length", INT),), (Param("window.length", INT), Param("stream.current.event", BOOL))),
        batch=True,
    )
)
register(
    WindowSpec(
        "timeBatch",
        TimeBatchWindow,
        (
            (Param("window.time", LONGS),),
            (Param("window.time", LONGS), Param("start.time", LONGS)),
            (Param("window.time", LONGS), Param("stream.current.event", BOOL)),
            (Param("window.time", LONGS), Param("start.time", LONGS), Param("stream.current.event", BOOL)),
        ),
        batch=True,
    )
)
register(
    WindowSpec("batch", BatchWindow, ((), (Param("window.length", INT),)), batch=True, check=_check_batch)
)
