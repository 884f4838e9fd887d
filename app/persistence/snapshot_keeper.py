"""`SnapshotKeeper`: the state of persistence-mode plans, taken to and restored from the registry.

A plan is in persistence mode when its `snapshot_interval_minutes` is above 0. For such a
plan the keeper
- restores, when the plan is deployed on a node that does not run it yet, the newest snapshot
  that loads: a corrupt or truncated one (size or checksum, `SnapshotCorrupt`), one of another
  state format, or one the runtime refuses, is skipped with one log line and the one before
  it is tried; none at all is a fresh start, never a crash loop;
- takes a snapshot every interval, and a final one when the node stops gracefully (after the
  receivers have drained, before the plans stop), keeping the newest `keep` per plan.
With `discard_state` (`cepheus server --discard-state`) the first deploy of each such plan
discards its snapshots instead (one log line with how many) and the plan starts empty.
`load` gives one chosen snapshot of a plan, for a restore on request (`app.node.snapshot_requests`).
Restores are partial (`Runtime.restore(partial=True)`): after an edit of the plan, queries
whose text and schemas are unchanged keep their state, and the others start empty and are
named in the log. The state is captured under the runtime's lock and encoded outside it.

With an input log (`journals`), a snapshot is captured under the plan's journal lock and
records the log position it covers; after a snapshot is saved and the old ones pruned, the log
is truncated behind the oldest snapshot kept (an older one is used when the newer are corrupt,
and it needs the records after it).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import engine
from app.persistence.journal import Journals
from app.registry import ExecutionPlan
from engine import Runtime
from engine.errors import CEPError
from ha.errors import HAError, SnapshotMissing
from ha.ports import SnapshotMeta, SnapshotStore

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class SnapshotDeferred(HAError):
    """The plan's runtime is being replaced; a snapshot now would not match its input log."""


class SnapshotTooLarge(HAError):
    """A snapshot over `[persistence] max_snapshot_bytes`: not stored."""


def persistent(plan: ExecutionPlan) -> bool:
    return plan.snapshot_interval_minutes > 0


@dataclass(frozen=True)
class Restored:
    """What `SnapshotKeeper.restore` did: the snapshot restored (None: the plan starts empty);
    `known` is False when the registry could not say which snapshots there are, `discarded`
    when `--discard-state` removed them; `annex`: what the node kept with the state."""

    meta: SnapshotMeta | None = None
    known: bool = True
    discarded: bool = False
    annex: dict[str, Any] = field(default_factory=dict)


