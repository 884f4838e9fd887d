"""In-memory tables (`define table`), with `@PrimaryKey` and `@Index` lookups.

Rows keep insertion order. A primary key maps each key to its row; an index maps a
column value to the rows holding it. Operations take a chunk and apply event by event,
so a later event of the chunk sees the changes of an earlier one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from engine.runtime.helpers import java_number_str

Row = tuple[Any, ...]
log = logging.getLogger(__name__)


def java_string_hash(text: str) -> int:
    h = 0
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] | data[i + 1] << 8)) & 0xFFFFFFFF
    return h


def java_str(value: Any, is_float: bool) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_number_str(value, is_float)
    return str(value)


class Table:
    """`key_order` is how Siddhi iterates the rows: "insertion", "numeric" (a TreeMap on a
    single numeric key) or "hash" (a Java HashMap on a string, bool or composite key)."""

    def __init__(
        self,
        name: str,
        width: int,
        primary_key: list[int],
        indexes: list[int],
        key_order: str = "insertion",
        float_columns: frozenset[int] = frozenset(),
    ) -> None:
        self.name = name
        self.width = width
        self.primary_key = primary_key
        self.indexes = indexes
        self._keyed = sorted({*primary_key, *indexes})  # Siddhi's indexed columns, by position
        self.key_order = key_order
        self.float_columns = float_columns
        self._capacity = 16  # of Siddhi's HashMap: doubles past 3/4 full, never shrinks
        self._rows: dict[int, Row] = {}
        self._next = 0
        self._pk: dict[Any, int] = {}
        self._index: dict[int, dict[Any, dict[int, None]]] = {c: {} for c in indexes}
        self.violations = 0

    # ---- reading ----------------------------------------------------------------------

    def all_rows(self) -> list[Row]:
        if self.key_order == "insertion":
            return list(self._rows.values())
        return [self._rows[i] for i in self.scan_ids()]

    def scan_ids(self) -> list[int]:
        """Row ids in the order Siddhi's table would iterate them."""
        if self.key_order == "numeric":
            return [rid for _, rid in sorted(self._pk.items(), key=lambda kv: kv[0])]
        if self.key_order == "hash":
            mask = self._capacity - 1

            def bucket(item: tuple[Any, int]) -> tuple[int, int]:
                h = self._java_hash(item[0])
                return ((h ^ (h >> 16)) & mask, item[1])

            return [rid for _, rid in sorted(self._pk.items(), key=bucket)]
        return list(self._rows)

    def _java_hash(self, key: Any) -> int:
        pk = self.primary_key
        if len(pk) == 1:
            if isinstance(key, bool):
                return 1231 if key else 1237
            return java_string_hash(java_str(key, pk[0] in self.float_columns))
        text = "".join(java_str(v, c in self.float_columns) + ":-:" for v, c in zip(key, pk, strict=True))
        return java_string_hash(text)

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
            if len(self._pk) > self._capacity * 3 // 4:
                self._capacity *= 2
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
        ids = self.scan_ids() if candidates is None else list(candidates)
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
            ids = self.matching_ids(event, lookup, pred)
            if ids:
                self._update_rows(ids, event, make)

    def _update_rows(self, ids: list[int], event: Row, make: Callable[[Row, Row], Row]) -> None:
        """Update the rows one event matched, as Siddhi's IndexOperator does: when a key or
        indexed column changes, the event's update is all or nothing (a new primary key that
        another row, or another updated row, holds fails it) and the rows are re-added."""
        rows = self._rows
        new_rows = [make(rows[rid], event) for rid in ids]
        keyed = self._keyed
        if not keyed:
            for rid, new in zip(ids, new_rows, strict=True):
                rows[rid] = new
            return
        single_pk = self.primary_key[0] if len(self.primary_key) == 1 else None
        re_add = False
        for col in keyed:
            keys = set(self._pk) if col == single_pk else None
            for rid, new in zip(ids, new_rows, strict=True):
                old_value, new_value = rows[rid][col], new[col]
                if old_value is None or new_value is None or old_value == new_value:
                    continue
                re_add = True
                if not keys:
                    break
                keys.discard(old_value)
                if new_value in keys:
                    self.violations += 1
                    log.error(
                        "table %s: update would duplicate primary key %r; no row updated for event %r",
                        self.name,
                        new_value,
                        event,
                    )
                    return
                keys.add(new_value)
            if re_add:
                break
        if re_add:
            for rid in ids:
                self._remove(rid)
            for new in new_rows:
                self._add(new)
        else:
            for rid, new in zip(ids, new_rows, strict=True):
                self._replace(rid, new)

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
                self._update_rows(ids, event, make)
            else:
                self._add(new_row(event))

    def overwrite(self, rows: Iterable[Row]) -> None:
        """`update or insert` on exactly the primary key: each row replaces the row with its
        key, or is added (Siddhi's overwrite operator; a `set` clause does not apply)."""
        pk = self.primary_key
        pk_map = self._pk
        stored = self._rows
        if len(pk) == 1 and not self._index:
            col = pk[0]
            for row in rows:
                rid = pk_map.get(row[col])
                if rid is None:
                    self._add(row)
                else:
                    stored[rid] = row
            return
        for row in rows:
            rid = pk_map.get(self.pk_of(row))
            if rid is None:
                self._add(row)
            else:
                self._replace(rid, row)

    def contains(self, event: Row, lookup: Any, pred: Any) -> bool:
        candidates = lookup(self, event)
        rows = self._rows
        ids = rows if candidates is None else candidates
        return any(pred(rows[i], event) for i in ids if i in rows)

    def find(self, event: Row, lookup: Any, pred: Any) -> list[Row]:
        return [self._rows[i] for i in self.matching_ids(event, lookup, pred)]

    # ---- state ------------------------------------------------------------------------

    def snapshot(self) -> Any:
        return {
            "rows": [[rid, row] for rid, row in self._rows.items()],
            "next": self._next,
            "capacity": self._capacity,
        }

    def restore(self, state: Any) -> None:
        self._rows.clear()
        self._pk.clear()
        for idx in self._index.values():
            idx.clear()
        for rid, row in state["rows"]:
            self._next = rid
            self._add(tuple(row))
        self._next = state["next"]
        self._capacity = state["capacity"]
