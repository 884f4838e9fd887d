"""The (deprecated) frequency windows: `frequent(event.count [, attribute])` (Misra-Gries
most-frequent counting) and `lossyFrequent(support [, error [, attribute]])` (lossy
counting).

Events are keyed by the Java string of an attribute, or of all attributes concatenated.
Which keys are decremented or pruned, and in which order they expire, follows Siddhi's
ConcurrentHashMap iteration order (`JavaMap`). Siddhi snapshots only part of these windows'
state ([BUG-COMPAT] in the spec); here the whole state is saved so a restore is exact.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from engine.events import Chunk
from engine.runtime.windows.base import Param, Window, WindowContext, WindowSpec, register
from engine.runtime.windows.javacompat import JavaMap, java_str, string_hash
from engine.runtime.windows.shared import Ev, Out, attribute_type
from engine.types import AttrType

Row = tuple[Any, ...]


def _key_function(ctx: WindowContext, attrs: list[Any]) -> Callable[[Row], str]:
    """The key Siddhi builds: `String.valueOf` of the attribute(s), concatenated."""
    types = ctx.attribute_types
    if not attrs:
        return lambda row: "".join(
            java_str(v, types[i] if i < len(types) else None) for i, v in enumerate(row)
        )
    readers = [(fn, attribute_type(fn, types)) for fn in attrs]
    return lambda row: "".join(java_str(fn(row), kind) for fn, kind in readers)


def _save_events(m: JavaMap[str, Ev]) -> Any:
    return m.snapshot(lambda e: [e[0], list(e[1])])


def _load_events(m: JavaMap[str, Ev], state: Any) -> None:
    m.restore(state, lambda e: (e[0], tuple(e[1])))


class FrequentWindow(Window):
    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.n = int(args[0])
        self.key = _key_function(ctx, args[1:])
        self.counts: JavaMap[str, int] = JavaMap(string_hash, concurrent=True)
        self.events: JavaMap[str, Ev] = JavaMap(string_hash, concurrent=True)

    def process(self, chunk: Chunk) -> None:
        now = self.ctx.now()
        out = Out()
        counts, events, n = self.counts, self.events, self.n
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            key = self.key(r)
            if events.put(key, (t, r)) is not None:
                counts.put(key, (counts.get(key) or 0) + 1)
                out.current(t, r)
            elif len(events) > n:
                for k in counts.keys()[:n]:  # every counted key loses one
                    c = (counts.get(k) or 0) - 1
                    if c == 0:
                        counts.remove(k)
                        gone = events.remove(k)
                        assert gone is not None
                        out.expired(now, gone[1])
                    else:
                        counts.put(k, c)
                if len(events) > n:
                    events.remove(key)  # no room was made: the new event is dropped
                else:
                    counts.put(key, 1)
                    out.current(t, r)
            else:
                counts.put(key, 1)
                out.current(t, r)
        if out:
            self.emit(out.chunk())

    def contents(self) -> list[Ev]:
        return self.events.values()

    def snapshot(self) -> Any:
        return {"counts": self.counts.snapshot(), "events": _save_events(self.events)}

    def restore(self, state: Any) -> None:
        self.counts.restore(state["counts"])
        _load_events(self.events, state["events"])


class LossyFrequentWindow(Window):
    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.support = float(args[0])
        self.error = float(args[1])
        self.width = math.ceil(1 / self.error) if self.error != 0 else math.inf
        self.key = _key_function(ctx, args[2:])
        self.total = 0
        self.bucket = 1.0
        self.counts: JavaMap[str, tuple[int, int]] = JavaMap(
            string_hash, concurrent=True
        )  # (count, bucket id)
        self.events: JavaMap[str, Ev] = JavaMap(string_hash, concurrent=True)

    def process(self, chunk: Chunk) -> None:
        now = self.ctx.now()
        out = Out()
        counts, events = self.counts, self.events
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            self.total += 1
            if self.total != 1:
                self.bucket = float(math.ceil(self.total / self.width))
            key = self.key(r)
            entry = counts.get(key)
            if events.put(key, (t, r)) is not None and entry is not None:
                counts.put(key, (entry[0] + 1, entry[1]))
            else:
                counts.put(key, (1, int(self.bucket) - 1))
            entry = counts.get(key)
            if entry is not None and entry[0] >= (self.support - self.error) * self.total:
                out.current(t, r)
            if math.fmod(self.total, self.width) == 0:  # prune
                for k, (count, bucket_id) in counts.items():
                    if count + bucket_id <= self.bucket:
                        counts.remove(k)
                        gone = events.remove(k)
                        if gone is not None:
                            out.expired(now, gone[1])
        if out:
            self.emit(out.chunk())

    def contents(self) -> list[Ev]:
        return self.events.values()

    def snapshot(self) -> Any:
        return {
            "total": self.total,
            "bucket": self.bucket,
            "counts": self.counts.snapshot(list),
            "events": _save_events(self.events),
        }

    def restore(self, state: Any) -> None:
        self.total = state["total"]
        self.bucket = state["bucket"]
        self.counts.restore(state["counts"], lambda v: (v[0], v[1]))
        _load_events(self.events, state["events"])


COUNT = Param("event.count", (AttrType.INT,))
ATTR = Param("attribute", (AttrType.STRING,), attribute=True)
DOUBLE = (AttrType.DOUBLE,)
register(WindowSpec("frequent", FrequentWindow, ((COUNT,), (COUNT, ATTR))))
register(
    WindowSpec(
        "lossyFrequent",
        LossyFrequentWindow,
        (
            (Param("support.threshold", DOUBLE), Param("error.bound", DOUBLE)),
            (Param("support.threshold", DOUBLE), Param("error.bound", DOUBLE), ATTR),
        ),
    )
)
