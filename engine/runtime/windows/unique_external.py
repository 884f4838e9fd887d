"""`unique:externalTimeBatch(key, timestamp, window.time [, start.time [, timeout
[, replace.timestamp.with.batch.end.time]]])` of the siddhi-execution-unique extension.

It follows the core externalTimeBatch (spec §1.6), but a batch holds one event per unique
key, the latest, kept in insertion-ordered maps: a newer event of a key takes the old
one's place. Batches that a timeout already flushed are sent again with late events, the
new event of a key replacing the old one in that resend. The start time must be a
constant here. (The extension declares the last parameter int|long yet requires a bool,
so Siddhi accepts no six-parameter form; it is taken as the bool it was meant to be.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.events import Chunk
from engine.runtime.windows.base import Param, WindowContext, WindowSpec, register
from engine.runtime.windows.external import ExternalBatching, timestamp_reader
from engine.runtime.windows.shared import Ev, Out, attribute_index, constant_reader, load_ev, save_ev
from engine.types import AttrType

Row = tuple[Any, ...]
KEY_TYPES = (AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.BOOL, AttrType.DOUBLE, AttrType.STRING)
LONGS = (AttrType.INT, AttrType.LONG)


class UniqueExternalTimeBatchWindow(ExternalBatching):
    """unique:externalTimeBatch(key, timestamp, window.time [, start.time [, timeout
    [, replace.timestamp.with.batch.end.time]]])."""

    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.key_of: Callable[[Row], Any] = args[0] if callable(args[0]) else constant_reader(args[0])
        self.ext = timestamp_reader(self, args[1], "unique:externalTimeBatch timestamp")
        self.ts_index = attribute_index(args[1])
        self.span = int(args[2])
        self.has_start = len(args) > 3
        self.start_of = None
        self.start_time = int(args[3]) if self.has_start else 0
        self.timeout = int(args[4]) if len(args) > 4 else 0
        self.replace = bool(args[5]) if len(args) > 5 else False
        self.store = ctx.expired_needed or ctx.for_join
        keep = self.store or self.timeout > 0
        self.current: dict[Any, Ev] = {}
        self.expired: dict[Any, Ev] | None = {} if keep else None
        self.start_batching()

    def _add(self, t: int, row: Row) -> None:
        self.current[self.key_of(row)] = (t, row)

    def _flush_out(self, outs: list[Chunk], preserve: bool) -> None:
        at, out = self.last_current, Out()
        if self.ctx.expired_needed and self.expired:
            out.expire_all(at, self.expired.values())
        if self.expired is not None:
            self.expired.clear()
        if self.current:
            assert self.reset is not None
            out.reset(at, self.reset[1])
            self.reset = None
            if (preserve or self.store) and self.expired is not None:
                self.expired.update(self.current)
            out.current_all(self.current.values())
        self.current = {}
        if out:
            outs.append(out.chunk())

    def _append_out(self, outs: list[Chunk], preserve: bool) -> None:
        if not self.current:
            return
        at, out = self.last_current, Out()
        expired = self.expired if self.expired is not None else {}
        if self.ctx.expired_needed:
            out.expire_all(at, expired.values())
        sent = dict(expired)  # the flushed batch again, then the new events (a key keeps its place)
        assert self.reset is not None
        out.reset(at, self.reset[1])
        for key, ev in self.current.items():
            if preserve or self.store:
                expired[key] = ev
            sent[key] = ev
        out.current_all(sent.values())
        self.current = {}
        outs.append(out.chunk())

    def contents(self) -> list[Ev]:
        return list((self.expired or {}).values())

    def snapshot(self) -> Any:
        def pairs(d: dict[Any, Ev] | None) -> Any:
            return None if d is None else [[k, t, list(r)] for k, (t, r) in d.items()]

        return {
            "current": pairs(self.current),
            "expired": pairs(self.expired),
            "reset": save_ev(self.reset),
            "times": [self.start_time, self.end_time, self.last_scheduled, self.last_current],
            "flushed": self.flushed,
        }

    def restore(self, state: Any) -> None:
        def unpairs(p: Any) -> dict[Any, Ev] | None:
            return None if p is None else {k: (t, tuple(r)) for k, t, r in p}

        self.current = unpairs(state["current"]) or {}
        self.expired = unpairs(state["expired"])
        self.reset = load_ev(state["reset"])
        self.start_time, self.end_time, self.last_scheduled, self.last_current = state["times"]
        self.flushed = state["flushed"]


KEY = Param("unique.key", KEY_TYPES, dynamic=True)
TIME = Param("window.time", LONGS)
START = Param("start.time", LONGS, optional=True)
register(
    WindowSpec(
        "unique:externalTimeBatch",
        UniqueExternalTimeBatchWindow,
        (
            (
                KEY,
                Param("timestamp", (AttrType.LONG,), attribute=True),
                TIME,
                START,
                Param("timeout", LONGS, optional=True),
                Param("replace.timestamp.with.batch.end.time", (AttrType.BOOL,), optional=True),
            ),
        ),
        batch=True,
    ),
    # Siddhi 3.x (CEP 4) had this window in core under this name; the unique extension is
    # its port (the same algorithm), as WSO2's API Manager 2.x analytics use it
    "uniqueExternalTimeBatch",
)
