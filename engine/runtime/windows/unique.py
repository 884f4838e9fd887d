"""Sliding unique windows: Siddhi 3.x core `unique(attr...)` / `firstUnique(attr...)` (spec
§1.16) and the siddhi-execution-unique extension's `unique:ever`, `unique:first`,
`unique:length` and `unique:time` (read from its io.siddhi sources).

- unique / unique:ever keep the latest event per key; a newer one expires it (stamped now).
- firstUnique / unique:first keep the first event per key and drop later ones.
- unique:length and unique:time keep the window in a `ComplexEventChunk` whose iterator
  state persists between events, and a key map that is never cleaned when an event leaves
  by count or time. Both are reproduced (`JChunk`), with what follows from them: an event
  can be expired twice, or the chunk can lose events when the replaced event was its last.
Keys are Java strings of the key values (concatenated for several keys); find (joins)
iterates the key map in ConcurrentHashMap order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.events import Chunk
from engine.runtime.windows.base import Param, Window, WindowContext, WindowSpec, register
from engine.runtime.windows.eventchunk import JChunk, Node, restore_chunks, snapshot_chunks
from engine.runtime.windows.javacompat import JavaMap, java_str, string_hash
from engine.runtime.windows.shared import Ev, Out, attribute_type, constant_reader, string_reader, value_type
from engine.types import AttrType

Row = tuple[Any, ...]
KEY_TYPES = (AttrType.INT, AttrType.LONG, AttrType.FLOAT, AttrType.BOOL, AttrType.DOUBLE, AttrType.STRING)
MAX_KEYS = 16
NEVER = -(2**63)


def key_function(ctx: WindowContext, keys: list[Any]) -> Callable[[Row], str]:
    """`String.valueOf` of each key parameter (attribute or constant), concatenated."""
    parts: list[Callable[[Row], str]] = []
    for k in keys:
        if callable(k):
            parts.append(string_reader(k, attribute_type(k, ctx.attribute_types)))
        else:
            parts.append(constant_reader(java_str(k, value_type(k))))
    if len(parts) == 1:
        return parts[0]
    return lambda row: "".join(p(row) for p in parts)


def _new_map() -> JavaMap[str, Ev]:
    return JavaMap(string_hash, concurrent=True)


def _save_map(m: JavaMap[str, Ev]) -> Any:
    return m.snapshot(lambda e: [e[0], list(e[1])])


def _load_map(m: JavaMap[str, Ev], state: Any) -> None:
    m.restore(state, lambda e: (e[0], tuple(e[1])))


class UniqueWindow(Window):
    """unique(attr...) and unique:ever(key...): the latest event per key."""

    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.key = key_function(ctx, args)
        self.map = _new_map()

    def process(self, chunk: Chunk) -> None:
        now = self.ctx.now()
        out = Out()
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            old = self.map.put(self.key(r), (t, r))
            if old is not None:
                out.expired(now, old[1])
            out.current(t, r)
        self.emit(out.chunk())

    def contents(self) -> list[Ev]:
        return self.map.values()

    def snapshot(self) -> Any:
        return _save_map(self.map)

    def restore(self, state: Any) -> None:
        _load_map(self.map, state)


class FirstUniqueWindow(UniqueWindow):
    """firstUnique(attr...) and unique:first(key...): the first event per key; later events
    with a key already seen are dropped. Nothing ever expires."""

    def process(self, chunk: Chunk) -> None:
        out = Out()
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            key = self.key(r)
            if key not in self.map:
                self.map.put(key, (t, r))
                out.current(t, r)
        if out:
            self.emit(out.chunk())


class UniqueLengthWindow(Window):
    """unique:length(key, window.length)."""

    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.key = key_function(ctx, args[:1])
        self.length = int(args[1])
        self.map = _new_map()
        self.chunk = JChunk()  # the window; its iterator is never reset
        self.count = 0  # keys ever seen: the map is not cleaned when an event leaves

    def process(self, chunk: Chunk) -> None:
        now = self.ctx.now()
        out = Out()
        win = self.chunk
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            old = self.map.put(self.key(r), (t, r))
            if old is None:
                self.count += 1
            if old is None and self.count <= self.length:
                win.add(Node(t, r))
            elif old is not None:
                while win.has_next():
                    x = win.next()
                    if (x.ts, x.row) == old:
                        win.remove()
                win.add(Node(t, r))
                out.expired(now, old[1])
            else:
                first = win.poll()
                if first is not None:
                    out.expired(now, first.row)
                    win.add(Node(t, r))
                else:
                    out.expired(t, r)
            out.current(t, r)
        self.emit(out.chunk())

    def contents(self) -> list[Ev]:
        return self.chunk.events()

    def snapshot(self) -> Any:
        return {"map": _save_map(self.map), "chunk": snapshot_chunks([self.chunk]), "count": self.count}

    def restore(self, state: Any) -> None:
        _load_map(self.map, state["map"])
        self.chunk = restore_chunks(state["chunk"])[0]
        self.count = state["count"]


class UniqueTimeWindow(Window):
    """unique:time(key, window.time). A replaced event is looked up from the oldest; until
    it is found, events due to expire are passed over (they go on a later arrival or timer)."""

    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        self.key = key_function(ctx, args[:1])
        self.span = int(args[1])
        self.map = _new_map()
        self.chunk = JChunk()
        self.last_ts = NEVER
        self.register_timer()

    def _walk(self, out: Out, now: int, old: Ev | None) -> None:
        win, span = self.chunk, self.span
        win.reset()
        while win.has_next():
            x = win.next()
            if not (x.ts - now + span <= 0 or old is not None):
                break
            if old is not None:
                if (x.ts, x.row) == old:
                    win.remove()
                    out.expired(now, old[1])
                    old = None
            else:
                win.remove()
                out.expired(now, x.row)
                win.reset()
        win.reset()

    def process(self, chunk: Chunk) -> None:
        out = Out()
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            now = self.ctx.now()
            old = self.map.put(self.key(r), (t, r))
            self.chunk.add(Node(t, r))
            if self.last_ts < t:
                self.notify_at(t + self.span)
                self.last_ts = t
            self._walk(out, now, old)
            out.current(t, r)
        self.emit(out.chunk())

    def on_timer(self, due: int, now: int) -> None:
        out = Out()
        self._walk(out, now, None)
        if out:
            self.emit(out.chunk())

    def contents(self) -> list[Ev]:
        return self.chunk.events()

    def snapshot(self) -> Any:
        return {"map": _save_map(self.map), "chunk": snapshot_chunks([self.chunk]), "last": self.last_ts}

    def restore(self, state: Any) -> None:
        _load_map(self.map, state["map"])
        self.chunk = restore_chunks(state["chunk"])[0]
        self.last_ts = state["last"]


def _keys(param: Param) -> tuple[Param, ...]:
    """One required key parameter, then up to MAX_KEYS - 1 more."""
    extra = Param(param.name, param.types, param.attribute, True, param.dynamic)
    return (param, *(extra for _ in range(MAX_KEYS - 1)))


CORE_KEYS = _keys(Param("attribute", tuple(AttrType), attribute=True))
EXT_KEYS = _keys(Param("unique.key", KEY_TYPES, dynamic=True))
EXT_KEY = Param("unique.key", KEY_TYPES, dynamic=True)
register(WindowSpec("unique", UniqueWindow, (CORE_KEYS,), description="unique(attribute [, attribute]...)"))
register(
    WindowSpec(
        "firstUnique", FirstUniqueWindow, (CORE_KEYS,), description="firstUnique(attribute [, attribute]...)"
    )
)
register(
    WindowSpec(
        "unique:ever", UniqueWindow, (EXT_KEYS,), description="unique:ever(unique.key [, unique.key]...)"
    )
)
register(
    WindowSpec(
        "unique:first",
        FirstUniqueWindow,
        (EXT_KEYS,),
        description="unique:first(unique.key [, unique.key]...)",
    )
)
register(
    WindowSpec("unique:length", UniqueLengthWindow, ((EXT_KEY, Param("window.length", (AttrType.INT,))),))
)
register(
    WindowSpec(
        "unique:time",
        UniqueTimeWindow,
        (
            (
                Param("unique.key", KEY_TYPES, attribute=True),
                Param("window.time", (AttrType.INT, AttrType.LONG)),
            ),
        ),
    )
)
