"""What the console needs of the node it runs in, as plain callables (`ConsoleServices`).

The node fills it in; tests may hand a registry and their own callables. Nothing here starts or
stops anything: `restart` and `shutdown` only ask the node's main thread to do it, after the
reply has gone out (a server cannot join the thread serving its own request).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from flask import Blueprint

from app.auth import Credentials
from app.registry import Registry

Rows = list[tuple[Any, ...]]
Answer = tuple[int, Any]  # an HTTP status and its JSON body


class SnapshotOperations(Protocol):
    """A plan's snapshots on the node the console runs in (`app.node.snapshot_requests.SnapshotRequests`)."""

    def list(self, name: str) -> Answer: ...

    def take(self, name: str) -> Answer: ...

    def restore(self, name: str, snapshot_id: int) -> Answer: ...


@dataclass
class ConsoleServices:
    registry: Registry
    credentials: Credentials
    node_id: str
    health: Callable[[], dict[str, Any]]  # the node's report (`Node.health`)
    # the simulator: a JSON body of events for a stream id → how many were accepted (raises
    # `adapters.http.events.EventFormatError` naming the event and attribute); None: no receiver
    send_events: Callable[[str, Any], int] | None = None
    # the tracer: the last events of a stream id, newest last
    trace: Callable[[str, int], list[dict[str, Any]]] | None = None
    restart: Callable[[], None] | None = None  # graceful: final snapshots, drain, then re-exec
    shutdown: Callable[[], None] | None = None  # graceful, then exit
    max_json_depth: int = 64
    # an on-demand query on a plan deployed here: (plan name, query text) → (columns, rows);
    # raises LookupError (no such plan here), engine.QueryError (a bad query), and
    # `app.console.errors.OnDemandRefused` (a change the plan cannot take, e.g. one with an input log)
    query: Callable[[str, str], tuple[list[str], list[list[Any]]]] | None = None
    # a plan's snapshots: list, take now, restore one (`app.node.snapshot_requests.SnapshotRequests`)
    snapshots: SnapshotOperations | None = None
    # the plans this node drives on Spark: plan → state, application, inflow, outflow, queries
    # (`PlanManager.spark_status`); None: [spark] is off here
    spark: Callable[[], dict[str, dict[str, Any]]] | None = None
    blueprints: Sequence[Blueprint] = field(
        default_factory=tuple
    )  # the node's own endpoints (events, snapshots)
