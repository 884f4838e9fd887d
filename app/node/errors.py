"""The node's errors: what stops `cepheus server` from starting, with what to change, and what an
operation on a running node refuses."""

from __future__ import annotations

from engine.errors import CEPError


class NodeError(CEPError):
    """The node cannot start or run as configured; the message says what to change."""


class UnknownPlan(CEPError):
    """No plan of that name is deployed on this node."""

    def __init__(self, name: str) -> None:
        self.name = name
        msg = f"plan {name!r} is not deployed on this node (see /health/details for those that are)"
        super().__init__(msg)


class OnDemandRefused(CEPError):
    """An on-demand query the plan cannot take here (a change of a plan run through an input
    log, whose members or recovery would not see it)."""
