"""`sort(window.length, attribute [, 'asc'|'desc'] [, attribute [, order]]...)`: keeps the
`window.length` events that sort first; each arrival is emitted as current, then the event
that sorts last (among equal keys, the newest) leaves as expired, stamped now.

Siddhi re-sorts the whole list, stably, whenever it overflows; after the first overflow the
kept events stay sorted, so later arrivals are placed by binary search with the same result.
"""

from __future__ import annotations

from bisect import insort_right
from collections.abc import Callable
from functools import cmp_to_key
from typing import Any

from engine.events import Chunk
from engine.runtime.windows.base import Param, Window, WindowContext, WindowSpec, check_args, register
from engine.runtime.windows.shared import Ev, Out, arg_types, load_list, save
from engine.types import AttrType

SORTABLE = (AttrType.STRING, AttrType.DOUBLE, AttrType.INT, AttrType.LONG, AttrType.FLOAT)
MAX_KEYS = 16
Row = tuple[Any, ...]


def _order(value: Any) -> int | None:
    if isinstance(value, str) and value.lower() in ("asc", "desc"):
        return -1 if value.lower() == "desc" else 1
    return None


def _check(args: list[Any], types: list[AttrType]) -> str | None:
    i = 1
    while i < len(args):
        if not callable(args[i]):
            return f"parameter {i + 1} must be an attribute to sort by, found the constant {args[i]!r}"
        if i + 1 < len(args) and types[i + 1] is AttrType.STRING:
            if callable(args[i + 1]):
                return f"parameter {i + 2} must be the constant 'asc' or 'desc', found a string attribute"
            if _order(args[i + 1]) is None:
                return f"parameter {i + 2} must be 'asc' or 'desc', found {args[i + 1]!r}"
            i += 2
        else:
            i += 1
    return None


class SortWindow(Window):
    def __init__(self, ctx: WindowContext, args: list[Any]) -> None:
        super().__init__(ctx, args)
        check_args("sort", _check, args, arg_types(args, ctx.attribute_types))
        self.length = int(args[0])
        keys: list[tuple[Callable[[Row], Any], int]] = []
        i = 1
        while i < len(args):
            order = _order(args[i + 1]) if i + 1 < len(args) and not callable(args[i + 1]) else None
            keys.append((args[i], order or 1))
            i += 2 if order is not None else 1
        self.keys = keys
        self.sort_key = cmp_to_key(self._compare)
        self.buf: list[Ev] = []
        self.sorted = False  # the kept events are in order once the window has overflowed

    def _compare(self, a: Ev, b: Ev) -> int:
        for fn, order in self.keys:
            x, y = fn(a[1]), fn(b[1])
            if x == y:
                continue
            if x is None or y is None:  # Java would fail on null; nulls sort first here
                return -order if x is None else order
            return -order if x < y else order
        return 0

    def process(self, chunk: Chunk) -> None:
        now = self.ctx.now()
        out = Out()
        buf = self.buf
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            out.current(t, r)
            if self.sorted:
                insort_right(buf, (t, r), key=self.sort_key)
            else:
                buf.append((t, r))
            if len(buf) > self.length:
                if not self.sorted:
                    buf.sort(key=self.sort_key)
                    self.sorted = True
                out.expired(now, buf.pop()[1])
        self.emit(out.chunk())

    def contents(self) -> list[Ev]:
        return list(self.buf)

    def snapshot(self) -> Any:
        return {"buf": save(self.buf), "sorted": self.sorted}

    def restore(self, state: Any) -> None:
        self.buf = load_list(state["buf"])
        self.sorted = state["sorted"]


_SIGNATURE = (
    Param("window.length", (AttrType.INT,)),
    Param("attribute", SORTABLE, attribute=True),
    Param("order", (AttrType.STRING,), optional=True),
    *(Param("attribute", SORTABLE, optional=True, dynamic=True) for _ in range(2 * MAX_KEYS)),
)
USAGE = "sort(window.length <int>, attribute [, 'asc'|'desc'] [, attribute [, 'asc'|'desc']]...)"
register(WindowSpec("sort", SortWindow, (_SIGNATURE,), description=USAGE, check=_check))
