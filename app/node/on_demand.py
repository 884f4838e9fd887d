"""On-demand queries on the plans deployed on this node (the console's `plans/<name>/query`).

A read runs on the plan's runtime under its lock. A change (`delete`, `update`, `update or
insert into`, `insert into`) is refused on a plan with an input log (persistence mode with
journals, or redundant mode): the log is what a recovering process replays and what the
other members process, so a change made beside it would be lost on recovery or make the
members diverge. Tables of such plans change through events.
"""

from __future__ import annotations

from typing import Any

from app.console.errors import OnDemandRefused
from app.node.plans import PlanManager
from engine.errors import CEPError

ATTEMPTS = 3  # a redeploy may shut the runtime down between compiling the query and running it


class OnDemandQueries:
    def __init__(self, plans: PlanManager) -> None:
        self._plans = plans

    def __call__(self, name: str, text: str) -> tuple[list[str], list[list[Any]]]:
        for attempt in range(ATTEMPTS):
            deployment = self._plans.deployment(name)
            if deployment is None:
                msg = f"plan {name!r} is not deployed on this node"
                raise LookupError(msg)
            plan, runtime = deployment
            prepared = runtime.prepare_query(text)
            if prepared.changes:
                self._check_change(name, plan.distributed_mode)
            try:
                events = runtime.run_query(prepared)
            except CEPError:
                if attempt + 1 < ATTEMPTS and self._plans.runtime(name) is not runtime:
                    continue  # redeployed meanwhile: compile against the new runtime
                raise
            return list(prepared.columns), [list(e.data) for e in events]
        raise AssertionError  # pragma: no cover - the loop returns or raises

    def _check_change(self, name: str, distributed_mode: str) -> None:
        if self._plans.journal(name) is not None or distributed_mode == "redundant":
            msg = (
                f"on-demand changes are not logged: plan {name!r} runs through an input log "
                "(persistence or redundant mode), which recovery replays and every member "
                "processes; a change beside it would be lost or make members diverge. "
                "Change its tables with events (e.g. a stream into 'delete'/'update' queries)"
            )
            raise OnDemandRefused(msg)
