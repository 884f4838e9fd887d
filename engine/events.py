"""Events as users see them, and chunks as operators move them.

A `Chunk` is a batch of events: parallel lists of timestamps and row tuples, and
optionally a list of kinds (current / expired / reset). `kinds is None` means every
event is current, which is the fast path of filters and projections.
Imports nothing of ours.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

CURRENT = 0
EXPIRED = 1
RESET = 2


class Event:
    """One event: timestamp in ms, data in attribute order, and whether it expired."""

    __slots__ = ("timestamp", "data", "expired")

    def __init__(self, timestamp: int, data: Sequence[Any], expired: bool = False) -> None:
        self.timestamp = timestamp
        self.data = data
        self.expired = expired

    def __repr__(self) -> str:
        kind = "expired" if self.expired else "current"
        return f"Event({self.timestamp}, {list(self.data)!r}, {kind})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        return (
            self.timestamp == other.timestamp
            and tuple(self.data) == tuple(other.data)
            and self.expired == other.expired
        )

    __hash__ = None  # type: ignore[assignment]


class Chunk:
    """A batch of events moving between operators."""

    __slots__ = ("ts", "rows", "kinds", "keys", "uniform", "ascending")

    def __init__(
        self,
        ts: list[int],
        rows: list[tuple[Any, ...]],
        kinds: list[int] | None = None,
        keys: list[Any] | None = None,
        uniform: bool = False,
        ascending: bool = False,
    ) -> None:
        self.ts = ts
        self.rows = rows
        self.kinds = kinds
        self.keys = keys  # group-by key of each event, for rate limiters
        self.uniform = uniform  # every event has the same timestamp (fast paths may use ts[0])
        self.ascending = ascending or uniform  # timestamps known not to decrease (False: unknown)

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        return f"Chunk(ts={self.ts!r}, rows={self.rows!r}, kinds={self.kinds!r})"

    def current_only(self) -> Chunk:
        """The same events, all typed current (what a downstream query sees)."""
        if self.kinds is None:
            return self
        keep = [k != RESET for k in self.kinds]
        if all(keep):
            return Chunk(self.ts, self.rows, uniform=self.uniform, ascending=self.ascending)
        ts = [t for t, k in zip(self.ts, keep, strict=True) if k]
        rows = [r for r, k in zip(self.rows, keep, strict=True) if k]
        return Chunk(ts, rows, ascending=self.ascending)

    def events(self) -> list[Event]:
        kinds = self.kinds
        if kinds is None:
            return [Event(t, r) for t, r in zip(self.ts, self.rows, strict=True)]
        return [
            Event(t, r, k == EXPIRED) for t, r, k in zip(self.ts, self.rows, kinds, strict=True) if k != RESET
        ]


EMPTY = Chunk([], [])
