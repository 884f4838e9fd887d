"""Reading and writing registry entities on one connection, inside one transaction.

`Store` is what `Registry.transaction()` hands out. Writes bump the global revision once per
transaction (all changes of one transaction share it), stamp the rows they change, and record
each (kind, name) in the change log, deletions included. Writers serialise on the counter row
(`SELECT ... FOR UPDATE`; SQLite takes its write lock at BEGIN), so a node that has read
revision N has seen every change up to N. References (plan ↔ streams, formatter → stream and
adapter, rdbms adapter → data source) are checked by `verify()` before commit, so the entities
of one change set may be written in any order. Imports the registry's values, kinds and tables.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import sqlalchemy as sa

from app.registry import schema
from app.registry.errors import RegistryError, SchemaError
from app.registry.kinds import Kind

E = TypeVar("E")


class Outcome(enum.StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class Change:
    """The last change to one entity: `kind` is user|stream|plan|receiver|datasource|adapter|formatter."""

    revision: int
    kind: str
    name: str
    deleted: bool


class StoreBase:
    """Generic get/list/put/delete of any kind, the change log and the counter."""

    def __init__(self, conn: sa.Connection, *, writable: bool) -> None:
        self.conn = conn
        self.writable = writable
        self._revision: int | None = None  # this transaction's revision, once something changed
        self.touched: set[tuple[str, str]] = set()  # (kind, key) written or deleted
        if writable:
            # serialise writers; on SQLite BEGIN IMMEDIATE already holds the write lock
            query = sa.select(schema.revision_counter.c.value).where(schema.revision_counter.c.id == 1)
            try:
                counter = conn.execute(query.with_for_update()).first()
            except sa.exc.DBAPIError as exc:
                if "cep_revision" not in str(exc.orig):
                    raise
                counter = None
            if counter is None:
                msg = "the registry has no schema yet; run `cepheus db upgrade`"
                raise SchemaError(msg)

    # ---- revisions ------------------------------------------------------------------------

    def revision(self) -> int:
        """The revision of the last committed change (0 for an empty registry)."""
        value = self.conn.execute(
            sa.select(schema.revision_counter.c.value).where(schema.revision_counter.c.id == 1)
        ).scalar_one_or_none()
        return int(value or 0)

    def changes_since(self, revision: int) -> list[Change]:
        """Every entity whose last change came after `revision`, oldest change first."""
        c = schema.changes.c
        rows = self.conn.execute(
            sa.select(c.revision, c.kind, c.name, c.deleted)
            .where(c.revision > revision)
            .order_by(c.revision, c.kind, c.name)
        )
        return [Change(int(r.revision), r.kind, r.name, bool(r.deleted)) for r in rows]

    def _next_revision(self) -> int:
        if not self.writable:
            msg = "this registry connection is read-only; use Registry.transaction() to write"
            raise RegistryError(msg)
        if self._revision is None:
            counter = schema.revision_counter
            self.conn.execute(sa.update(counter).where(counter.c.id == 1).values(value=counter.c.value + 1))
            self._revision = int(
                self.conn.execute(sa.select(counter.c.value).where(counter.c.id == 1)).scalar_one()
            )
        return self._revision

    def _record(self, kind: str, key: str, deleted: bool) -> None:
        revision = self._next_revision()
        c = schema.changes.c
        updated = self.conn.execute(
            sa.update(schema.changes)
            .where(c.kind == kind, c.name == key)
            .values(revision=revision, deleted=deleted)
        )
        if updated.rowcount == 0:
            self.conn.execute(
                sa.insert(schema.changes).values(kind=kind, name=key, revision=revision, deleted=deleted)
            )
        self.touched.add((kind, key))

    # ---- generic entity access ------------------------------------------------------------

    def get(self, kind: Kind[E], key: str) -> E | None:
        row = self.conn.execute(sa.select(kind.table).where(kind.key_col == key)).mappings().first()
        return None if row is None else kind.from_row(row)

    def list(self, kind: Kind[E]) -> list[E]:
        # sorted here, not by the database: collations differ between MySQL, PostgreSQL and SQLite
        entities = [kind.from_row(row) for row in self.conn.execute(sa.select(kind.table)).mappings()]
        return sorted(entities, key=kind.key)

    def put(self, kind: Kind[E], entity: E) -> Outcome:
        """Create or replace `entity` (already checked); unchanged values write nothing."""
        key = kind.key(entity)
        existing = self.get(kind, key)
        if existing == entity:
            return Outcome.UNCHANGED
        self._record(kind.name, key, deleted=False)
        row: dict[str, Any] = kind.to_row(entity) | {"revision": self._next_revision()}
        if existing is None:
            self.conn.execute(sa.insert(kind.table).values(row))
            return Outcome.CREATED
        self.conn.execute(sa.update(kind.table).where(kind.key_col == key).values(row))
        return Outcome.UPDATED

    def delete(self, kind: Kind[E], key: str) -> bool:
        """Delete one entity; False if there was none."""
        if self.get(kind, key) is None:
            return False
        self._record(kind.name, key, deleted=True)
        self.conn.execute(sa.delete(kind.table).where(kind.key_col == key))
        return True

    def touched_keys(self, kind: Kind[Any]) -> Iterable[str]:
        return sorted(key for k, key in self.touched if k == kind.name)
