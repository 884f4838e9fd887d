"""Snapshots in the registry on SQLite, MariaDB and PostgreSQL: large blobs, checks, pruning,
and no registry revision moved by any of it."""

from __future__ import annotations

import os

import pytest

from app.registry import Registry
from app.registry.snapshots import CHUNK_BYTES, RegistrySnapshots
from ha.errors import SnapshotCorrupt
from tests.support.snapshots import TAKEN, flip_a_byte, meta_of

BIG = 20 * 1024 * 1024 + 123  # beyond MariaDB's default max_allowed_packet (16 MiB)


@pytest.mark.timeout(300)
def test_a_20_mb_snapshot_reads_back_the_same(registry: Registry) -> None:
    store = RegistrySnapshots(registry)
    blob = os.urandom(BIG)
    meta = meta_of(blob)
    snapshot_id = store.save(meta, blob)
    assert store.load(snapshot_id) == blob
    [listed] = store.list("pizza")
    assert listed == meta.__class__(**{**meta.__dict__, "id": snapshot_id})
    assert listed.created_at == TAKEN


def test_saving_and_pruning_snapshots_move_no_registry_revision(registry: Registry) -> None:
    store = RegistrySnapshots(registry)
    before = registry.revision()
    for n in range(4):
        store.save(meta_of(b"state %d" % n), b"state %d" % n)
    assert store.prune("pizza", keep=2) == 2
    assert store.discard("pizza") == 2
    assert registry.revision() == before
    assert registry.changes_since(0) == []


def test_prune_keeps_the_newest_snapshots_of_that_plan_only(registry: Registry) -> None:
    store = RegistrySnapshots(registry)
    ids = [store.save(meta_of(b"p%d" % n), b"p%d" % n) for n in range(5)]
    other = store.save(meta_of(b"other", "fraud"), b"other")
    assert store.prune("pizza", keep=3) == 2
    assert [m.id for m in store.list("pizza")] == ids[:1:-1]
    assert [m.id for m in store.list("fraud")] == [other]


@pytest.mark.parametrize("offset", [0, CHUNK_BYTES + 5], ids=["first chunk", "later chunk"])
def test_a_flipped_byte_makes_load_raise_snapshot_corrupt(registry: Registry, offset: int) -> None:
    store = RegistrySnapshots(registry)
    blob = os.urandom(2 * CHUNK_BYTES)
    snapshot_id = store.save(meta_of(blob), blob)
    flip_a_byte(registry.engine, snapshot_id, offset)
    with pytest.raises(SnapshotCorrupt) as caught:
        store.load(snapshot_id)
    assert str(caught.value).startswith(
        f"snapshot {snapshot_id} of plan 'pizza' taken 2026-11-23 22:30:15 UTC is corrupt: "
    )
