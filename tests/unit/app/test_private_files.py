"""Private files and directories: created 0600 / 0700 whatever the umask; existing ones keep their mode."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.private_files import private_dir, private_file


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The umask most operators have, under which plain creation gives 0644 files."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_private_dir_is_created_0700(tmp_path: Path) -> None:
    assert private_dir(tmp_path / "var") == tmp_path / "var"
    assert mode(tmp_path / "var") == 0o700


def test_an_existing_dir_keeps_its_mode(tmp_path: Path) -> None:
    (tmp_path / "var").mkdir(mode=0o755)
    private_dir(tmp_path / "var")
    assert mode(tmp_path / "var") == 0o755


def test_private_file_is_created_0600_and_empty(tmp_path: Path) -> None:
    assert private_file(tmp_path / "cepheus.db")
    assert mode(tmp_path / "cepheus.db") == 0o600
    assert (tmp_path / "cepheus.db").read_bytes() == b""


def test_an_operators_file_keeps_its_mode_and_content(tmp_path: Path) -> None:
    path = tmp_path / "cepheus.db"
    path.write_bytes(b"operator's")
    path.chmod(0o640)
    assert not private_file(path)
    assert mode(path) == 0o640
    assert path.read_bytes() == b"operator's"
