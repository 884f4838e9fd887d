"""Tumbling unique windows of the siddhi-execution-unique extension (io.siddhi sources):
`unique:lengthBatch`, `unique:firstLengthBatch`, `unique:timeBatch` and
`unique:firstTimeBatch` (unique:externalTimeBatch is in `unique_external`).

A batch holds one event per key: the latest (or, for the `first` forms, the first). The
count/time batches keep it in a Java HashMap, so a batch leaves in HashMap order, stamped
with the flush time: `[expired previous batch], reset, current batch`, whether or not
expired events are read downstream. The key map is keyed by the key's value (by its string
for the `first` forms), hashed as Java does.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from engine.events import Chunk
from engine.runtime.windows.base import Param, Window, WindowContext, WindowSpec, register
from engine.runtime.windows.javacompat import JavaMap, java_hash, java_rem
from engine.runtime.windows.shared import (
    Ev,
    Out,
    attribute_type,
    constant_reader,
    load_ev,
    load_list,
    save,
    save_ev,
    string_reader,
)
from engine.types import AttrType

Row = tuple[Any, ...]
KEY_TYPES = (AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.BOOL, AttrType.DOUBLE, AttrType.STRING)
LONGS = (AttrType.INT, AttrType.LONG)


class _UniqueBatch(Window):
    """The key map, the previous batch (to expire) and the reset event."""

    first = False  # keep the first event of a key instead of the latest

    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        fn = args[0]
        kind = attribute_type(fn, ctx.attribute_types) if callable(fn) else None
        key_of: Callable[[Row], Any] = fn if callable(fn) else constant_reader(fn)
        if self.first:
            self.key: Callable[[Row], Any] = string_reader(key_of, kind)
            self.map: JavaMap[Any, Ev] = JavaMap(java_hash, concurrent=False)
        else:
            self.key = key_of
            self.map = JavaMap(partial(java_hash, kind=kind), concurrent=False)
        self.to_expire: list[Ev] = []
        self.reset: Ev | None = None

    def _add(self, t: int, r: Row) -> None:
        key = self.key(r)
        if not (self.first and key in self.map):
            self.map.put(key, (t, r))

    def _flush(self, now: int) -> Out:
        current = [(now, row) for _, row in self.map.values()]
        self.map.clear()
        out = Out()
        out.expire_all(now, self.to_expire)
        self.to_expire = []
        if current:
            if self.reset is not None:
                out.reset(*self.reset)
            self.to_expire = list(current)
            self.reset = current[0]
            out.current_all(current)
        return out

    def contents(self) -> list[Ev]:
        return list(self.to_expire)

    def _save(self) -> dict[str, Any]:
        return {
            "map": self.map.snapshot(lambda e: [e[0], list(e[1])]),
            "expire": save(self.to_expire),
            "reset": save_ev(self.reset),
        }

    def _load(self, state: Any) -> None:
        self.map.restore(state["map"], lambda e: (e[0], tuple(e[1])))
        self.to_expire = load_list(state["expire"])
        self.reset = load_ev(state["reset"])


class UniqueLengthBatchWindow(_UniqueBatch):
    """A batch closes when it holds `window.length` distinct keys. (Siddhi keeps the open
    batch outside its snapshot; it is saved here so a restore is exact.)"""

    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.length = int(args[1])

    def process(self, chunk: Chunk) -> None:
        now = self.ctx.now()
        outs: list[Chunk] = []
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            self._add(t, r)
            if len(self.map) == self.length:
                out = self._flush(now)
                if out:
                    outs.append(out.chunk())
        for c in outs:
            self.emit(c)

    def snapshot(self) -> Any:
        return self._save()

    def restore(self, state: Any) -> None:
        self._load(state)


class UniqueFirstLengthBatchWindow(UniqueLengthBatchWindow):
    first = True


class UniqueTimeBatchWindow(_UniqueBatch):
    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.span = int(args[1])
        self.start_at = int(args[2]) if len(args) > 2 else None
        self.next_emit = -1
        self.register_timer()

    def process(self, chunk: Chunk) -> None:
        self._run(chunk, self.ctx.now())

    def on_timer(self, due: int, now: int) -> None:
        self._run(None, now)

    def _run(self, chunk: Chunk | None, now: int) -> None:
        if self.next_emit == -1:
            if self.start_at is not None:
                self.next_emit = now + (self.span - java_rem(now - self.start_at, self.span))
            else:
                self.next_emit = now + self.span
            self.notify_at(self.next_emit)
        send = now >= self.next_emit
        if send:
            self.next_emit += self.span
            self.notify_at(self.next_emit)
        if chunk is not None:
            for t, r in zip(chunk.ts, chunk.rows, strict=True):
                self._add(t, r)
        if send:
            out = self._flush(now)
            if out:
                self.emit(out.chunk())

    def snapshot(self) -> Any:
        return {**self._save(), "next": self.next_emit}

    def restore(self, state: Any) -> None:
        self._load(state)
        self.next_emit = state["next"]


class UniqueFirstTimeBatchWindow(UniqueTimeBatchWindow):
    first = True


KEY = Param("unique.key", KEY_TYPES, dynamic=True)
ANY_KEY = Param("unique.key", tuple(AttrType), dynamic=True)
LENGTH = Param("window.length", (AttrType.INT,))
TIME = Param("window.time", LONGS)
START = Param("start.time", LONGS, optional=True)
register(WindowSpec("unique:lengthBatch", UniqueLengthBatchWindow, ((KEY, LENGTH),), batch=True))
register(WindowSpec("unique:firstLengthBatch", UniqueFirstLengthBatchWindow, ((KEY, LENGTH),), batch=True))
register(WindowSpec("unique:timeBatch", UniqueTimeBatchWindow, ((ANY_KEY, TIME, START),), batch=True))
register(WindowSpec("unique:firstTimeBatch", UniqueFirstTimeBatchWindow, ((KEY, TIME, START),), batch=True))
