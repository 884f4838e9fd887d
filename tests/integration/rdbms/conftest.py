"""Fixtures of the RDBMS adapter tests: a database with uniquely named, dropped-after tables.

`database_url` (tests/conftest.py) runs a test on SQLite, MariaDB and PostgreSQL;
`network_url` only on the two servers (the outage tests put a TCP proxy in front of
them). Tests on MariaDB/PostgreSQL get the `mysql`/`postgres` marker.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .database import Database

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE not in item.path.parents:
            continue
        callspec = getattr(item, "callspec", None)
        params = callspec.params if callspec is not None else {}
        for fixture in ("database_url", "network_url"):
            if params.get(fixture) in ("mysql", "postgres"):
                item.add_marker(getattr(pytest.mark, params[fixture]))


@pytest.fixture(params=["mysql", "postgres"])
def network_url(request: pytest.FixtureRequest) -> str:
    """MariaDB and PostgreSQL in turn (databases reached over TCP)."""
    return str(request.getfixturevalue(f"{request.param}_url"))


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    database = Database(database_url)
    yield database
    database.close()


@pytest.fixture
def net_db(network_url: str) -> Iterator[Database]:
    database = Database(network_url)
    yield database
    database.close()
