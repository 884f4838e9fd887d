"""Snapshots: versioned and checksummed bytes; restoring checks what it reads."""

from __future__ import annotations

import pytest

import engine
from engine.runtime import state


def test_codec_round_trips_plain_values() -> None:
    tree = {"a": [1, 2.5, "x", None, True, (1, 2)], "big": 2**80, "b": b"\x00\x01", "s": {1, 2}}
    assert state.decode(state.encode(tree, "p"), "p") == tree


def test_corrupt_foreign_and_unsupported_snapshots_are_refused() -> None:
    blob = state.encode({"x": 1}, "plan-a")
    with pytest.raises(engine.StateError, match="checksum"):
        state.decode(blob[:-40] + bytes([blob[-40] ^ 1]) + blob[-39:], "plan-a")
    with pytest.raises(engine.StateError, match="plan"):
        state.decode(blob, "plan-b")
    with pytest.raises(engine.StateError, match="not a Cepheus snapshot"):
        state.decode(b"garbage", None)
    with pytest.raises(engine.StateError, match="cannot snapshot"):
        state.encode({"x": object()}, "p")


def test_a_runtime_only_restores_its_own_plan() -> None:
    a = engine.compile("define stream S (v int); from S#window.length(2) select sum(v) as t insert into O;")
    b = engine.compile("define stream S (v int); from S#window.length(3) select sum(v) as t insert into O;")
    with pytest.raises(engine.StateError):
        b.restore(a.snapshot())
