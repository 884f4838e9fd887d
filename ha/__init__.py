"""High availability: the pure logic of redundant plans, and the ports (`ports`) that `app/` implements.

`membership` (who is alive, from heartbeats), `placement` (the preferred notifier per plan),
`lease` (when a node may act on its lease), `lease_table` (the lease store's rules, the
reference the registry's SQL store is tested against), `roles` (a node's role per redundant
plan: its role rounds, lease requests and transitions), `seat` (a member's term per plan:
the renewals an acknowledgement waits for, when it reads the lease, what it does with
written outputs), `acks` (when a notifier may acknowledge a bundle), `subscription` (resume
or snapshot for a standby that subscribes), `gate` (a redundant plan's outputs, held until
this node may deliver them), `resends`
(bundles a member gets twice), `spark_leadership` (which node drives a shared spark plan),
`messages` (what members send each other, as values), `ports` (the lease and snapshot
stores, as Protocols) and `errors`. The member process that runs them with real time,
sockets and the registry is `app/cluster/`; the HA simulator (`tests/sim/`) runs them with
simulated time, network, registry and disks. docs/architecture.md and
docs/high-availability.md describe both.

Sees a snapshot as opaque bytes. Imports only `engine.events` and `engine.errors`; no I/O, no threads.
"""
