"""In-memory tables (`define table`), with `@PrimaryKey` and `@Index` lookups.

Rows keep insertion order. A primary key maps each key to its row; an index maps a
column value to the rows holding it. Operations take a chunk and apply event by event,
so a later event of the chunk sees the changes of an earlier one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

Row = tuple[Any, ...]
log = logging.getLogger(__name__)


class Table:
    def __init__(self, name: str, width: int, primary_key: list[int], indexes: list[int]) -> None:
        self.name = name
        self.width = width
        self.primary_key = primary_key
        self.indexes = indexes
        self._rows: dict[int, Row] = {}
        self._next = 0
        self._pk: dict[Any, int] = {}
        self._index: dict[int, dict[Any, dict[int, None]]] = {c: {} for c in indexes}
        self.violations = 0

    # ---- reading ----------------------------------------------------------------------

    def all_rows(self) -> list[Row]:
        return list(self._rows.values())

    def __len__(self) -> int:
        return len(self._rows)

    def pk_of(self, row: Row) -> Any:
        pk = self.primary_key
        return row[pk[0]] if len(pk) == 1 else tuple(row[i] for i in pk)

    def by_key(self, key: Any) -> list[Row]:
        rid = self._pk.get(key)
        return [] if rid is None else [self._rows[rid]]

    def by_index(self, column: int, value: Any) -> list[Row]:
        ids = self._index[column].get(value)
        return [] if not ids else [self._rows[i] for i in ids]

    def _ids_where(self, candidates: Iterable[int], pred: Callable[[Row], bool]) -> list[int]:
        rows = self._rows
        return [i for i in candidates if pred(rows[i])]

    # ---- writing ----------------------------------------------------------------------

    def _add(self, row: Row) -> bool:
        if self.primary_key:
            key = self.pk_of(row)
            if key in self._pk:
                self.violations += 1
                log.error("table %s: primary key %r already exists; row %r not inserted", self.name, key, row)
                return False
        rid = self._next
        self._next += 1
        self._rows[rid] = row
        if self.primary_key:
            self._pk[self.pk_of(row)] = rid
        for c, idx in self._index.items():
            idx.setdefault(row[c], {})[rid] = None
        return True

    def _remove(self, rid: int) -> None:
        row = self._rows.pop(rid)
        if self.primary_key:
            self._pk.pop(self.pk_of(row), None)
        for c, idx in self._index.items():
            bucket = idx.get(row[c])
            if bucket is not None:
                bucket.pop(rid, None)
                if not bucket:
                    del idx[row[c]]

    def _replace(self, rid: int, new: Row) -> bool:
        old = self._rows[rid]
        if self.primary_key:
            old_key, new_key = self.pk_of(old), self.pk_of(new)
            if new_key != old_key:
                if new_key in self._pk:
                    self.violations += 1
                    log.error(
                        "table %s: update would duplicate primary key %r; row left as it was",
                        self.name,
                        new_key,
                    )
                    return False
                del self._pk[old_key]
                self._pk[new_key] = rid
        for c, idx in self._index.items():
            if old[c] != new[c]:
                bucket = idx[old[c]]
                bucket.pop(rid, None)
                if not bucket:
                    del idx[old[c]]
                idx.setdefault(new[c], {})[rid] = None
        self._rows[rid] = new
        return True

    def insert(self, rows: Iterable[Row]) -> None:
        for row in rows:
            self._add(row)

    def matching_ids(
        self,
        event: Row,
        lookup: Callable[[Table, Row], Iterable[int] | None],
        pred: Callable[[Row, Row], bool],
    ) -> list[int]:
        candidates = lookup(self, event)
        ids = list(self._rows) if candidates is None else list(candidates)
        rows = self._rows
        return [i for i in ids if i in rows and pred(rows[i], event)]

    def ids_for_key(self, key: Any) -> list[int]:
        rid = self._pk.get(key)
        return [] if rid is None else [rid]

    def ids_for_index(self, column: int, value: Any) -> list[int]:
        return list(self._index[column].get(value, ()))

    def delete(self, events: Iterable[Row], lookup: Any, pred: Any) -> None:
        for event in events:
            for rid in self.matching_ids(event, lookup, pred):
                self._remove(rid)

    def update(self, events: Iterable[Row], lookup: Any, pred: Any, make: Callable[[Row, Row], Row]) -> None:
        for event in events:
            for rid in self.matching_ids(event, lookup, pred):
                self._replace(rid, make(self._rows[rid], event))

    def update_or_insert(
        self,
        events: Iterable[Row],
        lookup: Any,
        pred: Any,
        make: Callable[[Row, Row], Row],
        new_row: Callable[[Row], Row],
    ) -> None:
        for event in events:
            ids = self.matching_ids(event, lookup, pred)
            if ids:
                for rid in ids:
                    self._replace(rid, make(self._rows[rid], event))
            else:
                self._add(new_row(event))

    def contains(self, event: Row, lookup: Any, pred: Any) -> bool:
        candidates = lookup(self, event)
        rows = self._rows
        ids = rows if candidates is None else candidates
        return any(pred(rows[i], event) for i in ids if i in rows)

    def find(self, event: Row, lookup: Any, pred: Any) -> list[Row]:
        return [self._rows[i] for i in self.matching_ids(event, lookup, pred)]

    # ---- state ------------------------------------------------------------------------

    def snapshot(self) -> Any:
        return list(self._rows.values())

    def restore(self, state: Any) -> None:
        self._rows.clear()
        self._pk.clear()
        for idx in self._index.values():
            idx.clear()
        self._next = 0
        for row in state:
            self._add(tuple(row))
