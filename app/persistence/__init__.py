"""Persistence mode: what a node keeps locally so a plan's outputs survive a crash.

Owns the local input log (`input_log`: per-plan, append-only, positioned records of the events
a receiver acknowledged and the clock ticks), one plan's files (`plan_log`), the record codec
(`records`), the segment framing (`segments`), plan names as directory names (`plan_dirs`) and
its errors (`errors`). It knows nothing of the node, the engine's runtime or
the registry: the node appends before acknowledging and replays after a snapshot's position.
Imports only `engine.errors` and `app.private_files`.
"""
