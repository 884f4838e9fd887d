"""Cepheus engine: SiddhiQL compiled to Python, run on chunks of events.

```python
import engine
rt = engine.compile(plan_text)              # -> engine.Runtime; raises engine.QueryError
rt.subscribe("AlertStream", fn)             # fn(events: list[engine.Event])
rt.send("TempStream", rows, timestamps=ts)  # rows: list of tuples; ts: list of ms, or one int
rt.advance_to(60_000)                       # playback clock: fire every timer due
cap = rt.capture(); blob = cap.encode()      # copy under the lock; encode outside it
rt2 = engine.compile(edited_text); report = rt2.restore(blob, partial=True)
report.kept, report.fresh, report.unfit      # parts by label: "query 'q2'", "table 'T'"
rows = rt.query("from T on T.x > 5 select x")  # on-demand query: list[engine.Event]
rt.shutdown()
```

The engine imports nothing of Cepheus' other packages, does no I/O and reads time only
through its clock object. The one place that reads the system's wall clock is
`system_time_ms` below, used when a caller asks for `clock="wall"` without a `wall_time`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from engine.compiler.parse_on_demand import parse_on_demand
from engine.compiler.parser import parse as _parse
from engine.errors import (
    CEPError,
    Diagnostic,
    ProcessingError,
    QueryError,
    QuerySyntaxError,
    QueryValidationError,
    StateError,
)
from engine.events import Chunk, Event
from engine.plan.planner import build_runtime
from engine.plan.planner import validate as _validate
from engine.query.queries import App, OnDemandQuery
from engine.runtime.app import Runtime
from engine.runtime.capture import Capture, RestoreReport
from engine.runtime.clock import PlaybackClock, WallClock
from engine.runtime.on_demand import PreparedQuery
from engine.runtime.state import STATE_FORMAT
from engine.types import AttrType

__all__ = [
    "App",
    "STATE_FORMAT",
    "AttrType",
    "CEPError",
    "Capture",
    "Chunk",
    "Diagnostic",
    "Event",
    "OnDemandQuery",
    "PreparedQuery",
    "ProcessingError",
    "QueryError",
    "QuerySyntaxError",
    "QueryValidationError",
    "RestoreReport",
    "Runtime",
    "StateError",
    "compile",
    "parse",
    "parse_query",
    "validate",
]


def parse(plan_text: str) -> App:
    """The syntax tree of a plan (every node with its span); raises QuerySyntaxError."""
    return _parse(plan_text)


def parse_query(text: str) -> OnDemandQuery:
    """The syntax tree of an on-demand query (`.changes`: whether it changes a table); raises
    QuerySyntaxError. `Runtime.query` compiles and runs one."""
    return parse_on_demand(text)


def validate(plan_text: str) -> App:
    """Parse and check a plan without running it; raises QueryError with every problem."""
    app = parse(plan_text)
    _validate(app, plan_text)
    return app


def compile(  # noqa: A001 - the documented API name
    plan_text: str,
    clock: str = "playback",
    *,
    start_time: int | None = None,
    wall_time: Callable[[], int] | None = None,
    fuse_partitions: bool = True,
) -> Runtime:
    """Compile a plan into a runtime.

    `clock="playback"` (default): time moves with event timestamps and `advance_to`; the
    plan starts at `start_time`, or at the first timestamp it sees.
    `clock="wall"`: time is the wall clock (`wall_time()` in ms if given); call
    `Runtime.tick()` periodically to fire timers.
    `fuse_partitions=False` runs every partition as one query instance per key, even where
    one keyed operator gives the same results faster (a partition by one value key of one
    query `every e1=S -> e2=S`, `every e1=S, e2=S`, or aggregates over S with a length,
    externalTime or externalTimeBatch window or none: see engine/plan/fusion.py); a
    snapshot restores only into the same choice.
    """
    if clock not in ("playback", "wall"):
        msg = f"clock must be 'playback' or 'wall', not {clock!r}"
        raise ValueError(msg)
    chosen = WallClock(wall_time or system_time_ms) if clock == "wall" else PlaybackClock()
    return build_runtime(parse(plan_text), plan_text, chosen, start_time, fuse_partitions)


def system_time_ms() -> int:
    """The system's wall clock in ms: the time source of `compile(..., clock="wall")` when the
    caller gives no `wall_time`, and the only place the engine reads the wall clock."""
    return time.time_ns() // 1_000_000
