"""A journaled plan in one "process" for the journal and replication tests: its plan, a
script of operations on a settable wall clock, and a `Run` that collects what it emitted."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import engine
from app.persistence.input_log import InputLog
from app.persistence.journal import PlanJournal
from app.persistence.records import Events, content_digest, encode

PLAN = """
define stream In (k string, v long);
define stream Sums (total long);
define stream Batches (n long);
define stream Rises (first long, second long);
@info(name='sliding') from In#window.time(1 sec) select sum(v) as total insert into Sums;
@info(name='batches') from In#window.timeBatch(500 millisec) select count() as n insert into Batches;
@info(name='rises')
from every e1=In -> e2=In[v > e1.v] within 700 millisec
select e1.v as first, e2.v as second insert into Rises;
"""

# (wall clock ms, value to send, or None for a clock tick)
OPS: list[tuple[int, int | None]] = [
    (1_000, 5), (1_100, 7), (1_250, None), (1_400, 3), (1_600, None), (1_700, 9), (2_050, None),
    (2_100, 2), (2_300, 4), (2_700, None), (2_900, 8), (3_400, None), (3_500, 1), (4_200, None),
    (4_300, 6), (4_800, None),
]  # fmt: skip


def digest(stream: str, timestamps: list[int], rows: list[tuple[Any, ...]]) -> int:
    """The content digest a journal gives this bundle (`content_digest` of its payload)."""
    return content_digest(encode(Events(stream, timestamps, rows)))


@dataclass
class Wall:
    now: int = 0

    def __call__(self) -> int:
        return self.now


@dataclass
class Run:
    """One process: a journal over the log in `directory`, a runtime, and what it emitted."""

    directory: Path
    wall: Wall = field(default_factory=Wall)
    out: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    fsync: str = "off"

    def __post_init__(self) -> None:
        self.log = InputLog(self.directory, self.fsync)
        self.journal = PlanJournal("p", self.log, self.wall)
        self.runtime = engine.compile(PLAN, clock="wall", wall_time=self.journal.clock)
        for stream in ("Sums", "Batches", "Rises"):
            self.runtime.subscribe(stream, self._collect(stream))
        self.journal.runtime = self.runtime

    def _collect(self, stream: str) -> Any:
        def collect(events: list[engine.Event]) -> None:
            self.out.extend((stream, tuple(e.data)) for e in events)

        return collect

    def do(self, ops: list[tuple[int, int | None]]) -> None:
        for wall, value in ops:
            self.wall.now = wall
            if value is None:
                self.journal.tick()
            else:
                self.journal.send("In", [("k", value)], wall)
