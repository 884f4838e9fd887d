"""Names and types of the target table: identifier rules, declared column types, the SQLAlchemy `Table`.

Table and column names come from configuration (and column names from records), so
they are checked against `IDENTIFIER` before anything is built (and again by `quoted`),
and then only ever reach SQL as SQLAlchemy identifiers marked to be always quoted, in
the dialect's way (`"x"`, `` `x` ``) — never pasted into SQL text. Use lowercase names: PostgreSQL folds unquoted names to lowercase, and
SQLAlchemy quotes mixed-case ones, so `Orders` and `orders` are different tables there.

Declared types (`columns[i].type`) map to SQLAlchemy types, which render per dialect
(`DOUBLE` is `DOUBLE PRECISION` on PostgreSQL). Imports `formatters.values` only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql import quoted_name
from sqlalchemy.types import TypeEngine

from formatters.values import parse_type_name

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
IDENTIFIER_RULE = "a letter or _ followed by up to 62 letters, digits or _"


def is_identifier(name: object) -> bool:
    return isinstance(name, str) and IDENTIFIER.match(name) is not None


def _sized(
    make: Callable[[int], TypeEngine[Any]], default: int | None = None
) -> Callable[[tuple[int, ...]], TypeEngine[Any]]:
    def build(args: tuple[int, ...]) -> TypeEngine[Any]:
        if len(args) > 1:
            msg = "takes one length"
            raise ValueError(msg)
        if not args and default is None:
            msg = "needs a length, e.g. VARCHAR(64)"
            raise ValueError(msg)
        length = args[0] if args else default
        assert length is not None
        if not 0 < length <= 65_535:
            msg = f"length {length} is out of range"
            raise ValueError(msg)
        return make(length)

    return build


def _plain(make: Callable[[], TypeEngine[Any]]) -> Callable[[tuple[int, ...]], TypeEngine[Any]]:
    def build(args: tuple[int, ...]) -> TypeEngine[Any]:
        if args:
            msg = "takes no length"
            raise ValueError(msg)
        return make()

    return build


def _numeric(args: tuple[int, ...]) -> TypeEngine[Any]:
    if not args:
        return sa.Numeric()
    precision, scale = args[0], args[1] if len(args) > 1 else 0
    if not 0 < precision <= 65 or not 0 <= scale <= precision:
        msg = f"precision {precision} and scale {scale} are out of range"
        raise ValueError(msg)
    return sa.Numeric(precision, scale)


_TYPES: dict[str, Callable[[tuple[int, ...]], TypeEngine[Any]]] = {
    "bigint": _plain(sa.BigInteger),
    "long": _plain(sa.BigInteger),
    "integer": _plain(sa.Integer),
    "int": _plain(sa.Integer),
    "smallint": _plain(sa.SmallInteger),
    "varchar": _sized(sa.String),
    "string": _sized(sa.String, 255),
    "char": _sized(sa.CHAR, 1),
    "text": _plain(sa.Text),
    "double": _plain(sa.Double),
    "double precision": _plain(sa.Double),
    "float": _plain(sa.Float),
    "real": _plain(sa.REAL),
    "decimal": _numeric,
    "numeric": _numeric,
    "boolean": _plain(sa.Boolean),
    "bool": _plain(sa.Boolean),
}

COLUMN_TYPES = tuple(_TYPES)


def column_type(declared: str) -> TypeEngine[Any]:
    """The SQLAlchemy type for a declared type; ValueError with the reason when unknown or malformed."""
    parsed = parse_type_name(declared)
    if parsed is None or parsed[0] not in _TYPES:
        msg = f"unknown column type {declared!r} (known: {', '.join(t.upper() for t in COLUMN_TYPES)})"
        raise ValueError(msg)
    base, args = parsed
    try:
        return _TYPES[base](args)
    except ValueError as exc:
        msg = f"{declared!r}: {base.upper()} {exc}"
        raise ValueError(msg) from None


def build_table(
    name: str,
    schema: str | None,
    columns: Sequence[tuple[str, TypeEngine[Any]]],
    primary_key: Sequence[str] = (),
) -> sa.Table:
    """The table as SQLAlchemy sees it; `primary_key` columns form its (composite) primary key."""
    metadata = sa.MetaData()
    cols = [sa.Column(quoted(c), t, primary_key=c in primary_key, autoincrement=False) for c, t in columns]
    return sa.Table(quoted(name), metadata, *cols, schema=quoted(schema) if schema else None)


def lightweight_table(name: str, schema: str | None, columns: Sequence[str]) -> sa.TableClause:
    """A table with untyped columns, for when the config declares no columns."""
    return sa.table(
        quoted(name), *(sa.column(quoted(c)) for c in columns), schema=quoted(schema) if schema else None
    )


def quoted(name: str) -> quoted_name:
    """The name as an identifier SQLAlchemy always quotes (for checked names this changes no meaning)."""
    if not is_identifier(name):
        msg = f"{name!r} is not a valid identifier ({IDENTIFIER_RULE})"
        raise ValueError(msg)
    return quoted_name(name, True)
