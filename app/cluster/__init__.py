"""This node as a member of a cluster: the threads, sockets and registry calls around `ha/`.

`member` (`Cluster`: the role of each redundant plan, the lease requests, the loops),
`heartbeats` (membership: heartbeats out and in), `peers` (the authenticated channel between
members; `ha.messages` encoded and checked), `replication` (one ordered input per redundant
plan: the notifier's `Sequencer`, a standby's `Follower`), `gate` (a redundant plan's outputs
held until this node may deliver them), `fence` (what every notifier write passes), `relays`
(bundles a standby relays to the notifier), `settings`, `threads` (the background loops),
`errors`. The decisions are `ha/`'s; this package runs them with real time and I/O.

Imports nothing of the node, the HTTP tier or the console.
"""

from __future__ import annotations

from app.cluster.member import Cluster
from app.cluster.settings import ClusterSettings

__all__ = ["Cluster", "ClusterSettings"]
