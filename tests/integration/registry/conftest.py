"""An empty registry database of its own for each test, on SQLite, MariaDB and PostgreSQL.

MariaDB gets a fresh database and PostgreSQL a fresh schema (via `search_path`), both dropped
afterwards, so tests never see each other's tables and leave nothing behind.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from app.registry import Registry


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
    url = make_url(database_url)
    backend = url.get_backend_name()
    if backend == "sqlite":
        yield database_url
        return
    name = f"cep_test_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        if backend == "mysql":
            conn.execute(sa.text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
            isolated = url.set(database=name)
        else:
            conn.execute(sa.text(f"CREATE SCHEMA {name}"))
            isolated = url.update_query_dict({"options": f"-csearch_path={name}"})
    try:
        yield isolated.render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            if backend == "mysql":
                conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}"))
            else:
                conn.execute(sa.text(f"DROP SCHEMA IF EXISTS {name} CASCADE"))
        admin.dispose()


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
