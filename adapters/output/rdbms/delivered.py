"""The `cepheus_delivered` table: per source, the origin of the last record written to this database.

A replay after a restart regenerates the outputs of a plan with the same origins
(`adapters.output.base.Origin`). Inside the transaction that writes a batch, after the
fence and before the rows, the adapter locks the batch's sources' rows here
(`SELECT … FOR UPDATE`; SQLite has no such clause, but serialises writers: an empty UPDATE
first makes the transaction a writer, so the read already holds the database's write lock),
drops the records whose origin is not past the stored one (`keep_new`, a run of origins at a
time), writes the rest
and stores the newest origin per source (`store_marks`). A writer whose marks nobody else
moved skips the read: one conditional UPDATE per source (`claim_marks`) both checks and moves
its mark, and a miss (`MarkRace`) sends the batch back the locked-read way. Rows and marks commit or roll
back together, so neither a replay nor a retried commit writes a record twice.

    source      VARCHAR(200) primary key   (MySQL/MariaDB: utf8mb4_bin, so case counts)
    log_id      VARCHAR(64)
    position    BIGINT
    idx         BIGINT
    updated_at  DATETIME / TIMESTAMP       (the database's clock)

A different log_id replaces the row: a new log never replays the old one's records.
Imports `adapters.output.base` and sibling modules only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import mysql

from adapters.output.base import MAX_LOG_ID, MAX_SOURCE, Origin, Run
from adapters.output.rdbms.schema import quoted

DELIVERED_TABLE = "cepheus_delivered"

T = TypeVar("T")


class MarkRace(Exception):
    """Another writer inserted a source's row after this transaction found none; try the batch again."""


def delivered_table(schema: str | None) -> sa.Table:
    """The table as SQLAlchemy sees it, in `schema` (the adapter's) when given."""
    source_type = sa.String(MAX_SOURCE).with_variant(
        mysql.VARCHAR(MAX_SOURCE, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb"
    )
    return sa.Table(
        quoted(DELIVERED_TABLE),
        sa.MetaData(),
        sa.Column(quoted("source"), source_type, primary_key=True, autoincrement=False),
        sa.Column(quoted("log_id"), sa.String(MAX_LOG_ID), nullable=False),
        sa.Column(quoted("position"), sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column(quoted("idx"), sa.BigInteger, nullable=False, autoincrement=False),
        sa.Column(quoted("updated_at"), sa.DateTime, nullable=False),
        schema=quoted(schema) if schema else None,
    )


def lock_for_writing(conn: sa.Connection, table: sa.Table) -> None:
    """SQLite: start being a writer now, so that what the transaction reads next cannot go
    stale (its driver begins a transaction only at the first write, and SQLite has no
    `FOR UPDATE`). Other databases lock the rows they read `FOR UPDATE` instead."""
    if conn.dialect.name == "sqlite":
        column = next(iter(table.c))
        conn.execute(sa.update(table).where(sa.false()).values({column: column}))


def read_marks(conn: sa.Connection, table: sa.Table, sources: Iterable[str]) -> dict[str, Origin]:
    """The stored origin of each of `sources` that has one, their rows locked until the transaction ends."""
    wanted = sorted(set(sources))  # one lock order for every writer
    c = table.c
    lock_for_writing(conn, table)
    query = (
        sa.select(c.source, c.log_id, c.position, c.idx)
        .where(c.source.in_(wanted))
        .order_by(c.source)
        .with_for_update()  # rendered as nothing on SQLite
    )
    marks: dict[str, Origin] = {}
    for source, log_id, position, idx in conn.execute(query):
        marks[source] = Origin(source, log_id, int(position), int(idx))
    return marks


def keep_new(
    records: Sequence[T], runs: Sequence[Run], marks: Mapping[str, Origin]
) -> tuple[list[T], dict[str, Origin]]:
    """The records to write, in order, and the marks to store after them.

    A record is dropped when its origin does not follow the last one written for its source
    (stored, or earlier in this batch); records without an origin are always kept. Compared a
    run at a time: the records a mark covers are a run's first ones (`Origin.covered`), so a
    run the table has a part of is split where that part ends.
    """
    last = dict(marks)
    kept: list[T] | None = None  # until a record is dropped: all of them
    at = 0
    for origin, count in runs:
        skip = 0
        if origin is not None:
            skip = origin.covered(last.get(origin.source), count)
            if skip < count:
                last[origin.source] = origin.nth(count - 1)
        if skip and kept is None:
            kept = list(records[:at])
        if kept is not None:
            kept.extend(records[at + skip : at + count])
        at += count
    return (list(records) if kept is None else kept), last


def store_marks(
    conn: sa.Connection, table: sa.Table, before: Mapping[str, Origin], after: Mapping[str, Origin]
) -> None:
    """Write the marks that changed from `before` (as read, locked) to `after`."""
    c = table.c
    for source in sorted(after):
        origin = after[source]
        if before.get(source) == origin:
            continue
        values: dict[str, Any] = {
            "log_id": origin.log_id,
            "position": origin.position,
            "idx": origin.index,
            "updated_at": sa.func.current_timestamp(),
        }
        if source in before:
            conn.execute(sa.update(table).where(c.source == source).values(values))
            continue
        try:
            conn.execute(sa.insert(table).values(source=source, **values))
        except sa_exc.IntegrityError as exc:
            msg = f"another writer recorded source {source!r} in {DELIVERED_TABLE} meanwhile"
            raise MarkRace(msg) from exc


def claim_marks(
    conn: sa.Connection, table: sa.Table, known: Mapping[str, Origin], after: Mapping[str, Origin]
) -> None:
    """Store `after` over the marks this writer stored last (`known`), in one conditional
    UPDATE per changed source: the fast path of a writer whose marks nobody else moved. The
    UPDATE locks the row as `read_marks` would; `MarkRace` when a row is not as `known` says
    (another writer moved it): the caller rolls back and goes the `read_marks` way."""
    statement = _claim_statement(table)
    for source in sorted(after):
        origin, was = after[source], known[source]
        if origin == was:
            continue
        result = conn.execute(
            statement,
            {
                "s": source, "was_log": was.log_id, "was_pos": was.position, "was_idx": was.index,
                "log": origin.log_id, "pos": origin.position, "idx_": origin.index,
            },
        )  # fmt: skip
        if result.rowcount != 1:
            msg = f"another writer moved the mark of source {source!r} in {DELIVERED_TABLE}"
            raise MarkRace(msg)


_CLAIMS: dict[tuple[str | None, str], sa.Update] = {}


def _claim_statement(table: sa.Table) -> sa.Update:
    """The conditional UPDATE of `claim_marks`, built once per table (this runs per batch)."""
    key = (table.schema, table.name)
    found = _CLAIMS.get(key)
    if found is None:
        c, bind = table.c, sa.bindparam
        found = (
            sa.update(table)
            .where(
                c.source == bind("s"),
                c.log_id == bind("was_log"),
                c.position == bind("was_pos"),
                c.idx == bind("was_idx"),
            )
            .values(
                log_id=bind("log"),
                position=bind("pos"),
                idx=bind("idx_"),
                updated_at=sa.func.current_timestamp(),
            )
        )
        _CLAIMS[key] = found
    return found
