"""Turn a query's `output ...` clause into a rate limiter spec, as Siddhi does."""

from __future__ import annotations

from typing import Literal, cast

from engine.plan.expressions import ExpressionCompiler, PlanError
from engine.plan.selector import SelectorPlan
from engine.query.queries import JoinInput, Query, SingleInput
from engine.runtime.ratelimit import EventLimiterSpec, LimiterSpec, SnapshotLimiterSpec, TimeLimiterSpec


def plan_rate_limiter(query: Query, sel: SelectorPlan, comp: ExpressionCompiler) -> LimiterSpec | None:
    rate = query.output_rate
    if rate is None:
        return None
    group_by = bool(sel.group_by)
    if rate.kind == "snapshot":
        if query.output.event_type not in ("all", "default"):
            comp.error(
                "a query with 'output snapshot' must insert all events",
                rate.span,
                hint="write 'insert all events into ...'",
            )
            raise PlanError
        assert rate.time_ms is not None
        windowed = isinstance(query.input, JoinInput) or (
            isinstance(query.input, SingleInput) and query.input.window is not None
        )
        return SnapshotLimiterSpec(rate.time_ms, windowed, group_by, len(sel.names), tuple(sel.agg_positions))
    which = cast(Literal["all", "first", "last"], rate.kind)
    if rate.events is not None:
        return EventLimiterSpec(which, rate.events, group_by)
    assert rate.time_ms is not None
    return TimeLimiterSpec(which, rate.time_ms, group_by)
