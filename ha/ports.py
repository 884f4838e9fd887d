"""Ports of high availability and persistence: what `ha/` needs from storage, as Protocols.

`app/` implements them on the registry database (`app/registry/leases.py`,
`app/registry/snapshots.py`); `ha/` and the node see snapshots as opaque bytes with a
`SnapshotMeta` beside them. Imports nothing of ours; no I/O, no threads.
"""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol


def checksum_of(blob: bytes) -> str:
    """The checksum a `SnapshotMeta` carries: the SHA-256 of the blob, lower-case hex."""
    return hashlib.sha256(blob).hexdigest()


@dataclass(frozen=True)
class SnapshotMeta:
    """What is known about one snapshot of a plan's state, without its bytes.

    `id` is None until the store has saved it. `text_sha256` identifies the plan text the
    state belongs to; `state_format` is the engine's blob format (`engine.STATE_FORMAT`);
    `input_position` is the last position of input log `input_log` the state covers (both
    None: no input log; positions count in one log, so they mean nothing in another);
    `size` and `checksum` describe the blob; `created_at` is UTC and timezone-aware; `node`
    is the id of the node that took it.
    """

    id: int | None
    plan: str
    text_sha256: str
    state_format: int
    input_position: int | None
    size: int
    checksum: str
    created_at: datetime
    node: str
    input_log: str | None = None

    def __post_init__(self) -> None:
        if self.created_at.utcoffset() != timedelta(0):
            msg = f"SnapshotMeta.created_at must be timezone-aware UTC, got {self.created_at!r}"
            raise ValueError(msg)

    def to_json(self) -> dict[str, object]:
        """The meta as the CLI's `--json` and the node's API show it."""
        return {
            "id": self.id,
            "plan": self.plan,
            "created_at": self.created_at.isoformat(),
            "node": self.node,
            "size": self.size,
            "state_format": self.state_format,
            "input_log": self.input_log,
            "input_position": self.input_position,
            "text_sha256": self.text_sha256,
            "checksum": self.checksum,
        }

    @classmethod
    def describe(
        cls,
        blob: bytes,
        *,
        plan: str,
        text_sha256: str,
        state_format: int,
        input_position: int | None,
        created_at: datetime,
        node: str,
        input_log: str | None = None,
    ) -> SnapshotMeta:
        """The meta of a new (unsaved) snapshot: size and checksum computed from `blob`."""
        return cls(
            None,
            plan,
            text_sha256,
            state_format,
            input_position,
            len(blob),
            checksum_of(blob),
            created_at,
            node,
            input_log,
        )


class SnapshotStore(Protocol):
    """Snapshots of plans' state, shared by every node.

    Newest means most recently saved: ids grow with every save, so "newest first" is by id,
    descending (never by `created_at`, which comes from the saving node's clock). Each method
    is atomic: after a failure (which propagates as the store's own exception) nothing of it
    is visible. Saving, pruning and discarding change no registry revision: nodes do not
    redeploy because of them.
    """

    def save(self, meta: SnapshotMeta, blob: bytes) -> int:
        """Store `blob` as `meta` says (meta.id None) and return its new id.

        Computes nothing: raises `SnapshotCorrupt` (and stores nothing) when `blob`'s size or
        SHA-256 differ from `meta.size` / `meta.checksum`. Either the whole snapshot is stored
        or nothing.
        """
        ...

    def list(self, plan: str) -> builtins.list[SnapshotMeta]:
        """The metas of `plan`'s snapshots, newest first (empty when there are none)."""
        ...

    def load(self, id: int) -> bytes:
        """The blob of snapshot `id`, checked against its meta.

        Raises `SnapshotMissing` when there is no such snapshot and `SnapshotCorrupt` (naming
        plan, id and time) when its stored size or SHA-256 differ from its meta.
        """
        ...

    def prune(self, plan: str, keep: int) -> int:
        """Delete all but the `keep` newest snapshots of `plan` (keep >= 0); the number deleted."""
        ...

    def discard(self, plan: str, id: int | None = None) -> int:
        """Delete snapshot `id` of `plan` (0 if `plan` has none of that id), or all of `plan`'s when
        `id` is None; the number deleted."""
        ...


