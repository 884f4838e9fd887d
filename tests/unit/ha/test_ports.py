"""`ha.ports` and `ha.errors`: a snapshot's meta and the corrupt-snapshot message."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone

import pytest

from engine.errors import CEPError, HAError
from ha.errors import SnapshotCorrupt
from ha.ports import SnapshotMeta

TAKEN = datetime(2026, 11, 23, 22, 30, 15, tzinfo=UTC)


def _describe(blob: bytes, created_at: datetime = TAKEN) -> SnapshotMeta:
    return SnapshotMeta.describe(
        blob,
        plan="pizza",
        text_sha256="0" * 64,
        state_format=1,
        input_position=None,
        created_at=created_at,
        node="n1",
    )


def test_describe_gives_size_and_sha256_of_the_blob() -> None:
    meta = _describe(b"state")
    assert (meta.id, meta.size, meta.checksum) == (None, 5, hashlib.sha256(b"state").hexdigest())


@pytest.mark.parametrize(
    "created_at",
    [datetime(2026, 11, 23, 22, 30), datetime(2026, 11, 23, 22, 30, tzinfo=timezone(timedelta(hours=1)))],  # noqa: DTZ001
    ids=["naive", "not UTC"],
)
def test_a_meta_takes_only_utc_times(created_at: datetime) -> None:
    with pytest.raises(ValueError, match="created_at must be timezone-aware UTC"):
        _describe(b"state", created_at)


def test_snapshot_corrupt_names_plan_id_and_time_and_what_to_do() -> None:
    error = SnapshotCorrupt("pizza", 12, TAKEN, "5 bytes stored, 6 expected")
    assert isinstance(error, HAError) and isinstance(error, CEPError)
    assert str(error) == (
        "snapshot 12 of plan 'pizza' taken 2026-11-23 22:30:15 UTC is corrupt: 5 bytes stored, 6 expected; "
        "discard it (`cepheus snapshot discard pizza --id 12`) to use an older one"
    )
