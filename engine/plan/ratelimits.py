"""Pick the rate limiter class for a query's `output ...` clause, as Siddhi does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.plan.expressions import ExpressionCompiler, PlanError
from engine.query.queries import JoinInput, Query, SingleInput
from engine.runtime import ratelimit as rl

if TYPE_CHECKING:
    from engine.plan.context import Env
    from engine.plan.selector import SelectorPlan


@dataclass
class LimiterPlan:
    cls: type[rl.Limiter]
    period: int
    positions: list[int] | None = None

    def build(self, env: Env, owner: str) -> rl.Limiter:
        args: tuple[Any, ...] = (env.scheduler, owner, env.now, env.start_time, self.period)
        if self.positions is not None:
            return self.cls(*args, positions=self.positions)  # type: ignore[call-arg]
        return self.cls(*args)


def plan_rate_limiter(query: Query, sel: SelectorPlan, comp: ExpressionCompiler) -> LimiterPlan | None:
    rate = query.output_rate
    if rate is None:
        return None
    group_by = sel.group_by
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
        n_aggs = len(sel.agg_positions)
        n_out = len(sel.names)
        if windowed:
            if group_by:
                if n_aggs == n_out:
                    return LimiterPlan(rl.AllAggregationGroupByWindowedPerSnapshot, rate.time_ms)
                if n_aggs:
                    return LimiterPlan(
                        rl.AggregationGroupByWindowedPerSnapshot, rate.time_ms, sel.agg_positions
                    )
                return LimiterPlan(rl.WindowedPerSnapshot, rate.time_ms)
            if n_aggs == n_out:
                return LimiterPlan(rl.AllAggregationPerSnapshot, rate.time_ms)
            if n_aggs:
                return LimiterPlan(rl.AggregationWindowedPerSnapshot, rate.time_ms, sel.agg_positions)
            return LimiterPlan(rl.WindowedPerSnapshot, rate.time_ms)
        return LimiterPlan(rl.GroupByPerSnapshot if group_by else rl.PerSnapshot, rate.time_ms)
    if rate.events is not None:
        table: dict[str, type[rl.Limiter]] = {
            "all": rl.AllPerEvent,
            "first": rl.FirstGroupByPerEvent if group_by else rl.FirstPerEvent,
            "last": rl.LastGroupByPerEvent if group_by else rl.LastPerEvent,
        }
        return LimiterPlan(table[rate.kind], rate.events)
    assert rate.time_ms is not None
    timed: dict[str, type[rl.Limiter]] = {
        "all": rl.AllPerTime,
        "first": rl.FirstGroupByPerTime if group_by else rl.FirstPerTime,
        "last": rl.LastGroupByPerTime if group_by else rl.LastPerTime,
    }
    return LimiterPlan(timed[rate.kind], rate.time_ms)
