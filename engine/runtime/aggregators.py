"""Aggregator states that need more than a number: min, max, stdDev, distinctCount,
unionSet. Each has add/remove/value and a plain-value snapshot."""

from __future__ import annotations

import math
from collections import deque
from typing import Any


class MinMax:
    """Siddhi's monotonic deque: exact for first-in-first-out windows."""

    __slots__ = ("q", "is_max")

    def __init__(self, is_max: bool) -> None:
        self.q: deque[Any] = deque()
        self.is_max = is_max

    def add(self, v: Any) -> None:
        # A null leaves the state as it is (and the value unchanged).
        if v is None:
            return
        q = self.q
        if self.is_max:
            while q and q[-1] < v:
                q.pop()
        else:
            while q and q[-1] > v:
                q.pop()
        q.append(v)

    def remove(self, v: Any) -> None:
        if v is None:
            return
        try:
            self.q.remove(v)
        except ValueError:
            if v != v:  # NaN equals nothing, itself included; Java's Double.equals finds it
                for i, x in enumerate(self.q):
                    if x != x:
                        del self.q[i]
                        return

    def value(self) -> Any:
        return self.q[0] if self.q else None

    def snapshot(self) -> Any:
        return list(self.q)

    def restore(self, state: Any) -> None:
        self.q = deque(state)


class Max(MinMax):
    def __init__(self) -> None:
        super().__init__(True)


class Min(MinMax):
    def __init__(self) -> None:
        super().__init__(False)


class StdDev:
    """Population standard deviation, with Siddhi's running-sum update formulas."""

    __slots__ = ("n", "total", "mean", "m2")

    def __init__(self) -> None:
        self.n = 0
        self.total = 0.0
        self.mean = 0.0
        self.m2 = 0.0

    def add(self, v: Any) -> None:
        if v is None:
            return
        self.n += 1
        if self.n == 1:
            self.total = self.mean = float(v)
            self.m2 = 0.0
            return
        old = self.mean
        self.total += v
        self.mean = self.total / self.n
        self.m2 += (v - old) * (v - self.mean)

    def remove(self, v: Any) -> None:
        if v is None:
            return
        self.n -= 1
        if self.n <= 0:
            self.n, self.total, self.mean, self.m2 = 0, 0.0, 0.0, 0.0
            return
        old = self.mean
        self.total -= v
        self.mean = self.total / self.n
        self.m2 -= (v - old) * (v - self.mean)

    def value(self) -> Any:
        if self.n == 0:
            return None
        if self.n == 1:
            return 0.0
        return math.sqrt(self.m2 / self.n) if self.m2 > 0 else 0.0

    def snapshot(self) -> Any:
        return [self.n, self.total, self.mean, self.m2]

    def restore(self, state: Any) -> None:
        self.n, self.total, self.mean, self.m2 = state


class DistinctCount:
    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: dict[Any, int] = {}

    def add(self, v: Any) -> None:
        self.counts[v] = self.counts.get(v, 0) + 1

    def remove(self, v: Any) -> None:
        n = self.counts.get(v, 0) - 1
        if n <= 0:
            self.counts.pop(v, None)
        else:
            self.counts[v] = n

    def value(self) -> Any:
        return len(self.counts)

    def snapshot(self) -> Any:
        return [[k, n] for k, n in self.counts.items()]

    def restore(self, state: Any) -> None:
        self.counts = {k: n for k, n in state}


class UnionSet:
    __slots__ = ("counts",)

    def __init__(self) -> None:
        self.counts: dict[Any, int] = {}

    def add(self, v: Any) -> None:
        if v is None:
            return
        for item in v:
            self.counts[item] = self.counts.get(item, 0) + 1

    def remove(self, v: Any) -> None:
        if v is None:
            return
        for item in v:
            n = self.counts.get(item, 0) - 1
            if n <= 0:
                self.counts.pop(item, None)
            else:
                self.counts[item] = n

    def value(self) -> Any:
        return set(self.counts)

    def snapshot(self) -> Any:
        return [[k, n] for k, n in self.counts.items()]

    def restore(self, state: Any) -> None:
        self.counts = {k: n for k, n in state}


OBJECT_AGGREGATORS: dict[str, type] = {
    "_agg_max": Max,
    "_agg_min": Min,
    "_agg_stddev": StdDev,
    "_agg_distinct": DistinctCount,
    "_agg_union": UnionSet,
}


def snapshot_slot(value: Any) -> Any:
    if hasattr(value, "snapshot"):
        return {"__agg__": type(value).__name__, "s": value.snapshot()}
    return value


_BY_NAME = {cls.__name__: cls for cls in OBJECT_AGGREGATORS.values()}


def restore_slot(value: Any) -> Any:
    if isinstance(value, dict) and "__agg__" in value:
        obj = _BY_NAME[value["__agg__"]]()
        obj.restore(value["s"])
        return obj
    return value
