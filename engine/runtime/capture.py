"""A runtime's state taken under its lock (`Capture`), encoded outside it, and the match
of a decoded snapshot's parts against a plan's parts on restore (`RestoreReport`).

The blob (engine/runtime/state.py codec) holds the plan's clock and one entry per part:
its spec's fingerprints, its state and its timers, owner ids relative to the part; and the
`annex`, values the host keeps with the state (the engine only carries them).
Imports nothing of the planner: parts come built from engine/plan/planner.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.errors import StateError
from engine.runtime import state as state_codec
from engine.runtime.parts import OwnerIndex, Part, Timer


@dataclass
class RestoreReport:
    """What a restore did, by part label (`query 'q2'`, `table 'T'`): `kept` restored,
    `fresh` started empty (new or changed), `unfit` parts of the snapshot left out, why."""

    kept: list[str] = field(default_factory=list)
    fresh: list[str] = field(default_factory=list)
    unfit: list[tuple[str, str]] = field(default_factory=list)
    annex: dict[str, Any] = field(default_factory=dict)  # the capture's annex, as it was


class Capture:
    """A consistent copy of a runtime's state. It shares only immutable values (rows are
    tuples) with the live runtime, so `encode()` may run outside the runtime's lock, while
    events flow, and still gives the state at the moment of the capture."""

    def __init__(
        self,
        plan: str,
        clock: dict[str, Any],
        states: list[tuple[Part, Any]],
        timers: list[Timer],
        owners: OwnerIndex,
    ) -> None:
        self.plan = plan
        self.clock = clock
        self.states = states
        self.timers = timers
        self._owners = owners
        self.annex: dict[str, Any] = {}

    def encode(self) -> bytes:
        """The snapshot blob: versioned, checksummed, no pickle."""
        parts: dict[str, dict[str, Any]] = {}
        for part, state in self.states:
            s = part.spec
            parts[s.key] = {
                "label": s.label,
                "text": s.text,
                "inputs": s.inputs,
                "output": s.output,
                "shape": s.shape,
                "state": state,
                "timers": [],
            }
        unowned: list[list[Any]] = []
        for rank, (due, _, owner) in enumerate(sorted(self.timers)):
            owner_part = self._owners.part_of(owner)
            if owner_part is None:
                unowned.append([due, rank, owner])
            else:
                rel = owner_part.owners.relative(owner)
                parts[owner_part.spec.key]["timers"].append([due, rank, rel])
        tree = {**self.clock, "parts": parts, "timers": unowned}
        if self.annex:
            tree["annex"] = self.annex
        return state_codec.encode(tree, self.plan)


_ENTRY = ("label", "text", "inputs", "output", "shape", "state", "timers")


def read(blob: bytes, plan: str | None) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, Any]]:
    """The clock (with the timers no part owns), the parts and the annex of a blob; StateError
    if it is not a whole snapshot (or, given `plan`, one of another plan)."""
    tree = state_codec.decode(blob, plan)
    whole = (
        isinstance(tree, dict)
        and all(k in tree for k in ("now", "started", "start", "parts", "timers"))
        and isinstance(tree["parts"], dict)
        and all(isinstance(e, dict) and all(k in e for k in _ENTRY) for e in tree["parts"].values())
    )
    if not whole:
        msg = "snapshot does not hold a plan's state (a part or the clock is missing)"
        raise StateError(msg)
    annex = tree.get("annex", {})
    if not isinstance(annex, dict):
        msg = "snapshot's annex is not a mapping"
        raise StateError(msg)
    clock = {k: tree[k] for k in ("now", "started", "start", "timers")}
    return clock, tree["parts"], annex


def unfit_reason(part: Part, saved: dict[str, Any]) -> str | None:
    """Why a saved part cannot be restored into `part` (same key), or None if it can."""
    s = part.spec
    if saved["shape"] != s.shape:
        was = saved["shape"] or "per key"
        now = s.shape or "per key"
        return f"it ran {was} and now runs {now} (compile with the same fuse_partitions)"
    if saved["inputs"] != s.inputs:
        return "its input schema changed"
    if saved["output"] != s.output:
        return "its output schema changed"
    if saved["text"] != s.text:
        return "its text changed" if s.key.startswith(("query:", "partition:")) else "its definition changed"
    return None


def match(
    parts: list[Part], saved: dict[str, dict[str, Any]], partial: bool
) -> tuple[list[tuple[Part, dict[str, Any]]], RestoreReport]:
    """The parts to restore, each with its saved entry, and the report. Without `partial`
    any part that does not fit (either way) raises StateError naming it."""
    report = RestoreReport()
    chosen: list[tuple[Part, dict[str, Any]]] = []
    for part in parts:
        entry = saved.get(part.spec.key)
        why = None if entry is None else unfit_reason(part, entry)
        if entry is None:
            report.fresh.append(part.spec.label)
        elif why is not None:
            report.unfit.append((str(entry["label"]), why))
            report.fresh.append(part.spec.label)
        else:
            chosen.append((part, entry))
            report.kept.append(part.spec.label)
    known = {p.spec.key for p in parts}
    for key, entry in saved.items():
        if key not in known:
            report.unfit.append((str(entry["label"]), "it is no longer in the plan"))
    if not partial:
        problem = None
        if report.unfit:
            label, why = report.unfit[0]
            problem = f"{label}: {why}"
        elif report.fresh:
            problem = f"{report.fresh[0]} is not in the snapshot"
        if problem is not None:
            msg = (
                f"snapshot does not fit this plan: {problem}; "
                "restore with partial=True to keep the parts that fit"
            )
            raise StateError(msg)
    return chosen, report
