"""`RegistrySnapshots`: the `SnapshotStore` port of `ha.ports` on the registry database.

Snapshots are not registry entities: they are written on connections of their own, outside
`Store`, so saving or pruning them never bumps the revision that makes nodes redeploy. A blob
is stored in chunks of `CHUNK_BYTES` (the first in `cep_snapshots.data`, the rest in
`cep_snapshot_chunks`), since one value must fit in one packet on MySQL/MariaDB (16 MiB by
default). Every method runs in one transaction. Imports the registry's tables and `ha`.
"""

from __future__ import annotations

import builtins
import logging
from datetime import UTC
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from app.registry import schema
from ha.errors import SnapshotCorrupt, SnapshotMissing
from ha.ports import SnapshotMeta, checksum_of

if TYPE_CHECKING:
    from app.registry.registry import Registry

log = logging.getLogger(__name__)

# one chunk per statement: below the smallest max_allowed_packet in use (4 MiB) even when
# escaped on the wire, which may double it
CHUNK_BYTES = 1024 * 1024

_META_COLUMNS = [c for c in schema.snapshots.c if c.name != "data"]


class RegistrySnapshots:
    """Snapshots of plans' state in the registry at `registry` (see `ha.ports.SnapshotStore`)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def save(self, meta: SnapshotMeta, blob: bytes) -> int:
        """Store `blob` as `meta` describes it; its new id. `SnapshotCorrupt` if they disagree."""
        if meta.id is not None:
            msg = f"snapshot {meta.id} of plan {meta.plan!r} is saved already; save takes a meta without id"
            raise ValueError(msg)
        if len(blob) != meta.size:
            raise SnapshotCorrupt(
                meta.plan, None, meta.created_at, f"{len(blob)} bytes, its meta says {meta.size}"
            )
        if checksum_of(blob) != meta.checksum:
            raise SnapshotCorrupt(meta.plan, None, meta.created_at, "its SHA-256 differs from its meta's")
        row = {c.name: getattr(meta, c.name) for c in _META_COLUMNS if c.name != "id"}
        row["created_at"] = meta.created_at.astimezone(UTC).replace(tzinfo=None)
        with self.registry.writing() as conn:
            result = conn.execute(sa.insert(schema.snapshots).values(row | {"data": blob[:CHUNK_BYTES]}))
            snapshot_id = int(result.inserted_primary_key[0])  # type: ignore[index]  # None only for non-inserts
            for seq, start in enumerate(range(CHUNK_BYTES, len(blob), CHUNK_BYTES), 1):
                chunk = blob[start : start + CHUNK_BYTES]
                conn.execute(
                    sa.insert(schema.snapshot_chunks).values(snapshot_id=snapshot_id, seq=seq, data=chunk)
                )
        log.info("plan %s: snapshot %d saved (%d bytes)", meta.plan, snapshot_id, meta.size)
        return snapshot_id

    def list(self, plan: str) -> builtins.list[SnapshotMeta]:
        """`plan`'s snapshots, newest first."""
        c = schema.snapshots.c
        with self.registry.consistent_read() as conn:
            rows = conn.execute(sa.select(*_META_COLUMNS).where(c.plan == plan).order_by(c.id.desc()))
            return [_meta(row._mapping) for row in rows]

    def list_all(self) -> builtins.list[SnapshotMeta]:
        """Every plan's snapshots: by plan name, each plan's newest first."""
        c = schema.snapshots.c
        with self.registry.consistent_read() as conn:
            rows = conn.execute(sa.select(*_META_COLUMNS).order_by(c.id.desc()))
            metas = [_meta(row._mapping) for row in rows]
        return sorted(metas, key=lambda m: m.plan)  # stable: newest first within a plan

    def load(self, id: int) -> bytes:
        """The blob of snapshot `id`; `SnapshotMissing`, or `SnapshotCorrupt` if it fails its checks."""
        c = schema.snapshots.c
        chunks = schema.snapshot_chunks.c
        with self.registry.consistent_read() as conn:
            row = conn.execute(sa.select(schema.snapshots).where(c.id == id)).first()
            if row is None:
                msg = f"there is no snapshot {id}; `cepheus snapshot list` shows those there are"
                raise SnapshotMissing(msg)
            parts = [bytes(row.data)]
            rest = conn.execute(
                sa.select(chunks.data).where(chunks.snapshot_id == id).order_by(chunks.seq)
            ).scalars()
            parts.extend(bytes(part) for part in rest)
        meta = _meta(row._mapping)
        blob = b"".join(parts)
        if len(blob) != meta.size:
            raise SnapshotCorrupt(
                meta.plan, id, meta.created_at, f"{len(blob)} bytes stored, {meta.size} expected"
            )
        if checksum_of(blob) != meta.checksum:
            raise SnapshotCorrupt(
                meta.plan, id, meta.created_at, "its SHA-256 differs from the one stored with it"
            )
        return blob

    def prune(self, plan: str, keep: int) -> int:
        """Delete all but `plan`'s `keep` newest snapshots; how many were deleted."""
        if keep < 0:
            msg = f"keep must be 0 or more, got {keep}"
            raise ValueError(msg)
        c = schema.snapshots.c
        with self.registry.writing() as conn:
            ids = conn.execute(sa.select(c.id).where(c.plan == plan).order_by(c.id.desc()).offset(keep))
            deleted = _delete(conn, [int(i) for i in ids.scalars()])
        if deleted:
            log.info("plan %s: %d old snapshot(s) pruned, %d kept at most", plan, deleted, keep)
        return deleted

    def discard(self, plan: str, id: int | None = None) -> int:
        """Delete snapshot `id` of `plan`, or all of `plan`'s; how many were deleted."""
        c = schema.snapshots.c
        query = sa.select(c.id).where(c.plan == plan)
        if id is not None:
            query = query.where(c.id == id)
        with self.registry.writing() as conn:
            return _delete(conn, [int(i) for i in conn.execute(query).scalars()])


def _delete(conn: sa.Connection, ids: builtins.list[int]) -> int:
    """Delete snapshots `ids`; how many were still there (another node may have deleted some)."""
    if not ids:
        return 0
    chunks = schema.snapshot_chunks.c
    conn.execute(sa.delete(schema.snapshot_chunks).where(chunks.snapshot_id.in_(ids)))
    return int(conn.execute(sa.delete(schema.snapshots).where(schema.snapshots.c.id.in_(ids))).rowcount)


def _meta(row: Any) -> SnapshotMeta:
    return SnapshotMeta(
        id=int(row["id"]),
        plan=row["plan"],
        text_sha256=row["text_sha256"],
        state_format=int(row["state_format"]),
        input_position=None if row["input_position"] is None else int(row["input_position"]),
        input_log=row["input_log"],
        size=int(row["size"]),
        checksum=row["checksum"],
        created_at=row["created_at"].replace(tzinfo=UTC),
        node=row["node"],
    )