class SnapshotKeeper:
    def __init__(
        self,
        store: SnapshotStore,
        node: str,
        keep: int,
        deployed: Callable[[], list[tuple[ExecutionPlan, Runtime]]],
        clock: Callable[[], float] = time.monotonic,
        discard_state: bool = False,
        journals: Journals | None = None,
        max_bytes: int = 256 * 1024 * 1024,
    ) -> None:
        self._store = store
        self._node = node
        self._keep = keep
        self._deployed = deployed
        self._clock = clock
        self._discard_state = discard_state
        self._journals = journals
        self._max_bytes = max_bytes
        self._discarded: set[str] = set()  # plans whose snapshots --discard-state removed already
        self._unread: set[str] = set()  # plans whose snapshots could not be read: none taken
        self._last: dict[str, float] = {}  # plan -> when its state was last taken or restored
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ---- restore ---------------------------------------------------------------------------

    def restore(self, plan: ExecutionPlan, runtime: Runtime) -> Restored:
        """Load the newest usable snapshot of `plan` into `runtime`; which one (or none)."""
        self._last[plan.name] = self._clock()
        if self._discard_state and plan.name not in self._discarded:
            self._discarded.add(plan.name)
            self._discard(plan.name)
            return Restored(discarded=True)
        self._unread.discard(plan.name)
        try:
            candidates = self._store.list(plan.name)
        except Exception as exc:  # the registry is down: start empty rather than not at all
            self._unreadable(plan.name, f"its snapshots cannot be listed ({exc})")
            return Restored(known=False)
        for meta in candidates:
            assert meta.id is not None
            if meta.state_format != engine.STATE_FORMAT:
                log.warning(
                    "plan %s: snapshot %d skipped: state format %d, this node reads %d",
                    plan.name,
                    meta.id,
                    meta.state_format,
                    engine.STATE_FORMAT,
                )
                continue
            try:
                blob = self._store.load(meta.id)
            except HAError as exc:  # corrupt or gone: the one before may do
                log.warning("plan %s: snapshot %d skipped: %s", plan.name, meta.id, exc)
                continue
            except Exception as exc:  # the registry failed: the older ones would be no better
                self._unreadable(plan.name, f"snapshot {meta.id} cannot be read ({exc})")
                return Restored(known=False)
            try:
                report = runtime.restore(blob, partial=True)  # all or nothing
            except CEPError as exc:
                log.warning("plan %s: snapshot %d skipped: %s", plan.name, meta.id, exc)
                continue
            if report.unfit and not report.kept:  # a snapshot of another plan (or of no version of this one)
                log.warning(
                    "plan %s: snapshot %d skipped: none of its %d parts fits this plan",
                    plan.name,
                    meta.id,
                    len(report.unfit),
                )
                continue
            edited = (
                "" if meta.text_sha256 == text_sha256(plan.text) else " (taken before the plan was edited)"
            )
            log.info(
                "plan %s restored from snapshot %d of %s by %s%s: %s",
                plan.name,
                meta.id,
                meta.created_at.isoformat(timespec="seconds"),
                meta.node,
                edited,
                describe(report),
            )
            return Restored(meta, annex=report.annex)
        if candidates:
            log.warning(
                "plan %s starts with empty state: none of its %d snapshots loads", plan.name, len(candidates)
            )
        return Restored()

    def _unreadable(self, plan: str, why: str) -> None:
        """Start empty, and take no snapshot of the plan until it is deployed again: a new one
        would push the good ones out."""
        self._unread.add(plan)
        log.error(
            "plan %s starts with empty state: %s; no snapshot of it is taken until it is redeployed "
            "(restart the node once the registry answers)",
            plan,
            why,
        )

    def _discard(self, plan: str) -> None:
        try:
            removed = self._store.discard(plan)
        except Exception as exc:  # the registry is down: the plan still starts empty, as asked
            log.error("plan %s starts with empty state; its snapshots cannot be discarded (%s)", plan, exc)
            return
        log.info("plan %s starts with empty state (--discard-state): %d snapshot(s) discarded", plan, removed)

    def kept(self, plan: str) -> list[SnapshotMeta]:
        """The snapshots the registry keeps of `plan`, newest first."""
        return self._store.list(plan)

    def load(self, plan: str, snapshot_id: int) -> tuple[SnapshotMeta, bytes]:
        """Snapshot `snapshot_id` of `plan` and its blob: `SnapshotMissing` when `plan` has no
        such snapshot, `SnapshotCorrupt` when its bytes fail their checks."""
        meta = next((m for m in self._store.list(plan) if m.id == snapshot_id), None)
        if meta is None:
            msg = f"plan {plan!r} has no snapshot {snapshot_id} (`cepheus snapshot list {plan}` shows those it has)"
            raise SnapshotMissing(msg)
        return meta, self._store.load(snapshot_id)

    # ---- take ------------------------------------------------------------------------------

    def take(self, plan: ExecutionPlan, runtime: Runtime) -> SnapshotMeta:
        """Snapshot `plan` now, store it and prune the oldest beyond `keep`."""
        started = self._clock()
        journal = None if self._journals is None else self._journals.get(plan.name)
        log_id: str | None = None
        position: int | None = None
        if journal is not None:
            if journal.runtime is not runtime:  # a redeploy is switching runtimes right now
                msg = f"plan {plan.name} is being redeployed; take its snapshot again in a moment"
                raise SnapshotDeferred(msg)
            capture, log_id, position = journal.capture()
        else:
            capture = runtime.capture()
        blob = capture.encode()
        if len(blob) > self._max_bytes:
            msg = (
                f"a snapshot of {len(blob):,} bytes is over persistence.max_snapshot_bytes "
                f"({self._max_bytes:,}); not stored, the older ones are kept"
            )
            raise SnapshotTooLarge(msg)
        meta = SnapshotMeta.describe(
            blob,
            plan=plan.name,
            text_sha256=text_sha256(plan.text),
            state_format=engine.STATE_FORMAT,
            input_position=position,
            created_at=datetime.now(UTC),
            node=self._node,
            input_log=log_id,
        )
        snapshot_id = self._store.save(meta, blob)
        try:
            self._store.prune(plan.name, self._keep)
            if log_id is not None:
                self._truncate(plan.name, log_id)
        except Exception as exc:  # the snapshot is saved; the older ones (and their log) go next time
            log.warning(
                "plan %s: snapshot %d saved, but older ones not pruned: %s", plan.name, snapshot_id, exc
            )
        self._last[plan.name] = self._clock()
        log.info(
            "plan %s: snapshot %d taken (%d bytes in %.0f ms)",
            plan.name,
            snapshot_id,
            meta.size,
            (self._clock() - started) * 1000,
        )
        return dataclasses.replace(meta, id=snapshot_id)

    def _truncate(self, plan: str, log_id: str) -> None:
        """Drop the log records every kept snapshot of this log covers."""
        assert self._journals is not None
        covered = [m.input_position for m in self._store.list(plan) if m.input_log == log_id]
        upto = min((p for p in covered if p is not None), default=None)
        if upto is not None:
            self._journals.truncate(plan, log_id, upto)

    def take_all(self) -> None:
        """A final snapshot of every persistence-mode plan (graceful stop); failures are logged."""
        for plan, runtime in self._deployed():
            if persistent(plan) and plan.name not in self._unread:
                self._take_logged(plan, runtime)

    def farewell(self, plan: ExecutionPlan, runtime: Runtime) -> None:
        """A last snapshot of a persistence-mode plan that stops running here (undeployed,
        disabled, a failed redeploy): enabled again, it carries on from this state."""
        self.checkpoint(plan, runtime)

    def checkpoint(self, plan: ExecutionPlan, runtime: Runtime) -> None:
        """A snapshot of a persistence-mode plan now (failures logged): after a redeploy, so
        that a replay never runs input from before the edit through the new text."""
        if persistent(plan) and plan.name not in self._unread:
            self._take_logged(plan, runtime)

    def _take_logged(self, plan: ExecutionPlan, runtime: Runtime) -> None:
        try:
            self.take(plan, runtime)
        except Exception as exc:  # a failed snapshot must not stop the plan or the node
            self._last[plan.name] = self._clock()  # retried after an interval, not in a loop
            log.error("plan %s: snapshot failed: %s", plan.name, exc)

    # ---- the schedule ----------------------------------------------------------------------

    def due(self) -> list[tuple[ExecutionPlan, Runtime]]:
        now = self._clock()
        return [
            (plan, runtime)
            for plan, runtime in self._deployed()
            if persistent(plan)
            and plan.name not in self._unread
            and now - self._last.setdefault(plan.name, now) >= plan.snapshot_interval_minutes * 60
        ]

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="snapshots", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            for plan, runtime in self.due():
                self._take_logged(plan, runtime)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)


def describe(report: engine.RestoreReport) -> str:
    parts = [f"{len(report.kept)} parts kept"]
    if report.fresh:
        parts.append("started empty: " + ", ".join(report.fresh))
    if report.unfit:
        parts.append("state dropped: " + "; ".join(f"{name} ({why})" for name, why in report.unfit))
    return ", ".join(parts)
