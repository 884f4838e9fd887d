"""What a partition needs to run its one query as a single keyed operator instead of one
query instance per key:

- `every e1=S -> e2=S` (runtime/keyed_followed_by.py) and the sequence `every e1=S, e2=S`
  (runtime/keyed_sequence.py), described by the pattern planner in a `FollowedByFusion`;
- `from S[f][#window.length(n) | externalTime(ts, t) | externalTimeBatch(ts, t)] select
  <aggregates>` (runtime/keyed_window.py), described by the single-query planner in a
  `WindowFusion`.

The partition planner decides whether its partition qualifies. Imports only plan modules
below the query planners (context, expressions, selector, windows).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.events import Chunk
from engine.plan.context import Env
from engine.plan.expressions import Compiled
from engine.plan.selector import AggregateParts, SelectorPlan
from engine.plan.windows import WindowPlan
from engine.query.queries import SingleInput
from engine.runtime.windows.shared import attribute_index

Filter = Callable[[list[Any], tuple[Any, ...]], bool]


@dataclass(frozen=True)
class FollowedByFusion:
    """`every e1=A[f1] -> e2=B[f2] [within T] select ... insert into Out`, compiled."""

    streams: tuple[str, str]  # A and B
    inner: bool  # A or B is a partition's inner stream
    fill: bool  # f2 reads e1 through the general machine's partial (`p[1]`)
    f1: Filter | None  # the general (safe) filters
    f2: Filter | None
    f1_fast: str | None  # the same filters as inline code over the row, when possible
    f2_fast: str | None
    within: int | None  # ms
    selector: SelectorPlan
    output: Callable[[Env], Callable[[Chunk], None]]
    project_fast: str | None  # a plain projection of the matched rows, when the select is one
    sequence: bool = False  # `every e1=A, e2=B`: e2 must be the very next event

    def fits_partition(self, partitioned: list[str]) -> bool:
        """Whether a partition by one value key of `partitioned` (its only stream) may fuse it."""
        return (
            len(partitioned) == 1
            and not self.inner
            and not self.fill
            and self.streams == (partitioned[0], partitioned[0])
            and not (self.sequence and self.within is not None)
        )


@dataclass(frozen=True)
class WindowFusion:
    """`from S[filter]#window.W(...) select <aggregates, no group by> insert into Out` with W
    `length(n)`, `externalTime(ts, t)` or `externalTimeBatch(ts, t)`, or no window, compiled."""

    stream: str
    inner: bool
    window: str  # "length", "externalTime", "externalTimeBatch" or "none"
    size: int  # the length, or the time span in ms
    ts_index: int | None  # the timestamp attribute of the external-time windows
    filter_fast: str | None  # the filter before the window over `r` (and `_et`)
    filter_safe: str | None
    parts: AggregateParts
    output: Callable[[Env], Callable[[Chunk], None]]
    query: str

    def fits_partition(self, partitioned: list[str]) -> bool:
        return len(partitioned) == 1 and not self.inner and self.stream == partitioned[0]


def window_fusion(
    si: SingleInput,
    window: WindowPlan | None,
    pre: Compiled | None,
    sel: SelectorPlan,
    output: Callable[[Env], Callable[[Chunk], None]],
    name: str,
) -> WindowFusion | None:
    """The query as a keyed window operator may run it, if its window is one of those."""
    assert sel.parts is not None
    kind, args = ("none", []) if window is None else (window.spec.name, window.args)
    ts_index: int | None = None
    size = 0
    if kind == "none":
        pass
    elif kind == "length" and len(args) == 1 and isinstance(args[0], int) and args[0] >= 1:
        size = args[0]
    elif kind in ("externalTime", "externalTimeBatch") and len(args) == 2 and isinstance(args[1], int):
        ts_index = attribute_index(args[0])
        if ts_index is None:
            return None
        size = args[1]
    else:
        return None
    return WindowFusion(
        stream=si.stream,
        inner=si.inner,
        window=kind,
        size=size,
        ts_index=ts_index,
        filter_fast=None if pre is None else pre.fast,
        filter_safe=None if pre is None else pre.safe,
        parts=sel.parts,
        output=output,
        query=name,
    )
