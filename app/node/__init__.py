"""The Cepheus node: what `cepheus server` runs.

Modules, each with one job: `catalog` (registered streams, cached), `ingress` (events into
the plans importing their stream), `plans` (deploy/redeploy on registry change, the timer
clock), `outputs` (formatters and adapters, and the routes between them), `receiver` (the
Thrift handler; the HTTP JSON receiver is `adapters.http`, built by `node`), `auth`
(credential checks), `web` (the Flask app on the console port), `node` (lifecycle).
"""

from __future__ import annotations

from app.node.node import Node

__all__ = ["Node"]
