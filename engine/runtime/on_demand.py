"""A compiled on-demand query, ready to run against the runtime that prepared it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from engine.types import AttrType

Row = tuple[Any, ...]


@dataclass(frozen=True)
class PreparedQuery:
    """`run()` reads (or changes) the plan's tables and windows: call it only under the
    runtime's lock, through `Runtime.run_query`. It returns `(timestamp, row)` pairs; the
    changing forms return none."""

    text: str
    columns: list[str]
    types: list[AttrType]
    changes: bool  # insert, delete, update or update-or-insert
    target: str  # the table or window read or changed
    run: Callable[[], list[tuple[int, Row]]]
    origin: object  # what prepared it: a runtime runs only what it prepared


class QueryPreparer(Protocol):
    """What compiles on-demand queries for a runtime (the planner's `OnDemandPlanner`)."""

    def prepare(self, text: str) -> PreparedQuery: ...
