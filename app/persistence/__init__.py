"""Persistence mode: what a node keeps locally so a plan's outputs survive a crash.

Owns the local input log (`input_log`: per-plan, append-only, positioned records of the events
a receiver acknowledged and the clock ticks), its record codec (`records`), its on-disk segments
(`segments`) and its errors (`errors`). It knows nothing of the node, the engine's runtime or
the registry: the node appends before acknowledging and replays after a snapshot's position.
Imports only `engine.errors` and `app.private_files`.
"""
