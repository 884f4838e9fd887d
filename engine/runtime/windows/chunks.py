"""Small pieces the windows share: an output chunk built event by event, and the plain-value
form of stored events for snapshots."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine.events import CURRENT, EXPIRED, RESET, Chunk

Row = tuple[Any, ...]
Ev = tuple[int, Row]  # a stored event: (timestamp, row)


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
        for _, row in events:
            self.add(now, row, EXPIRED)

    def current_all(self, events: Iterable[Ev]) -> None:
        for t, row in events:
            self.add(t, row, CURRENT)

    def chunk(self) -> Chunk:
        kinds = self.kinds
        return Chunk(self.ts, self.rows, None if all(k == CURRENT for k in kinds) else kinds)


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
