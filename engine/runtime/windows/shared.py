"""What the windows share besides `base`: an output chunk built event by event, the
plain-value form of stored events for snapshots, and readers of window parameters (which
input attribute an accessor reads, constants as accessors)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from itertools import repeat
from operator import itemgetter
from typing import Any

from engine.events import CURRENT, EXPIRED, RESET, Chunk
from engine.runtime.windows.javacompat import java_str
from engine.types import AttrType

Row = tuple[Any, ...]
Ev = tuple[int, Row]  # a stored event: (timestamp, row)
_TS, _ROW = itemgetter(0), itemgetter(1)


class Out:
    """Output events in order; `chunk()` hands them over as one Chunk."""

    __slots__ = ("ts", "rows", "kinds")

    def __init__(self) -> None:
        self.ts: list[int] = []
        self.rows: list[Row] = []
        self.kinds: list[int] = []

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, t: int, row: Row, kind: int) -> None:
        self.ts.append(t)
        self.rows.append(row)
        self.kinds.append(kind)

    def current(self, t: int, row: Row) -> None:
        self.add(t, row, CURRENT)

    def expired(self, t: int, row: Row) -> None:
        self.add(t, row, EXPIRED)

    def reset(self, t: int, row: Row) -> None:
        self.add(t, row, RESET)

    def expire_all(self, now: int, events: Iterable[Ev]) -> None:
        if not isinstance(events, Sequence):
            events = list(events)
        n = len(events)
        self.ts.extend(repeat(now, n))
        self.rows.extend(map(_ROW, events))
        self.kinds.extend(repeat(EXPIRED, n))

    def current_all(self, events: Iterable[Ev]) -> None:
        if not isinstance(events, Sequence):
            events = list(events)
        self.ts.extend(map(_TS, events))
        self.rows.extend(map(_ROW, events))
        self.kinds.extend(repeat(CURRENT, len(events)))

    def current_columns(self, ts: list[int], rows: list[Row]) -> None:
        self.ts += ts
        self.rows += rows
        self.kinds += repeat(CURRENT, len(rows))

    def chunk(self) -> Chunk:
        kinds = self.kinds
        return Chunk(self.ts, self.rows, None if kinds.count(CURRENT) == len(kinds) else kinds)


def save(events: Iterable[Ev] | None) -> list[Any] | None:
    return None if events is None else [[t, list(r)] for t, r in events]


def load(state: list[Any] | None) -> list[Ev] | None:
    return None if state is None else [(t, tuple(r)) for t, r in state]


def load_list(state: list[Any] | None) -> list[Ev]:
    return [] if state is None else [(t, tuple(r)) for t, r in state]


def save_ev(event: Ev | None) -> list[Any] | None:
    return None if event is None else [event[0], list(event[1])]


def load_ev(state: list[Any] | None) -> Ev | None:
    return None if state is None else (state[0], tuple(state[1]))


_ROW_INDEX = re.compile(r"^\(?r\[(\d+)\]\)?$")


def attribute_index(fn: Any) -> int | None:
    """The input attribute position an attribute-parameter accessor reads, if it reads one."""
    m = _ROW_INDEX.match(str(getattr(fn, "code", "")))
    return int(m.group(1)) if m else None


def attribute_type(fn: Any, types: list[AttrType]) -> AttrType | None:
    i = attribute_index(fn)
    return types[i] if i is not None and i < len(types) else None


def value_type(value: Any) -> AttrType:
    """The Siddhi type of a constant parameter value."""
    if isinstance(value, bool):
        return AttrType.BOOL
    if isinstance(value, str):
        return AttrType.STRING
    if isinstance(value, int):
        return AttrType.INT if -(2**31) <= value < 2**31 else AttrType.LONG
    if isinstance(value, float):
        return AttrType.DOUBLE
    return AttrType.OBJECT


def arg_types(args: list[Any], attribute_types: list[AttrType]) -> list[AttrType]:
    """The Siddhi type of each prepared window argument (constants and accessors)."""
    return [
        (attribute_type(a, attribute_types) or AttrType.OBJECT) if callable(a) else value_type(a)
        for a in args
    ]


def constant_reader(value: Any) -> Callable[[Row], Any]:
    """A parameter accessor for a constant parameter value."""

    def read(row: Row) -> Any:
        return value

    return read


def string_reader(fn: Callable[[Row], Any], kind: AttrType | None) -> Callable[[Row], str]:
    """`String.valueOf(fn(row))`."""

    def read(row: Row) -> str:
        return java_str(fn(row), kind)

    return read
