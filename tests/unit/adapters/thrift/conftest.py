"""Fixtures of the Thrift adapter's unit tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.thrift.tls import self_signed


@pytest.fixture(scope="session")
def tls_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data_dir/tls folder holding a certificate generated once per test session."""
    directory = tmp_path_factory.mktemp("data") / "tls"
    self_signed(directory)
    return directory
