"""`[persistence]`: defaults, environment overrides and the checks that name the key."""

from __future__ import annotations

from typing import Any

import pytest

from app.config import Persistence, load
from engine.errors import ConfigError


def test_persistence_defaults() -> None:
    assert load(env={}).persistence == Persistence(
        keep_snapshots=3, input_log=True, fsync="interval", fsync_interval_ms=50, max_log_bytes=1073741824
    )


def test_persistence_from_the_environment() -> None:
    cfg = load(env={"CEPHEUS__PERSISTENCE__KEEP_SNAPSHOTS": "5", "CEPHEUS__PERSISTENCE__FSYNC": "always"})
    assert (cfg.persistence.keep_snapshots, cfg.persistence.fsync) == (5, "always")


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("keep_snapshots", 0, "persistence.keep_snapshots must be at least 1, got 0"),
        ("fsync", "sometimes", "persistence.fsync must be one of always, interval, off, got 'sometimes'"),
        ("fsync_interval_ms", 0, "persistence.fsync_interval_ms must be positive, got 0"),
        ("max_log_bytes", 1000, "persistence.max_log_bytes must be at least 1048576 (1 MiB), got 1000"),
    ],
)
def test_bad_persistence_values_name_the_key(key: str, value: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(env={}, overrides={"persistence": {key: value}})
    assert str(caught.value) == message


def test_persistence_keys_are_typed() -> None:
    with pytest.raises(ConfigError, match="persistence.input_log must be bool, got str 'yes'"):
        load(env={}, overrides={"persistence": {"input_log": "yes"}})
