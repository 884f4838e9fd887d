"""The parts of a runtime's state and their timers.

A part is one unit that holds state and is restored whole or not at all: a query, a
partition (with every key's instances of its inner queries: one unit, since they share
the partition's keys and timers), a table, a named window or a trigger. Its `PartSpec`
says what it is (the key it is found under in a snapshot, and fingerprints of its text and
schemas, made by engine/plan/fingerprints.py); its timers are recognised by their owner
ids and kept relative to the part, so a part restores with its timers even where an edit
elsewhere renumbered the plan's unnamed queries or partitions.

Owner ids (engine/runtime/clock.py) look like `q/window` (a query `q`),
`partition/partition1/'key'/q/window` and `partition/partition1/purge`, `window/W`,
`trigger/T`; a second registration of an id gets `#2`. Imports nothing of the planner.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Timer = tuple[int, int, str]  # due time, order among timers due together, owner id


@dataclass(frozen=True)
class PartSpec:
    """What a part is. `key` is stable across edits that leave the part's own text alone:
    `query:<name>` for a query with `@info(name)`, else `query:#<hash of its tokens>`;
    `table:<name>`, `window:<name>`, `trigger:<name>`; `partition:<name or #hash>`."""

    key: str
    label: str  # for people: "query 'q2'", "table 'T'"
    text: str  # fingerprint of its tokens (comments and whitespace ignored)
    inputs: str  # fingerprint of the schemas it reads
    output: str  # fingerprint of the schema it writes
    shape: str = ""  # how it runs, where that changes its state's form ("fused")


@dataclass(frozen=True)
class Owners:
    """How a part's timer owner ids look: `prefix` (`partition/p1/`, `window/W`) and the
    query names inside (`names`), each in owner ids where the part has queries."""

    prefix: str = ""
    names: tuple[str, ...] = ()
    exact: bool = False  # the owner id is `prefix` itself (or `prefix#n`)

    def relative(self, owner: str) -> list[Any]:
        """The owner id without what an edit elsewhere may change (the queries' names).
        An id of an unexpected form stays whole: it then restores only where the names
        did not change."""
        rest = owner[len(self.prefix) :]
        if self.exact or "/" not in rest:
            return [rest]
        head, _, tail = rest.rpartition("/")
        if not self.prefix:
            return [self.names.index(head), tail] if head in self.names else [rest]
        inner = [n for n in self.names if head.endswith("/" + n)]
        if not inner:
            return [rest]
        name = max(inner, key=len)
        return [head[: -len(name) - 1], self.names.index(name), tail]

    def absolute(self, rel: list[Any]) -> str:
        if len(rel) == 1:
            return f"{self.prefix}{rel[0]}"
        if len(rel) == 2:
            return f"{self.prefix}{self.names[rel[0]]}/{rel[1]}"
        return f"{self.prefix}{rel[0]}/{self.names[rel[1]]}/{rel[2]}"


@dataclass(eq=False)
class Part:
    spec: PartSpec
    snapshot: Callable[[], Any]  # a copy of its state: fresh containers, shared immutable rows
    restore: Callable[[Any], None]
    owners: Owners = field(default_factory=Owners)
    starters: list[Callable[[], None]] = field(default_factory=list)


class OwnerIndex:
    """Which part a timer owner id belongs to."""

    def __init__(self, parts: list[Part]) -> None:
        self.exact: dict[str, Part] = {}
        self.partitions: dict[str, Part] = {}
        self.queries: dict[str, Part] = {}
        for part in parts:
            o = part.owners
            if o.exact:
                self.exact[o.prefix] = part
            elif o.prefix:
                self.partitions[o.prefix] = part
            else:
                for name in o.names:
                    self.queries[name] = part

    def part_of(self, owner: str) -> Part | None:
        part = self.exact.get(owner.partition("#")[0])
        if part is not None:
            return part
        if owner.startswith("partition/"):
            name = owner.split("/", 2)[1]
            part = self.partitions.get(f"partition/{name}/")
            if part is not None:
                return part
        return self.queries.get(owner.rpartition("/")[0])
