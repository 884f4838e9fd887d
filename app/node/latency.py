"""`LatencyHistogram`: how long bundles took, in fixed buckets, for the operations metrics.

One observation is a `bisect` and two additions, cheap enough for once per bundle and plan.
A histogram takes no lock of its own: its owner observes and copies it under a lock it already
holds (the ingress's statistics lock). Counts only grow, as Prometheus expects of a histogram.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

# from 100 µs (a small bundle through a filter) to 10 s (a stalled input log)
BOUNDS: tuple[float, ...] = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)


@dataclass(frozen=True)
class Latency:
    """A copy of a histogram: `counts[i]` observations above `bounds[i - 1]` and at most
    `bounds[i]`; the last count, one more than there are bounds, those above every bound."""

    bounds: tuple[float, ...]
    counts: tuple[int, ...]
    seconds: float  # the sum of every observation


class LatencyHistogram:
    """Not thread-safe: callers observe and copy under a lock of their own."""

    __slots__ = ("_counts", "_seconds")

    def __init__(self) -> None:
        self._counts = [0] * (len(BOUNDS) + 1)
        self._seconds = 0.0

    def observe(self, seconds: float) -> None:
        self._counts[bisect_left(BOUNDS, seconds)] += 1
        self._seconds += seconds

    def copy(self) -> Latency:
        return Latency(BOUNDS, tuple(self._counts), self._seconds)
