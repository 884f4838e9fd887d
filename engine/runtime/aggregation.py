"""An incremental aggregation (`define aggregation`): per duration (sec ... year), per
bucket start, per group key, a state list of base values (sum and count, min, max,
distinct values with counts, the last value of a plain attribute).

A chunk is first folded into partial states per (root bucket, key) by code the planner
generates (engine/plan/aggregations.py); each partial is then merged into the bucket of
every duration that holds its root bucket. So an out-of-order event lands in its own
(older) buckets at every duration, and a retrieval `per` any duration reads that
duration's buckets directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.events import Chunk
from engine.runtime.timebuckets import BucketMapper, duration_of, within_range

Row = tuple[Any, ...]
State = list[Any]
Partial = dict[tuple[int, Any], State]


class AggregationError(ValueError):
    """A retrieval asked for what the aggregation cannot give (a bad `per` or `within`)."""


@dataclass(frozen=True)
class Purge:
    """`@purge`: every `interval` ms of the runtime's clock, the buckets of a duration that
    start more than its retention (ms; None keeps all) before now are dropped."""

    interval: int
    retention: dict[str, int | None]


class Aggregation:
    def __init__(
        self,
        name: str,
        durations: list[str],
        accumulate: Callable[[list[int], list[Row], Aggregation], Partial],
        new_state: Callable[[], State],
        merge: Callable[[State, State], None],
        values: Callable[[State], Row],
        dict_slots: tuple[int, ...] = (),
        purge: Purge | None = None,
        now: Callable[[], int] = lambda: 0,
    ) -> None:
        self.name = name
        self.durations = durations
        self.accumulate = accumulate
        self.new_state = new_state
        self.merge = merge
        self.values = values
        self.dict_slots = dict_slots  # slots holding {value: count} (distinctCount)
        self.mapper = BucketMapper(durations)
        self.store: dict[str, dict[int, dict[Any, State]]] = {d: {} for d in durations}
        self.latest: int | None = None  # the newest root bucket seen (for @BufferSize)
        self.purge = purge
        self.now = now
        self.next_purge: int | None = None  # when purging is next due (the runtime's clock)

    # ---- input -----------------------------------------------------------------------------

    def receive(self, chunk: Chunk) -> None:
        if self.purge is not None:
            self.purge_if_due()
        partial = self.accumulate(chunk.ts, chunk.rows, self)
        if not partial:
            return
        of = self.mapper.of
        new_state = self.new_state
        merge = self.merge
        for d in self.durations:
            buckets = self.store[d]
            for (root, key), part in partial.items():
                start = of(root, d)
                groups = buckets.get(start)
                if groups is None:
                    groups = buckets[start] = {}
                st = groups.get(key)
                if st is None:
                    st = groups[key] = new_state()
                merge(st, part)

    # ---- purging -----------------------------------------------------------------------------

    def purge_if_due(self) -> None:
        """Purge when the interval has passed since the last purge (or since the first
        event or read): checked as events come and as the aggregation is read, so a read
        sees what Siddhi's timed purger would have left."""
        assert self.purge is not None
        now = self.now()
        if self.next_purge is None:
            self.next_purge = now + self.purge.interval
            return
        if now < self.next_purge:
            return
        self.next_purge = now + self.purge.interval
        for d, keep in self.purge.retention.items():
            if keep is None:
                continue
            cutoff = now - keep
            buckets = self.store[d]
            for b in [b for b in buckets if b < cutoff]:
                del buckets[b]

    # ---- retrieval ---------------------------------------------------------------------------

    def duration(self, per: Any) -> str:
        d = duration_of(per) if isinstance(per, str) else None
        if d is None:
            msg = f"'per {per!r}' is not a duration: use seconds, minutes, hours, days, months or years"
            raise AggregationError(msg)
        if d not in self.store:
            msg = f"aggregation '{self.name}' keeps no '{per}' buckets (it aggregates {', '.join(self.durations)})"
            raise AggregationError(msg)
        return d

    def find(self, within: tuple[Any, ...], per: Any) -> list[Row]:
        """The rows (AGG_TIMESTAMP, values...) of the `per` buckets starting in `within`,
        oldest first, groups in the order they first appeared."""
        d = self.duration(per)
        if self.purge is not None:
            self.purge_if_due()
        try:
            start, end = within_range(*within, two=len(within) == 2)
        except ValueError as exc:
            raise AggregationError(str(exc)) from None
        buckets = self.store[d]
        values = self.values
        out: list[Row] = []
        for b in sorted(buckets):
            if start <= b < end:
                out += [(b, *values(st)) for st in buckets[b].values()]
        return out

    # ---- state -----------------------------------------------------------------------------

    def _copy(self, st: State) -> list[Any]:
        copy = list(st)
        for i in self.dict_slots:
            copy[i] = [[v, n] for v, n in st[i].items()]
        return copy

    def snapshot(self) -> Any:
        return {
            "latest": self.latest,
            "next_purge": self.next_purge,
            "store": [
                [d, [[b, [[k, self._copy(st)] for k, st in groups.items()]] for b, groups in buckets.items()]]
                for d, buckets in self.store.items()
            ],
        }

    def restore(self, state: Any) -> None:
        self.latest = state["latest"]
        self.next_purge = state.get("next_purge")
        self.store = {d: {} for d in self.durations}
        width = len(self.new_state())
        for d, buckets in state["store"]:
            if d not in self.store:
                continue
            target = self.store[d]
            for b, groups in buckets:
                g = target[b] = {}
                for k, st in groups:
                    st = list(st)
                    if len(st) < width:  # of an engine whose states had fewer slots at the end
                        st += self.new_state()[len(st) :]
                    for i in self.dict_slots:
                        st[i] = {v: n for v, n in st[i]}
                    g[k] = st
