"""The RDBMS adapter's configuration, read and checked once; errors name the key.

Keys (see docs/adapters.md):
    datasource = "pizzaDB"        a name from the node's data sources (name → SQLAlchemy URL)
    url = "mysql+pymysql://..."   or the URL itself (exactly one of the two)
    table = "delivered_orders"    schema = "..." (optional)
    mode = "insert" | "update" | "insert-or-update"
    key_columns = ["customer_name"]          required for update and insert-or-update
    columns = [{name = "sum_order_id", type = "BIGINT"}, ...]
        optional; when given, records may only carry these columns; required by create_table
    create_table = false          create the table (primary key = key_columns) when missing
    timeout_s = 10                connect (and MySQL read/write) timeout
    buffer_events, batch_events, retry_initial_ms, retry_max_ms, overflow_log_seconds,
    on_full ("block": a full buffer pushes back on the input; "drop": refuses records)

Imports `formatters.config` and sibling modules only.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.types import TypeEngine

from adapters.output.buffered import Buffering
from adapters.output.rdbms.schema import IDENTIFIER_RULE, column_type, is_identifier
from formatters.config import Settings


class Mode(enum.Enum):
    INSERT = "insert"
    UPDATE = "update"
    INSERT_OR_UPDATE = "insert-or-update"


MODES = tuple(m.value for m in Mode)


@dataclass(frozen=True)
class RdbmsSettings:
    url: sa.URL
    table: str
    schema: str | None
    mode: Mode
    key_columns: tuple[str, ...]
    columns: tuple[tuple[str, TypeEngine[Any]], ...]  # declared columns, maybe none
    create_table: bool
    timeout_s: float
    buffering: Buffering

    @property
    def column_names(self) -> frozenset[str]:
        return frozenset(c for c, _ in self.columns)

    @classmethod
    def read(cls, settings: Settings, datasources: Mapping[str, str | sa.URL]) -> RdbmsSettings:
        url = _url(settings, datasources)
        table = _identifier(settings, "table", settings.string("table"))
        schema = settings.optional_string("schema")
        if schema is not None:
            _identifier(settings, "schema", schema)
        mode_text = settings.string("mode", Mode.INSERT.value).replace("_", "-")
        if mode_text not in MODES:
            settings.fail("mode", f"must be one of {', '.join(MODES)}; got {mode_text!r}")
        mode = Mode(mode_text)
        keys = settings.strings("key_columns", ())
        for i, key in enumerate(keys):
            _identifier(settings, f"key_columns[{i}]", key)
        if len(set(keys)) != len(keys):
            settings.fail("key_columns", "lists a column twice")
        if mode is not Mode.INSERT and not keys:
            settings.fail("key_columns", f"mode {mode.value} needs at least one key column")
        columns: list[tuple[str, TypeEngine[Any]]] = []
        for entry in settings.tables("columns", ()):
            name = _identifier(entry, "name", entry.string("name"))
            declared = entry.string("type")
            try:
                kind = column_type(declared)
            except ValueError as exc:
                entry.fail("type", str(exc))
            if any(name == c for c, _ in columns):
                entry.fail("name", f"column {name!r} is declared twice")
            entry.done()
            columns.append((name, kind))
        create = settings.boolean("create_table", False)
        if create and not columns:
            settings.fail("create_table", "needs `columns` with a name and type for each column")
        declared_names = {c for c, _ in columns}
        for i, key in enumerate(keys):
            if columns and key not in declared_names:
                settings.fail(f"key_columns[{i}]", f"{key!r} is not one of the declared columns")
        if columns and mode is Mode.UPDATE and not declared_names - set(keys):
            settings.fail("columns", "mode update needs at least one column besides the key columns")
        timeout = settings.number("timeout_s", 10.0, minimum=1.0)
        buffering = Buffering.read(settings)
        return cls(url, table, schema, mode, tuple(keys), tuple(columns), create, timeout, buffering)


def _identifier(settings: Settings, key: str, name: str) -> str:
    if not is_identifier(name):
        settings.fail(key, f"{name!r} is not a valid identifier ({IDENTIFIER_RULE})")
    return name


def _url(settings: Settings, datasources: Mapping[str, str | sa.URL]) -> sa.URL:
    name = settings.optional_string("datasource")
    direct = settings.optional_string("url")
    if (name is None) == (direct is None):
        settings.fail("datasource", "give exactly one of `datasource` (a data source name) or `url`")
    key = "datasource" if name is not None else "url"
    if name is not None:
        if name not in datasources:
            known = ", ".join(sorted(datasources)) or "none are defined"
            settings.fail("datasource", f"unknown data source {name!r} (known: {known})")
        raw: str | sa.URL = datasources[name]
    else:
        assert direct is not None
        raw = direct
    try:
        url = sa.make_url(raw)
        url.get_dialect()
    except (ArgumentError, NoSuchModuleError, ValueError) as exc:
        settings.fail(key, f"not a usable SQLAlchemy URL: {exc}")
    return url
