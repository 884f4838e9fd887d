"""Named windows: `define window W (...) length(10) [output all|current|expired events]`.

Queries insert into W; W's window emits; queries that read `from W` (or join it) get
the events W publishes, with their current/expired type kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.events import CURRENT, EXPIRED, RESET, Chunk
from engine.plan.context import Env, PlanContext, StreamInfo
from engine.plan.expressions import PlanError
from engine.plan.scope import Scope, Source
from engine.plan.windows import WindowPlan, plan_window
from engine.query.definitions import WindowDefinition
from engine.runtime.windows.base import Window, WindowContext


class NamedWindow:
    def __init__(self, name: str, info: StreamInfo, plan: WindowPlan, output: str) -> None:
        self.name = name
        self.info = info
        self.plan = plan
        self.output = output  # current | expired | all
        self.window: Window | None = None
        self.subscribers: list[Callable[[Chunk], None]] = []

    def bind(self, env: Env) -> None:
        ctx = WindowContext(
            env.scheduler,
            f"window/{self.name}",
            env.now,
            self.output != "current",
            self.name,
            self.info.types,
            env.start_time,
            for_join=True,
        )
        self.window = self.plan.build(ctx)
        self.window.emit = self._publish

    def subscribe(self, fn: Callable[[Chunk], None]) -> None:
        self.subscribers.append(fn)

    def receive(self, chunk: Chunk) -> None:
        assert self.window is not None
        self.window.process(chunk.current_only() if chunk.kinds is not None else chunk)

    def _publish(self, chunk: Chunk) -> None:
        kinds = chunk.kinds or [CURRENT] * len(chunk.rows)
        want = {"current": (CURRENT,), "expired": (EXPIRED,), "all": (CURRENT, EXPIRED)}[self.output]
        keep = [k in want and k != RESET for k in kinds]
        if not any(keep):
            return
        if all(keep):
            out = chunk
        else:
            ts = [t for t, k in zip(chunk.ts, keep, strict=True) if k]
            rows = [r for r, k in zip(chunk.rows, keep, strict=True) if k]
            ks = [x for x, k in zip(kinds, keep, strict=True) if k]
            out = Chunk(ts, rows, None if EXPIRED not in ks else ks)
        for fn in self.subscribers:
            fn(out)

    def rows(self) -> list[tuple[Any, ...]]:
        assert self.window is not None
        return [r for _, r in self.window.contents()]

    def start(self) -> None:
        assert self.window is not None
        self.window.start()

    def snapshot(self) -> Any:
        assert self.window is not None
        return self.window.snapshot()

    def restore(self, state: Any) -> None:
        assert self.window is not None
        self.window.restore(state)


def plan_named_window(ctx: PlanContext, d: WindowDefinition, info: StreamInfo) -> NamedWindow | None:
    if d.window is None:
        ctx.errors.add(f"window '{d.name}' needs a window function such as length(10)", d.name_span)
        return None
    comp = ctx.compiler()
    scope = Scope([Source((d.name,), info.attributes, "r", stream=d.name)], event_ts="_et")
    try:
        plan = plan_window(d.window, scope, comp)
    except PlanError:
        return None
    return NamedWindow(d.name, info, plan, d.output_event_type if d.output_event_type != "default" else "all")
