"""`RegistrySnapshots` on SQLite: what `save` refuses, `load` of a missing id, `discard`, listing."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.registry import Registry
from app.registry.snapshots import RegistrySnapshots
from ha.errors import SnapshotCorrupt, SnapshotMissing
from tests.support.snapshots import flip_a_byte, meta_of


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RegistrySnapshots]:
    with Registry(f"sqlite:///{tmp_path / 'cepheus.db'}") as registry:
        registry.migrate()
        yield RegistrySnapshots(registry)


def test_save_refuses_a_blob_its_meta_does_not_describe(store: RegistrySnapshots) -> None:
    meta = meta_of(b"state")
    with pytest.raises(SnapshotCorrupt, match="not stored: 6 bytes, its meta says 5"):
        store.save(meta, b"state!")
    with pytest.raises(SnapshotCorrupt, match="not stored: its SHA-256 differs from its meta's"):
        store.save(meta, b"STATE")
    assert store.list("pizza") == []


def test_save_refuses_a_meta_that_has_an_id(store: RegistrySnapshots) -> None:
    meta = dataclasses.replace(meta_of(b"state"), id=4)
    with pytest.raises(ValueError, match="saved already"):
        store.save(meta, b"state")


def test_list_gives_newest_first_and_load_gives_the_blob(store: RegistrySnapshots) -> None:
    first = store.save(meta_of(b"one", position=None), b"one")
    second = store.save(meta_of(b"two", position=2**40), b"two")
    assert [(m.id, m.input_position) for m in store.list("pizza")] == [(second, 2**40), (first, None)]
    assert (store.load(first), store.load(second)) == (b"one", b"two")


def test_a_flipped_byte_is_found_on_load(store: RegistrySnapshots) -> None:
    snapshot_id = store.save(meta_of(b"state"), b"state")
    flip_a_byte(store.registry.engine, snapshot_id)
    with pytest.raises(SnapshotCorrupt, match=f"snapshot {snapshot_id} of plan 'pizza' taken .* is corrupt"):
        store.load(snapshot_id)


def test_loading_a_missing_snapshot_says_so(store: RegistrySnapshots) -> None:
    with pytest.raises(SnapshotMissing, match="there is no snapshot 99"):
        store.load(99)


def test_discard_one_of_a_plan_or_all(store: RegistrySnapshots) -> None:
    ids = [store.save(meta_of(b"s%d" % n), b"s%d" % n) for n in range(3)]
    other = store.save(meta_of(b"x", "fraud"), b"x")
    assert store.discard("pizza", other) == 0
    assert store.discard("pizza", ids[1]) == 1
    assert [m.id for m in store.list("pizza")] == [ids[2], ids[0]]
    assert store.discard("pizza") == 2
    assert [m.id for m in store.list_all()] == [other]


def test_list_all_groups_by_plan_newest_first(store: RegistrySnapshots) -> None:
    a1 = store.save(meta_of(b"a1", "b-plan"), b"a1")
    b1 = store.save(meta_of(b"b1", "a-plan"), b"b1")
    a2 = store.save(meta_of(b"a2", "b-plan"), b"a2")
    assert [(m.plan, m.id) for m in store.list_all()] == [("a-plan", b1), ("b-plan", a2), ("b-plan", a1)]


def test_prune_to_zero_and_refuse_negative(store: RegistrySnapshots) -> None:
    store.save(meta_of(b"s"), b"s")
    with pytest.raises(ValueError, match="keep must be 0 or more"):
        store.prune("pizza", -1)
    assert store.prune("pizza", 0) == 1
    assert store.list("pizza") == []


def test_deleting_counts_only_snapshots_still_there(store: RegistrySnapshots) -> None:
    """Two nodes pruning at once: the second counts none of what the first deleted."""
    from app.registry.snapshots import _delete

    kept = store.save(meta_of(b"s"), b"s")
    with store.registry.engine.begin() as conn:
        assert _delete(conn, [kept, kept + 100]) == 1
        assert _delete(conn, [kept]) == 0


def test_a_lost_chunk_is_found_on_load_by_its_size(store: RegistrySnapshots) -> None:
    import sqlalchemy as sa

    from app.registry import schema
    from app.registry.snapshots import CHUNK_BYTES

    blob = bytes(CHUNK_BYTES + 10)
    snapshot_id = store.save(meta_of(blob), blob)
    with store.registry.engine.begin() as conn:
        conn.execute(sa.delete(schema.snapshot_chunks))
    with pytest.raises(
        SnapshotCorrupt, match=f"is corrupt: {CHUNK_BYTES} bytes stored, {CHUNK_BYTES + 10} expected"
    ):
        store.load(snapshot_id)
