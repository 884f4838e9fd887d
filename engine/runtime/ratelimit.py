"""Output rate limiters (`output [all|first|last] every N events | T`, `output snapshot
every T`), each a stage between the selector and the output, with Siddhi's semantics.

Time-based limiters start their period when the runtime starts and fire on the clock;
everything released while one chunk is processed leaves as one chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.events import CURRENT, EXPIRED, RESET, Chunk
from engine.runtime.clock import Timer
from engine.runtime.query import Stage

Item = tuple[int, tuple[Any, ...], int, Any]  # ts, row, kind, group key


def _items(chunk: Chunk) -> list[Item]:
    kinds = chunk.kinds or [CURRENT] * len(chunk.rows)
    keys = chunk.keys or [None] * len(chunk.rows)
    return list(zip(chunk.ts, chunk.rows, kinds, keys, strict=True))


def _chunk(items: list[Item]) -> Chunk:
    kinds = [i[2] for i in items]
    return Chunk(
        [i[0] for i in items],
        [i[1] for i in items],
        None if EXPIRED not in kinds else kinds,
        [i[3] for i in items],
    )


class Limiter(Stage):
    __slots__ = ("scheduler", "owner", "now", "start_time", "period")

    def __init__(
        self, scheduler: Any, owner: str, now: Callable[[], int], start_time: Callable[[], int], period: int
    ) -> None:
        super().__init__()
        self.scheduler = scheduler
        self.owner = owner
        self.now = now
        self.start_time = start_time
        self.period = period

    def send(self, items: list[Item]) -> None:
        if items:
            assert self.next is not None
            self.next.process(_chunk(items))

    def start(self) -> None:
        pass

    def snapshot(self) -> Any:
        return None

    def restore(self, state: Any) -> None:
        pass


# ---- per N events -------------------------------------------------------------------


class AllPerEvent(Limiter):
    __slots__ = ("buffer",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.buffer: list[Item] = []

    def process(self, chunk: Chunk) -> None:
        out: list[Item] = []
        for item in _items(chunk):
            self.buffer.append(item)
            if len(self.buffer) == self.period:
                out.extend(self.buffer)
                self.buffer = []
        self.send(out)

    def snapshot(self) -> Any:
        return [list(i) for i in self.buffer]

    def restore(self, state: Any) -> None:
        self.buffer = [(t, tuple(r), k, key) for t, r, k, key in state]


class FirstPerEvent(Limiter):
    __slots__ = ("counter",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.counter = 0

    def process(self, chunk: Chunk) -> None:
        out = []
        for item in _items(chunk):
            self.counter += 1
            if self.counter == 1:
                out.append(item)
            elif self.counter == self.period:
                self.counter = 0
        self.send(out)

    def snapshot(self) -> Any:
        return self.counter

    def restore(self, state: Any) -> None:
        self.counter = state


class FirstGroupByPerEvent(Limiter):
    __slots__ = ("counts",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.counts: dict[Any, int] = {}

    def process(self, chunk: Chunk) -> None:
        out = []
        for item in _items(chunk):
            key = item[3]
            n = self.counts.get(key)
            if n is None:
                self.counts[key] = 1
                out.append(item)
            elif n == self.period - 1:
                del self.counts[key]
            else:
                self.counts[key] = n + 1
        self.send(out)

    def snapshot(self) -> Any:
        return [[k, n] for k, n in self.counts.items()]

    def restore(self, state: Any) -> None:
        self.counts = {(tuple(k) if isinstance(k, list) else k): n for k, n in state}


class LastPerEvent(Limiter):
    __slots__ = ("counter",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.counter = 0

    def process(self, chunk: Chunk) -> None:
        out = []
        for item in _items(chunk):
            self.counter += 1
            if self.counter == self.period:
                out.append(item)
                self.counter = 0
        self.send(out)

    def snapshot(self) -> Any:
        return self.counter

    def restore(self, state: Any) -> None:
        self.counter = state


class LastGroupByPerEvent(Limiter):
    __slots__ = ("counter", "latest")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.counter = 0
        self.latest: dict[Any, Item] = {}

    def process(self, chunk: Chunk) -> None:
        out: list[Item] = []
        for item in _items(chunk):
            self.latest[item[3]] = item
            self.counter += 1
            if self.counter == self.period:
                out.extend(self.latest.values())
                self.latest = {}
                self.counter = 0
        self.send(out)

    def snapshot(self) -> Any:
        return {"counter": self.counter, "latest": [list(i) for i in self.latest.values()]}

    def restore(self, state: Any) -> None:
        self.counter = state["counter"]
        items = [(t, tuple(r), k, key) for t, r, k, key in state["latest"]]
        self.latest = {i[3]: i for i in items}


# ---- per time period ------------------------------------------------------------------


class _Timed(Limiter):
    __slots__ = ("scheduled", "timer")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.scheduled: int | None = None
        self.timer = Timer(self.scheduler, self.owner, self.on_timer)

    def start(self) -> None:
        if self.scheduled is None:
            self.scheduled = self.start_time() + self.period
            self.timer.at(self.scheduled)

    def on_timer(self, due: int, now: int) -> None:
        if self.scheduled is None or due < self.scheduled:
            return
        self.flush()
        self.scheduled += self.period
        self.timer.at(self.scheduled)

    def flush(self) -> None:
        raise NotImplementedError


class AllPerTime(_Timed):
    __slots__ = ("buffer",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.buffer: list[Item] = []

    def process(self, chunk: Chunk) -> None:
        self.buffer.extend(_items(chunk))

    def flush(self) -> None:
        out, self.buffer = self.buffer, []
        self.send(out)

    def snapshot(self) -> Any:
        return {"scheduled": self.scheduled, "buffer": [list(i) for i in self.buffer]}

    def restore(self, state: Any) -> None:
        self.scheduled = state["scheduled"]
        self.buffer = [(t, tuple(r), k, key) for t, r, k, key in state["buffer"]]


class LastPerTime(_Timed):
    __slots__ = ("last",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.last: Item | None = None

    def process(self, chunk: Chunk) -> None:
        items = _items(chunk)
        if items:
            self.last = items[-1]

    def flush(self) -> None:
        if self.last is not None:
            item, self.last = self.last, None
            self.send([item])

    def snapshot(self) -> Any:
        return {"scheduled": self.scheduled, "last": list(self.last) if self.last else None}

    def restore(self, state: Any) -> None:
        self.scheduled = state["scheduled"]
        last = state["last"]
        self.last = (last[0], tuple(last[1]), last[2], last[3]) if last else None


class LastGroupByPerTime(_Timed):
    __slots__ = ("latest",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.latest: dict[Any, Item] = {}

    def process(self, chunk: Chunk) -> None:
        for item in _items(chunk):
            self.latest[item[3]] = item

    def flush(self) -> None:
        out = list(self.latest.values())
        self.latest = {}
        self.send(out)

    def snapshot(self) -> Any:
        return {"scheduled": self.scheduled, "latest": [list(i) for i in self.latest.values()]}

    def restore(self, state: Any) -> None:
        self.scheduled = state["scheduled"]
        items = [(t, tuple(r), k, key) for t, r, k, key in state["latest"]]
        self.latest = {i[3]: i for i in items}


class FirstPerTime(Limiter):
    """No timer: the first event of a chunk passes if a period has gone by since the last."""

    __slots__ = ("output_time",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.output_time: int | None = None

    def process(self, chunk: Chunk) -> None:
        now = self.now()
        if self.output_time is None or self.output_time + self.period <= now:
            items = _items(chunk)
            if items:
                self.output_time = now
                self.send(items[:1])

    def snapshot(self) -> Any:
        return self.output_time

    def restore(self, state: Any) -> None:
        self.output_time = state


class FirstGroupByPerTime(Limiter):
    __slots__ = ("last_output",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.last_output: dict[Any, int] = {}

    def process(self, chunk: Chunk) -> None:
        now = self.now()
        out = []
        for item in _items(chunk):
            last = self.last_output.get(item[3])
            if last is None or last + self.period <= now:
                out.append(item)
                self.last_output[item[3]] = now
        self.send(out)

    def snapshot(self) -> Any:
        return [[k, t] for k, t in self.last_output.items()]

    def restore(self, state: Any) -> None:
        self.last_output = {(tuple(k) if isinstance(k, list) else k): t for k, t in state}


# ---- snapshots ------------------------------------------------------------------------


class _Snapshot(_Timed):
    """Emits the current view every period; an event arriving after the due time first
    flushes, then updates the view."""

    __slots__ = ()

    def process(self, chunk: Chunk) -> None:
        for item in _items(chunk):
            self.apply(item)

    def apply(self, item: Item) -> None:
        raise NotImplementedError

    def view(self) -> list[Item]:
        raise NotImplementedError

    def flush(self) -> None:
        self.send(self.view())


class PerSnapshot(_Snapshot):
    __slots__ = ("last",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.last: Item | None = None

    def apply(self, item: Item) -> None:
        if item[2] == CURRENT:
            self.last = item

    def view(self) -> list[Item]:
        return [self.last] if self.last is not None else []

    def snapshot(self) -> Any:
        return {"scheduled": self.scheduled, "last": list(self.last) if self.last else None}

    def restore(self, state: Any) -> None:
        self.scheduled = state["scheduled"]
        last = state["last"]
        self.last = (last[0], tuple(last[1]), last[2], last[3]) if last else None


class GroupByPerSnapshot(_Snapshot):
    __slots__ = ("latest",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.latest: dict[Any, Item] = {}

    def apply(self, item: Item) -> None:
        if item[2] == CURRENT:
            self.latest[item[3]] = item

    def view(self) -> list[Item]:
        return list(self.latest.values())

    def snapshot(self) -> Any:
        return {"scheduled": self.scheduled, "latest": [list(i) for i in self.latest.values()]}

    def restore(self, state: Any) -> None:
        self.scheduled = state["scheduled"]
        items = [(t, tuple(r), k, key) for t, r, k, key in state["latest"]]
        self.latest = {i[3]: i for i in items}


class WindowedPerSnapshot(_Snapshot):
    __slots__ = ("events",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
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

    def snapshot(self) -> Any:
        return {"scheduled": self.scheduled, "events": [list(i) for i in self.events]}

    def restore(self, state: Any) -> None:
        self.scheduled = state["scheduled"]
        self.events = [(t, tuple(r), k, key) for t, r, k, key in state["events"]]


class AllAggregationPerSnapshot(PerSnapshot):
    __slots__ = ()

    def apply(self, item: Item) -> None:
        self.last = item if item[2] == CURRENT else None


class AggregationWindowedPerSnapshot(_Snapshot):
    """Window rows with their aggregate columns replaced by the latest aggregate values."""

    __slots__ = ("events", "aggs", "positions")

    def __init__(self, *args: Any, positions: list[int]) -> None:
        super().__init__(*args)
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

    def snapshot(self) -> Any:
        return {
            "scheduled": self.scheduled,
            "events": [list(i) for i in self.events],
            "aggs": [[k, list(v.items())] for k, v in self.aggs.items()],
        }

    def restore(self, state: Any) -> None:
        self.scheduled = state["scheduled"]
        self.events = [(t, tuple(r), k, key) for t, r, k, key in state["events"]]
        self.aggs = {
            (tuple(k) if isinstance(k, list) else k): {p: v for p, v in items} for k, items in state["aggs"]
        }


class AggregationGroupByWindowedPerSnapshot(AggregationWindowedPerSnapshot):
    __slots__ = ()

    def view(self) -> list[Item]:
        seen: dict[Any, Item] = {}
        for e in self.events:
            if e[3] not in seen:
                seen[e[3]] = self._patched(e)
        return list(seen.values())


class AllAggregationGroupByWindowedPerSnapshot(_Snapshot):
    __slots__ = ("groups",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.groups: dict[Any, list[Any]] = {}

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

    def snapshot(self) -> Any:
        return {"scheduled": self.scheduled, "groups": [[c, list(i)] for c, i in self.groups.values()]}

    def restore(self, state: Any) -> None:
        self.scheduled = state["scheduled"]
        self.groups = {}
        for count, (t, r, k, key) in state["groups"]:
            self.groups[key] = [count, (t, tuple(r), k, key)]
