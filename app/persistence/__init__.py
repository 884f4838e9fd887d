"""Persistence mode: what a node keeps so a plan's outputs survive a crash.

The local input log (`input_log`: per-plan, append-only, positioned records of the events a
receiver acknowledged and the clock ticks), one plan's files (`plan_log`), the record codec
(`records`), the segment framing (`segments`), plan names as directory names (`plan_dirs`),
which plans' logs the disk refuses now (`disk_faults`);
on top of them, a plan's journal (`journal`: its input logged before it is processed, its
logged clock, and for a redundant plan the sequencing and following that `app.cluster`
drives) and the snapshot keeper (`snapshot_keeper`: snapshots taken to and restored from the
registry's snapshot store). Errors in `errors`.

The log and codec know nothing of the node, the engine's runtime or the registry; the
journal drives an engine `Runtime`, the keeper reads plan entries of `app.registry`. Nothing
here imports the node, the cluster, the HTTP tier, the console or the Spark side (import
contracts in pyproject.toml).
"""
