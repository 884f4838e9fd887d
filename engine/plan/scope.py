"""What an expression can see: the inputs of a query and how generated code reaches them.

A `Source` is one input (a stream, one side of a join, a pattern state, a table row).
It knows its attribute types and the Python code that reaches its row in generated code
(`fast` may assume the row exists; `safe` must cope with a missing row).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from engine.query.expressions import EventIndex
from engine.types import AttrType


@dataclass
class Source:
    names: tuple[str, ...]  # how queries qualify it: stream id, alias, pattern ref
    attributes: list[tuple[str, AttrType]]
    row: str  # code for the row tuple, e.g. "r" or "l"
    nullable: bool = False  # the row itself may be None (outer join side, unmatched state)
    # For pattern states: builds row code for `e1[0]`, `e1[last]`; None when not indexable.
    indexed_row: Callable[[EventIndex | None], str] | None = None
    counted: bool = False  # a counting state (`<n:m>`, `*`, `+`): unindexed refs mean the first
    stream: str = ""
    is_table: bool = False
    inner: bool = False
    ts: str | None = None  # code for the row's timestamp, where eventTimestamp(name) may read it

    def index_of(self, name: str) -> int | None:
        for i, (n, _) in enumerate(self.attributes):
            if n == name:
                return i
        return None

    def type_of(self, i: int) -> AttrType:
        return self.attributes[i][1]


@dataclass
class Scope:
    sources: list[Source]
    # Output attributes usable by name (having / order by): name -> (code, type)
    outputs: dict[str, tuple[str, AttrType]] = field(default_factory=dict)
    prefer_outputs: bool = False
    # Sources reachable only when qualified (tables in `in` / `on` conditions)
    qualified_only: list[Source] = field(default_factory=list)
    event_ts: str = "t"  # code for the current event's timestamp (eventTimestamp())
    # Pattern state filters: unqualified names belong to this state's stream first.
    default_source: Source | None = None
    # A CEP 4 (Siddhi 3.x) single-stream query: Siddhi before 4.3.19 read `X.attr` and
    # `e3[last].attr` by the attribute's name alone when X named nothing in scope.
    lenient_qualifiers: bool = False

    def find_source(self, name: str) -> Source | None:
        for s in self.sources + self.qualified_only:
            if name in s.names:
                return s
        return None

    def with_outputs(self, outputs: dict[str, tuple[str, AttrType]], prefer: bool = True) -> Scope:
        return Scope(
            self.sources,
            outputs,
            prefer,
            self.qualified_only,
            self.event_ts,
            self.default_source,
            self.lenient_qualifiers,
        )

    def with_qualified(self, extra: list[Source]) -> Scope:
        return Scope(
            self.sources,
            self.outputs,
            self.prefer_outputs,
            self.qualified_only + extra,
            self.event_ts,
            self.default_source,
            self.lenient_qualifiers,
        )
