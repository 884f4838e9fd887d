"""An empty registry database of its own for each test, on SQLite, MariaDB and PostgreSQL.

MariaDB gets a fresh database and PostgreSQL a fresh schema (via `search_path`), both dropped
afterwards, so tests never see each other's tables and leave nothing behind.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.registry import Registry
from tests.support.databases import isolated_database


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the MariaDB and PostgreSQL variants, so `-m "not mysql"` and the like work."""
    here = Path(__file__).parent
    for item in items:
        if here not in item.path.parents:
            continue
        param = getattr(getattr(item, "callspec", None), "params", {}).get("database_url")
        if param in ("mysql", "postgres"):
            item.add_marker(getattr(pytest.mark, param))


@pytest.fixture
def registry_url(database_url: str) -> Iterator[str]:
    with isolated_database(database_url) as url:
        yield url


@pytest.fixture
def empty_registry(registry_url: str) -> Iterator[Registry]:
    """A registry with no schema yet."""
    registry = Registry(registry_url)
    yield registry
    registry.close()


@pytest.fixture
def registry(empty_registry: Registry) -> Registry:
    """A migrated, empty registry."""
    empty_registry.migrate()
    return empty_registry
