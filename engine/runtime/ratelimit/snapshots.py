"""`output snapshot every T`: at the end of each period, the query's current view again
(Siddhi's `SnapshotOutputRateLimiter` family). Which view depends on the query: the last
event, the last per group, the events still in the window, with aggregate columns brought
up to date."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.events import CURRENT, EXPIRED, RESET, Chunk
from engine.runtime.ratelimit.base import Item, Limiter, LimiterEnv, Periodic, items_of


@dataclass(frozen=True)
class SnapshotLimiterSpec:
    """`output snapshot every <period> ms` of a query with `columns` output columns, those
    at `aggregates` being aggregates; `windowed`: the query reads a window or a join."""

    period: int
    windowed: bool
    group_by: bool
    columns: int
    aggregates: tuple[int, ...] = ()

    def build(self, env: LimiterEnv) -> Limiter:
        every_column = len(self.aggregates) == self.columns
        if not self.windowed:
            return GroupByPerSnapshot(self.period, env) if self.group_by else PerSnapshot(self.period, env)
        if self.group_by:
            if every_column:
                return AllAggregationGroupByWindowedPerSnapshot(self.period, env)
            if self.aggregates:
                return AggregationGroupByWindowedPerSnapshot(self.period, env, self.aggregates)
            return WindowedPerSnapshot(self.period, env)
        if every_column:
            return AllAggregationPerSnapshot(self.period, env)
        if self.aggregates:
            return AggregationWindowedPerSnapshot(self.period, env, self.aggregates)
        return WindowedPerSnapshot(self.period, env)


class _Snapshot(Periodic):
    """Emits the current view every period; an event arriving after the due time first
    flushes, then updates the view."""

    __slots__ = ()

    def process(self, chunk: Chunk) -> None:
        for item in items_of(chunk):
            self.apply(item)

    def apply(self, item: Item) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def view(self) -> list[Item]:  # pragma: no cover - interface
        raise NotImplementedError

    def flush(self) -> None:
        self.send(self.view())


class PerSnapshot(_Snapshot):
    """The last current event."""

    __slots__ = ("last",)

    def __init__(self, period: int, env: LimiterEnv) -> None:
        super().__init__(period, env)
        self.last: Item | None = None

    def apply(self, item: Item) -> None:
        if item[2] == CURRENT:
            self.last = item

    def view(self) -> list[Item]:
        return [self.last] if self.last is not None else []

    def held(self) -> Any:
        return self.last

    def hold(self, state: Any) -> None:
        self.last = state


class AllAggregationPerSnapshot(PerSnapshot):
    """Only aggregates over a window: the last current event, none once one expires."""

    __slots__ = ()

    def apply(self, item: Item) -> None:
        self.last = item if item[2] == CURRENT else None


class GroupByPerSnapshot(_Snapshot):
    """The last current event of each group."""

    __slots__ = ("latest",)

    def __init__(self, period: int, env: LimiterEnv) -> None:
        super().__init__(period, env)
        self.latest: dict[Any, Item] = {}

    def apply(self, item: Item) -> None:
        if item[2] == CURRENT:
            self.latest[item[3]] = item

    def view(self) -> list[Item]:
        return list(self.latest.values())

    def held(self) -> Any:
        return dict(self.latest)

    def hold(self, state: Any) -> None:
        self.latest = dict(state)


class WindowedPerSnapshot(_Snapshot):
    """The events still in the window."""

    __slots__ = ("events",)

    def __init__(self, period: int, env: LimiterEnv) -> None:
        super().__init__(period, env)
        self.events: list[Item] = []

    def apply(self, item: Item) -> None:
        if item[2] == CURRENT:
            self.events.append(item)
        elif item[2] == EXPIRED:
            for i, e in enumerate(self.events):
                if e[1] == item[1]:
                    del self.events[i]
                    break
        elif item[2] == RESET:
            self.events = []

    def view(self) -> list[Item]:
        return list(self.events)

    def held(self) -> Any:
        return list(self.events)

    def hold(self, state: Any) -> None:
        self.events = list(state)


class AggregationWindowedPerSnapshot(_Snapshot):
    """Window rows with their aggregate columns replaced by the latest aggregate values."""

    __slots__ = ("events", "aggs", "positions")

    def __init__(self, period: int, env: LimiterEnv, positions: tuple[int, ...]) -> None:
        super().__init__(period, env)
        self.events: list[Item] = []
        self.aggs: dict[Any, dict[int, Any]] = {}
        self.positions = positions

    def _same(self, a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
        skip = set(self.positions)
        return all(x == y for i, (x, y) in enumerate(zip(a, b, strict=True)) if i not in skip)

    def apply(self, item: Item) -> None:
        key = item[3]
        if item[2] == CURRENT:
            self.events.append(item)
            self.aggs[key] = {p: item[1][p] for p in self.positions}
        elif item[2] == EXPIRED:
            for i, e in enumerate(self.events):
                if self._same(e[1], item[1]):
                    del self.events[i]
                    break
            self.aggs[key] = {p: item[1][p] for p in self.positions}
        elif item[2] == RESET:
            self.events = []
            self.aggs = {}

    def _patched(self, item: Item) -> Item:
        agg = self.aggs.get(item[3], {})
        row = tuple(agg.get(i, v) for i, v in enumerate(item[1]))
        return (item[0], row, item[2], item[3])

    def view(self) -> list[Item]:
        return [self._patched(e) for e in self.events]

    def held(self) -> Any:
        return {"events": list(self.events), "aggs": {k: dict(v) for k, v in self.aggs.items()}}

    def hold(self, state: Any) -> None:
        self.events = list(state["events"])
        self.aggs = {k: dict(v) for k, v in state["aggs"].items()}


class AggregationGroupByWindowedPerSnapshot(AggregationWindowedPerSnapshot):
    """As above, one row per group: its oldest event still in the window."""

    __slots__ = ()

    def view(self) -> list[Item]:
        seen: dict[Any, Item] = {}
        for e in self.events:
            if e[3] not in seen:
                seen[e[3]] = self._patched(e)
        return list(seen.values())


class AllAggregationGroupByWindowedPerSnapshot(_Snapshot):
    """Only aggregates, grouped, over a window: the last event of each group that still
    has events in the window."""

    __slots__ = ("groups",)

    def __init__(self, period: int, env: LimiterEnv) -> None:
        super().__init__(period, env)
        self.groups: dict[Any, list[Any]] = {}  # key -> [events in the window, last event]

    def apply(self, item: Item) -> None:
        if item[2] == RESET:
            self.groups = {}
            return
        entry = self.groups.setdefault(item[3], [0, item])
        entry[1] = item
        entry[0] += 1 if item[2] == CURRENT else -1

    def view(self) -> list[Item]:
        out = []
        for key in list(self.groups):
            count, item = self.groups[key]
            if count <= 0:
                del self.groups[key]
            else:
                out.append(item)
        return out

    def held(self) -> Any:
        return {key: (count, item) for key, (count, item) in self.groups.items()}

    def hold(self, state: Any) -> None:
        self.groups = {key: [count, item] for key, (count, item) in state.items()}
