"""Output rate limiters (`output [all|first|last] every N events | T`, `output snapshot
every T`), each a stage between the selector and the output, with Siddhi's semantics.

A query's `output` clause becomes an immutable spec (`EventLimiterSpec`,
`TimeLimiterSpec`, `SnapshotLimiterSpec`); `spec.build(env)` gives the running limiter,
with `snapshot()`/`restore()`. Time-based limiters start their period when the runtime
starts and fire on the clock; everything released while one chunk is processed leaves as
one chunk.
"""

from __future__ import annotations

from engine.runtime.ratelimit.base import Limiter, LimiterEnv
from engine.runtime.ratelimit.per_event import EventLimiterSpec
from engine.runtime.ratelimit.per_time import TimeLimiterSpec
from engine.runtime.ratelimit.snapshots import SnapshotLimiterSpec

LimiterSpec = EventLimiterSpec | TimeLimiterSpec | SnapshotLimiterSpec

__all__ = [
    "EventLimiterSpec",
    "Limiter",
    "LimiterEnv",
    "LimiterSpec",
    "SnapshotLimiterSpec",
    "TimeLimiterSpec",
]
