"""High availability: the pure logic of redundant plans, and the ports (`ports`) that `app/` implements.

`membership` (who is alive, from heartbeats), `placement` (the preferred notifier per plan),
`lease` (when a node may act on its lease), `roles` (a node's role per redundant plan and its
next step), `resends` (bundles a member gets twice), `spark_leadership` (which node drives a
shared spark plan), `messages` (what members send each other, as values), `ports` (the lease
and snapshot stores, as Protocols) and `errors`. The member process that runs them with real
time, sockets and the registry is `app/cluster/`; docs/architecture.md and
docs/high-availability.md describe both.

Sees a snapshot as opaque bytes. Imports only `engine.events` and `engine.errors`; no I/O, no threads.
"""
