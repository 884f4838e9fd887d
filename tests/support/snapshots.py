"""Snapshot metas and blobs for tests of `SnapshotStore` implementations."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from app.registry import schema
from ha.ports import SnapshotMeta

TAKEN = datetime(2026, 11, 23, 22, 30, 15, 123456, tzinfo=UTC)


def meta_of(blob: bytes, plan: str = "pizza", *, position: int | None = 7) -> SnapshotMeta:
    return SnapshotMeta.describe(
        blob,
        plan=plan,
        text_sha256="ab" * 32,
        state_format=1,
        input_position=position,
        created_at=TAKEN,
        node="node-1:9763",
    )


def flip_a_byte(engine: sa.Engine, snapshot_id: int, offset: int = 0) -> None:
    """Corrupt one stored byte of snapshot `snapshot_id` (in `data`, or in the chunk holding `offset`)."""
    from app.registry.snapshots import CHUNK_BYTES

    seq, at = divmod(offset, CHUNK_BYTES)
    if seq == 0:
        table, where = schema.snapshots, schema.snapshots.c.id == snapshot_id
    else:
        c = schema.snapshot_chunks.c
        table, where = schema.snapshot_chunks, (c.snapshot_id == snapshot_id) & (c.seq == seq)
    with engine.begin() as conn:
        data = bytearray(conn.execute(sa.select(table.c.data).where(where)).scalar_one())
        data[at] ^= 0xFF
        conn.execute(sa.update(table).where(where).values(data=bytes(data)))