@dataclass(frozen=True, order=True)
class LogPosition:
    """Where a node's copy of a plan's ordered input stands: its last `position`, and the `term`
    (lease epoch) of the notifier that sequenced it. Positions of different terms may hold
    different records, so a position counts only within its term."""

    term: int
    position: int

    def covers(self, required: LogPosition | None) -> bool:
        """Whether a node standing here holds every record `required` names (None: nothing is)."""
        if required is None:
            return True
        return self.term > required.term or (
            self.term == required.term and self.position >= required.position
        )


@dataclass(frozen=True)
class Lease:
    """Who holds a plan's notifier lease, under which `epoch` (it only grows: each change of
    holder adds one), and for how much longer, by the store's clock, when the store answered
    (`ttl_ms`; 0: expired). `required`: what a node must hold to be granted the lease next —
    the last record the holders acknowledged to a client without every member of their term
    holding it (None: nothing yet)."""

    plan: str
    holder: str
    epoch: int
    ttl_ms: int
    required: LogPosition | None = None


class LeaseStore(Protocol):
    """Notifier leases, one per plan, decided by compare-and-set against the store's own clock.

    No node's clock is read: a lease expires when the store's clock passes the moment it was
    last granted plus its ttl. Each method is one atomic step and propagates the store's
    exception when the store cannot answer (the caller then counts the lease as not renewed).

    Eligibility: a grant to a node that does not hold the lease now needs the node's log,
    `held`, to cover the lease's `required` position (`LogPosition.covers`; `held` None covers
    nothing once something is required). A renewal may raise `required` (`require`): the
    holder does so before it acknowledges a record some member of its term may lack, so that
    member can no longer be granted the lease and lose the record.
    """

    def acquire(
        self,
        plan: str,
        node: str,
        ttl_ms: int,
        held: LogPosition | None = None,
        require: LogPosition | None = None,
    ) -> Lease:
        """Grant or renew `plan`'s lease to `node` for `ttl_ms` if it is `node`'s already, or
        free or expired and `held` covers what it requires (a new holder gets the epoch + 1);
        else change nothing. A renewal with `require` raises the requirement to it (never
        lowers it). Returns the lease as it stands afterwards, whoever holds it."""
        ...

    def renew(self, plans: Sequence[str], node: str, ttl_ms: int) -> dict[str, Lease]:
        """Renew, in one request, the lease of each of `plans` that `node` holds and has not let
        expire, for `ttl_ms` (the epoch stays): for those, what `acquire(plan, node, ttl_ms)`
        would do. Changes no other lease. Returns each plan's lease as it stands afterwards
        (a plan never leased is absent): the caller asks `acquire` for the plans not renewed.
        A member notifying for hundreds of plans keeps their renewals within `renew_ms` on a
        registry some milliseconds away only so (one request per plan would take longer)."""
        ...

    def take_over(
        self, plan: str, node: str, ttl_ms: int, dead: str, epoch: int, held: LogPosition | None = None
    ) -> Lease:
        """Grant `plan`'s lease to `node` now, before it expires, if `dead` still holds it under
        `epoch` (its process is known to have died: its connection closed) and `held` covers
        what it requires; else change nothing. Safe only because the sink's fence refuses the
        old epoch's late writes. Returns the lease as it stands afterwards."""
        ...

    def release(self, plan: str, node: str) -> bool:
        """End `node`'s lease on `plan` now (a graceful stop, a move); False if it held none."""
        ...

    def release_all(self, node: str) -> int:
        """End every lease `node` holds now; how many. A member's process does this when it
        starts: leases of its name are its predecessor's, granted to a log this process may
        not have (a power cut with fsync off), and a renewal would keep them without asking
        whether its log covers what they require."""
        ...

    def current(self, plan: str) -> Lease | None:
        """The lease of `plan` as it stands (its holder may have expired), None if never granted."""
        ...

    def all(self) -> builtins.list[Lease]:
        """Every plan's lease as it stands, in one request, by plan."""
        ...
