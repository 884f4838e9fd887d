"""Join sides, as Siddhi runs them.

Each side ends in a `JoinSide` placed after its window. When the side triggers, every
event its window passes (current, expired or reset) is matched against what the other
side holds; each event's matches go through the selector as a chunk of their own
(so an aggregating selector emits per triggering event), and everything the selector
emits while one incoming chunk is processed leaves as one chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.events import CURRENT, EXPIRED, RESET, Chunk
from engine.runtime.query import Stage
from engine.runtime.selector import SelectorRuntime

Row = tuple[Any, ...]
Matcher = Callable[[Row, list[Row]], list[Row]]


def merge(chunks: list[Chunk]) -> Chunk:
    if len(chunks) == 1:
        return chunks[0]
    ts: list[int] = []
    rows: list[Any] = []
    kinds: list[int] = []
    keys: list[Any] = []
    any_kinds = any_keys = False
    for c in chunks:
        ts += c.ts
        rows += c.rows
        if c.kinds is not None:
            any_kinds = True
            kinds += c.kinds
        else:
            kinds += [CURRENT] * len(c.rows)
        if c.keys is not None:
            any_keys = True
            keys += c.keys
        else:
            keys += [None] * len(c.rows)
    return Chunk(ts, rows, kinds if any_kinds else None, keys if any_keys else None)


class JoinSide(Stage):
    __slots__ = ("is_left", "trigger", "outer", "match", "other_rows", "selector", "deferred", "per_chunk")

    def __init__(
        self,
        *,
        is_left: bool,
        trigger: bool,
        outer: bool,
        match: Matcher,
        other_rows: Callable[[], Any],
        selector: SelectorRuntime,
        per_chunk: bool = False,
    ) -> None:
        super().__init__()
        self.is_left = is_left
        self.trigger = trigger
        self.outer = outer
        self.match = match
        self.other_rows = other_rows
        self.selector = selector
        self.deferred: list[Chunk] | None = None  # set by a self-join receiver
        self.per_chunk = per_chunk  # the selection may see all of a chunk's matches at once

    def process(self, chunk: Chunk) -> None:
        if not self.trigger:
            return
        kinds = chunk.kinds
        is_left = self.is_left
        select = self.selector.process
        outs: list[Chunk] = []
        if self.per_chunk:
            self._process_whole(chunk)
            return
        for i, (t, row) in enumerate(zip(chunk.ts, chunk.rows, strict=True)):
            kind = CURRENT if kinds is None else kinds[i]
            pairs: list[Any]
            if kind == RESET:
                pairs = [(row, None) if is_left else (None, row)]
            else:
                found = self.match(row, self.other_rows())
                if found:
                    pairs = [(row, o) for o in found] if is_left else [(o, row) for o in found]
                elif self.outer:
                    pairs = [(row, None) if is_left else (None, row)]
                else:
                    continue
            n = len(pairs)
            res = select(Chunk([t] * n, pairs, None if kind == CURRENT else [kind] * n))
            if res is not None:
                outs.append(res)
        if outs:
            out = merge(outs)
            if self.deferred is not None:
                self.deferred.append(out)
            else:
                assert self.next is not None
                self.next.process(out)

    def _process_whole(self, chunk: Chunk) -> None:
        kinds = chunk.kinds
        is_left = self.is_left
        match = self.match
        other = self.other_rows()
        ts_out: list[int] = []
        rows_out: list[Any] = []
        kinds_out: list[int] = []
        for i, (t, row) in enumerate(zip(chunk.ts, chunk.rows, strict=True)):
            kind = CURRENT if kinds is None else kinds[i]
            if kind == RESET:
                continue
            found = match(row, other)
            pairs: list[Any]
            if found:
                pairs = [(row, o) for o in found] if is_left else [(o, row) for o in found]
            elif self.outer:
                pairs = [(row, None) if is_left else (None, row)]
            else:
                continue
            ts_out += [t] * len(pairs)
            rows_out += pairs
            kinds_out += [kind] * len(pairs)
        if not rows_out:
            return
        res = self.selector.process(Chunk(ts_out, rows_out, kinds_out if any(kinds_out) else None))
        if res is None:
            return
        if self.deferred is not None:
            self.deferred.append(res)
        else:
            assert self.next is not None
            self.next.process(res)


class EmptyWindow(Stage):
    """The window Siddhi gives a windowless stream side: it keeps nothing, and passes each
    event as current, then (if wanted) expired, then a reset of the aggregates."""

    __slots__ = ("expired_needed", "reset", "now")

    def __init__(self, expired_needed: bool, reset: bool, now: Callable[[], int]) -> None:
        super().__init__()
        self.expired_needed = expired_needed
        self.reset = reset
        self.now = now

    def process(self, chunk: Chunk) -> None:
        assert self.next is not None
        if not self.expired_needed and not self.reset:
            self.next.process(chunk)
            return
        now = self.now()
        ts: list[int] = []
        rows: list[Row] = []
        kinds: list[int] = []
        for t, r in zip(chunk.ts, chunk.rows, strict=True):
            ts.append(t)
            rows.append(r)
            kinds.append(CURRENT)
            if self.expired_needed:
                ts.append(now)
                rows.append(r)
                kinds.append(EXPIRED)
            if self.reset:
                ts.append(now)
                rows.append(r)
                kinds.append(RESET)
        self.next.process(Chunk(ts, rows, kinds))


class SelfJoinReceiver:
    """Both sides read one stream: each event goes through the left side, then the
    right; the outputs leave after the whole chunk, one chunk per pass."""

    def __init__(
        self, left: Stage, right: Stage, left_join: JoinSide, right_join: JoinSide, downstream: Stage
    ) -> None:
        self.left = left
        self.right = right
        self.joins = (left_join, right_join)
        self.downstream = downstream

    def receive(self, chunk: Chunk) -> None:
        deferred: list[Chunk] = []
        for j in self.joins:
            j.deferred = deferred
        try:
            for t, row in zip(chunk.ts, chunk.rows, strict=True):
                single = Chunk([t], [row])
                self.left.process(single)
                self.right.process(single)
        finally:
            for j in self.joins:
                j.deferred = None
        for out in deferred:
            self.downstream.process(out)


def no_rows() -> list[Row]:
    return []
