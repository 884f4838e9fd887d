"""A database of its own for one test: a fresh MariaDB database or PostgreSQL schema, dropped afterwards."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.engine import make_url


@contextmanager
def isolated_database(url: str, prefix: str = "cep_test") -> Iterator[str]:
    """The URL of an empty database (MariaDB) or schema (PostgreSQL, via `search_path`) on the
    server of `url`; SQLite URLs are returned as they are."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        yield url
        return
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(parsed, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        if backend == "mysql":
            conn.execute(sa.text(f"CREATE DATABASE {name} CHARACTER SET utf8mb4"))
            isolated = parsed.set(database=name)
        else:
            conn.execute(sa.text(f"CREATE SCHEMA {name}"))
            isolated = parsed.update_query_dict({"options": f"-csearch_path={name}"})
    try:
        yield isolated.render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            if backend == "mysql":
                conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}"))
            else:
                conn.execute(sa.text(f"DROP SCHEMA IF EXISTS {name} CASCADE"))
        admin.dispose()
