"""The SQL of one batch, per execution mode, run on a connection inside the caller's transaction.

* `insert`: one multi-row INSERT (executemany) per run of rows with the same columns.
* `update`: `UPDATE t SET <other columns> WHERE <key columns match>` per row; rows that
  match nothing change nothing (counted as unmatched).
* `insert-or-update`: the same UPDATE; the rows it matched nothing for are then inserted.
  Portable — no dialect upsert — and idempotent, so a batch retried after an interrupted
  commit leaves the same table.

In the two key modes, rows of one batch with the same key are merged first (later values
win, column by column): the table ends up as if they had been applied in order, with one
statement per key. A null key value matches `IS NULL`. All statements are SQLAlchemy
constructs with bound parameters. Imports sibling modules only.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from adapters.output.rdbms.settings import Mode

Row = Mapping[str, Any]


@dataclass
class Outcome:
    inserted: int = 0
    updated: int = 0
    unmatched: int = 0  # update mode: rows whose key matched no row


def merge_by_key(rows: Sequence[Row], keys: Sequence[str]) -> list[dict[str, Any]]:
    """One row per key value, in order of first appearance, later columns overriding earlier ones."""
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        key = tuple(row[k] for k in keys)
        seen = merged.get(key)
        if seen is None:
            merged[key] = dict(row)
        else:
            seen.update(row)
    return list(merged.values())


def _columns_of(row: Row) -> tuple[str, ...]:
    return tuple(row)


def insert_rows(conn: sa.Connection, table: sa.TableClause, rows: Sequence[Row]) -> int:
    for _, group in itertools.groupby(rows, key=_columns_of):
        conn.execute(sa.insert(table), [dict(r) for r in group])
    return len(rows)


def _matches(conn: sa.Connection, table: sa.TableClause, row: Row, keys: Sequence[str]) -> int:
    """Update the row's key match with its other columns; how many rows matched."""
    where = sa.and_(*(table.c[k] == row[k] for k in keys))
    values = {c: v for c, v in row.items() if c not in keys}
    if values:
        return int(conn.execute(sa.update(table).where(where).values(values)).rowcount)
    # only key columns: nothing to update, the question is whether the row exists
    found = conn.execute(sa.select(sa.literal(1)).select_from(table).where(where).limit(1)).first()
    return 0 if found is None else 1


def write_rows(
    conn: sa.Connection, table: sa.TableClause, mode: Mode, keys: Sequence[str], rows: Sequence[Row]
) -> Outcome:
    """Apply `rows` to `table` as `mode` says; the caller owns the transaction."""
    outcome = Outcome()
    if mode is Mode.INSERT:
        outcome.inserted = insert_rows(conn, table, rows)
        return outcome
    missing: list[dict[str, Any]] = []
    for row in merge_by_key(rows, keys):
        if _matches(conn, table, row, keys):
            outcome.updated += 1
        elif mode is Mode.INSERT_OR_UPDATE:
            missing.append(row)
        else:
            outcome.unmatched += 1
    if missing:
        outcome.inserted = insert_rows(conn, table, missing)
    return outcome
