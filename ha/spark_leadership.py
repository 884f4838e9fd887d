"""Which node drives a spark plan when the nodes share `[spark] dir` (`[spark] shared = true`).

Every node with Spark on hands the events it receives to the plan's shared hand-off; one of
them, the holder of the plan's registry lease (`spark:<plan>` in `cep_leases`), runs the
queries. `Leadership` turns the lease store's answers into "start" and "stop": it wraps
`ha.lease.Holder`, so a node that cannot renew (the registry unreachable) stops driving on its
own clock, `margin_ms` before the lease can expire in the registry and be granted to another
node. A node whose Spark failed resigns: it asks for the lease no more until the plan is
deployed again, and another node drives.

Pure logic: time comes in as arguments.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from ha.lease import Holder, Timing
from ha.ports import Lease

PREFIX = "spark:"
KEY_MAX = 200  # cep_leases.plan: VARCHAR(200), as long as a plan's name

Step = Literal["start", "stop"]


def lease_key(plan: str) -> str:
    """The plan's key in the lease table: `spark:<plan>` (plan names have no colon, so it
    never meets a redundant plan's notifier lease); a name too long for the column ends
    with a digest instead."""
    key = PREFIX + plan
    if len(key) <= KEY_MAX:
        return key
    digest = hashlib.sha256(plan.encode()).hexdigest()[:16]
    return f"{PREFIX}{plan[: KEY_MAX - len(PREFIX) - 17]}~{digest}"


class Leadership:
    """One plan's election as this node sees it."""

    def __init__(self, node: str, timing: Timing) -> None:
        self.node = node
        self.timing = timing
        self._holder = Holder(node, timing)
        self.driving = False
        self.driver: str | None = None  # who holds the lease, by the last answer (None: nobody)
        self.error: str | None = None  # why the last request failed
        self.resigned = False

    def due(self, now: float) -> bool:
        """Whether to ask the lease store now (never once resigned)."""
        return not self.resigned and self._holder.due(now)

    def answered(self, sent: float, lease: Lease | None, now: float, error: str | None = None) -> Step | None:
        """The store's answer to a request sent at `sent` (None: it failed, `error` says why)."""
        self._holder.asked(sent, lease)
        self.error = error if lease is None else None
        if lease is not None:
            self.driver = lease.holder if lease.ttl_ms > 0 else None
        return self.check(now)

    def check(self, now: float) -> Step | None:
        """ "start" when this node has just become the driver, "stop" when it must stop now
        (its deadline passed, or another node took the lease over)."""
        holds = self.holds(now)
        if holds and not self.driving:
            self.driving = True
            return "start"
        if not holds and self.driving:
            self.driving = False
            return "stop"
        return None

    def holds(self, now: float) -> bool:
        """Whether this node may drive the plan at `now`."""
        return not self.resigned and self._holder.holds(now)

    def resign(self) -> Step | None:
        """Stop driving and asking (this node cannot run the plan, or it stops); "stop" if it drove."""
        self.resigned = True
        self._holder.step_down()
        if self.driver == self.node:
            self.driver = None
        if self.driving:
            self.driving = False
            return "stop"
        return None

    def rejoin(self) -> None:
        """Ask for the lease again (the plan was deployed again)."""
        self.resigned = False

    def describe(self, directory: str) -> str:
        """What a node that does not drive the plan tells its operator."""
        if self.resigned:
            return "this node does not drive the plan"
        if self.error is not None and not self.driving:
            return (
                f"cannot ask the registry who drives the plan ({self.error}); events are still handed "
                f"off to {directory}"
            )
        if self.driver is None or self.driver == self.node:
            return (
                f"waiting for the plan's lease (a driver that stopped is replaced within "
                f"{self.timing.ttl_ms} ms); events are handed off to {directory}"
            )
        return f"driven by node {self.driver}; this node hands its events off to {directory}"
