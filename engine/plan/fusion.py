"""What a partition needs to run its one `every e1=S -> e2=S` query as a single keyed
operator (runtime/keyed_followed_by.py) instead of one query instance per key.

The pattern planner describes a query of that shape in a `FollowedByFusion`; the partition
planner decides whether its partition qualifies. Imports only plan modules below the
query planners (context, selector).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.events import Chunk
from engine.plan.context import Env
from engine.plan.selector import SelectorPlan

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

    def fits_partition(self, partitioned: list[str]) -> bool:
        """Whether a partition by one value key of `partitioned` (its only stream) may fuse it."""
        return (
            len(partitioned) == 1
            and not self.inner
            and not self.fill
            and self.streams == (partitioned[0], partitioned[0])
        )
