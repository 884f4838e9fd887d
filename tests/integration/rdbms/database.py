"""`Database`: one test database with uniquely named tables, dropped at the end, and reads for assertions."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from adapters.output import OutputAdapter


class Database:
    """One test database: unique table names, dropped at the end; reads for the assertions."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = sa.create_engine(url)
        self.tables: list[str] = []
        self.adapters: list[OutputAdapter] = []

    def table_name(self, stem: str = "t") -> str:
        name = f"{stem}_{uuid.uuid4().hex[:10]}"
        self.tables.append(name)
        return name

    def execute(self, sql: str, **params: Any) -> None:
        with self.engine.begin() as conn:
            conn.execute(sa.text(sql), params)

    def rows(self, table: str, *columns: str) -> list[tuple[Any, ...]]:
        t = sa.table(table, *(sa.column(c) for c in columns))
        query = sa.select(*(t.c[c] for c in columns)).order_by(*(t.c[c] for c in columns))
        with self.engine.connect() as conn:
            return [tuple(r) for r in conn.execute(query)]

    def close(self) -> None:
        for adapter in self.adapters:
            adapter.stop(timeout=5)
        with self.engine.begin() as conn:
            for name in self.tables:
                sa.Table(name, sa.MetaData()).drop(conn, checkfirst=True)
        self.engine.dispose()
