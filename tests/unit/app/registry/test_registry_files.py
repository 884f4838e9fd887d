"""An SQLite registry holds password hashes: a new one is private (0600 in a 0700 directory)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.registry import Registry


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_sqlite_registry_and_its_directory_are_private(tmp_path: Path) -> None:
    database = tmp_path / "var" / "cepheus.db"
    with Registry(f"sqlite:///{database}") as registry:
        registry.migrate()
        registry.ensure_admin("secret-pw")
        files = [database, *database.parent.glob("cepheus.db-*")]  # SQLite's -wal and -shm
        assert len(files) == 3
        assert {path.name: mode(path) for path in files} == {path.name: 0o600 for path in files}
    assert mode(database.parent) == 0o700


def test_an_sqlite_registry_the_operator_made_keeps_its_mode(tmp_path: Path) -> None:
    database = tmp_path / "cepheus.db"
    database.touch(mode=0o640)
    database.chmod(0o640)
    with Registry(f"sqlite:///{database}") as registry:
        registry.migrate()
    assert mode(database) == 0o640
