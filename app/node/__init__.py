"""The Cepheus node: what `cepheus server` runs.

The composition root (`node`: lifecycle, wiring everything below) and the plan path, each
module with one job: `catalog` (registered streams, cached), `ingress` (events into the plans
importing their stream), `plans` (deploy/redeploy on registry change, the timer clock),
`outputs` (formatters and adapters, and the routes between them), `receiver` (the Thrift
handler; the HTTP JSON receiver is `adapters.http`, built by `node`), `on_demand` and
`snapshot_requests` (operations on a deployed plan), `tracer`, `latency`, `heap`, `errors`.
The HTTP tier is `app.http`, credentials `app.auth`, the cluster `app.cluster`, the input log,
journal and snapshots `app.persistence`, the Spark driver `app.spark`.
"""

from __future__ import annotations

from app.node.node import Node

__all__ = ["Node"]
