"""The HA fencing hook: the fence runs inside the write transaction and can abort it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa

from adapters.output import RdbmsAdapter, build_adapter
from engine.errors import NotLeader

from .database import Database

COLUMNS = [{"name": "customer_name", "type": "VARCHAR(20)"}, {"name": "sum_order_id", "type": "BIGINT"}]


def start(db: Database, table: str) -> RdbmsAdapter:
    config = {"url": db.url, "table": table, "mode": "insert-or-update", "key_columns": ["customer_name"]}
    out = build_adapter("rdbms", "fenced", {**config, "create_table": True, "columns": COLUMNS})
    assert isinstance(out, RdbmsAdapter)
    db.adapters.append(out)
    out.start()
    return out


def test_a_fence_that_raises_aborts_the_write(db: Database, caplog: pytest.LogCaptureFixture) -> None:
    table = db.table_name("fenced")
    out = start(db, table)
    seen: list[Any] = []

    def deposed(conn: sa.Connection) -> None:
        seen.append(conn)
        raise NotLeader("lease epoch 7 was taken over by epoch 8")

    with caplog.at_level(logging.WARNING, logger="adapters.output.buffered"):
        out.publish([{"customer_name": "Tom", "sum_order_id": 1}], fence=deposed)
        assert out.flush(timeout=20)
    assert db.rows(table, "customer_name") == []
    assert len(seen) == 1 and isinstance(seen[0], sa.Connection)
    s = out.stats
    assert (s.fenced, s.written, s.rejected, s.pending) == (1, 0, 0, 0)
    assert any("epoch 8" in r.getMessage() for r in caplog.records)
    out.publish([{"customer_name": "Ann", "sum_order_id": 2}])  # unfenced records still flow
    assert out.flush(timeout=20)
    assert db.rows(table, "customer_name", "sum_order_id") == [("Ann", 2)]


def test_the_fence_shares_the_transaction_of_the_rows(db: Database) -> None:
    table, audit = db.table_name("rows"), db.table_name("audit")
    db.execute(f"CREATE TABLE {audit} (note VARCHAR(20))")
    out = start(db, table)

    def noting(note: str, fail: bool) -> Callable[[sa.Connection], None]:
        def fence(conn: sa.Connection) -> None:
            conn.execute(sa.text(f"INSERT INTO {audit} (note) VALUES (:note)"), {"note": note})
            if fail:
                raise NotLeader(note)

        return fence

    out.publish([{"customer_name": "Tom", "sum_order_id": 1}], fence=noting("kept", False))
    out.publish([{"customer_name": "Ann", "sum_order_id": 2}], fence=noting("rolled back", True))
    assert out.flush(timeout=20)
    assert db.rows(table, "customer_name") == [("Tom",)]
    assert db.rows(audit, "note") == [
        ("kept",)
    ]  # the failed fence's own insert was rolled back with the batch


def test_a_lease_epoch_check_lets_only_the_current_notifier_write(db: Database) -> None:
    table, lease = db.table_name("rows"), db.table_name("lease")
    db.execute(f"CREATE TABLE {lease} (plan VARCHAR(40) PRIMARY KEY, epoch BIGINT NOT NULL)")
    db.execute(f"INSERT INTO {lease} (plan, epoch) VALUES ('pizza', 3)")
    out = start(db, table)

    def holding(epoch: int) -> Callable[[sa.Connection], None]:
        def fence(conn: sa.Connection) -> None:
            current = conn.execute(sa.text(f"SELECT epoch FROM {lease} WHERE plan = 'pizza'")).scalar_one()
            if current != epoch:
                raise NotLeader(f"epoch {epoch} is stale (now {current})")

        return fence

    out.publish([{"customer_name": "Tom", "sum_order_id": 1}], fence=holding(3))
    assert out.flush(timeout=20)
    db.execute(f"UPDATE {lease} SET epoch = 4 WHERE plan = 'pizza'")  # another node took over
    out.publish([{"customer_name": "Tom", "sum_order_id": 99}], fence=holding(3))
    out.publish([{"customer_name": "Ann", "sum_order_id": 5}], fence=holding(4))
    assert out.flush(timeout=20)
    assert db.rows(table, "customer_name", "sum_order_id") == [("Ann", 5), ("Tom", 1)]
    assert out.stats.fenced == 1 and out.stats.written == 2
