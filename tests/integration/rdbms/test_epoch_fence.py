"""The sink's fence of a notifier lease: a write under an older epoch than one that has
written is refused by the database, and a new epoch's first write waits for an old write in
flight. On SQLite, MariaDB and PostgreSQL (the waiting on the two servers)."""

from __future__ import annotations

import logging
import threading
import time
import uuid

import pytest
import sqlalchemy as sa

from adapters.output import RdbmsAdapter, build_adapter
from adapters.output.rdbms.epoch_fence import IDLE_LIMIT_S, EpochFence

from .database import Database

COLUMNS = [{"name": "k", "type": "BIGINT"}]


def start(db: Database, table: str) -> RdbmsAdapter:
    out = build_adapter(
        "rdbms", "out", {"url": db.url, "table": table, "create_table": True, "columns": COLUMNS}
    )
    assert isinstance(out, RdbmsAdapter)
    db.adapters.append(out)
    out.start()
    return out


def stored_epoch(db: Database, plan: str) -> int | None:
    with db.engine.connect() as conn:
        return conn.execute(sa.text("SELECT epoch FROM cepheus_fence WHERE plan = :p"), {"p": plan}).scalar()


def test_a_write_under_an_older_epoch_is_refused_once_a_newer_one_wrote(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    plan, table = f"plan-{uuid.uuid4().hex[:8]}", db.table_name("fenced")
    out = start(db, table)
    out.publish([{"k": 1}], fence=EpochFence(plan, 1))
    assert out.flush(timeout=20)
    assert stored_epoch(db, plan) == 1
    out.publish([{"k": 2}], fence=EpochFence(plan, 2))  # a new notifier's first write raises it
    assert out.flush(timeout=20)
    with caplog.at_level(logging.WARNING, logger="adapters.output.buffered"):
        out.publish([{"k": 3}], fence=EpochFence(plan, 1))  # the old one wakes up and writes
        assert out.flush(timeout=20)
    assert db.rows(table, "k") == [(1,), (2,)]
    assert out.stats.fenced == 1 and stored_epoch(db, plan) == 2
    assert any("epoch 2 has written since" in r.getMessage() for r in caplog.records)


def test_fences_of_two_plans_are_independent(db: Database) -> None:
    a, b, table = f"a-{uuid.uuid4().hex[:8]}", f"b-{uuid.uuid4().hex[:8]}", db.table_name("fenced")
    out = start(db, table)
    out.publish([{"k": 1}], fence=EpochFence(a, 5))
    out.publish([{"k": 2}], fence=EpochFence(b, 1))
    assert out.flush(timeout=20)
    assert db.rows(table, "k") == [(1,), (2,)] and out.stats.fenced == 0


def test_a_new_epoch_waits_for_a_write_in_flight_and_then_fences_it_off(net_db: Database) -> None:
    db, plan, table = net_db, f"plan-{uuid.uuid4().hex[:8]}", net_db.table_name("fenced")
    out = start(db, table)
    out.publish([{"k": 0}], fence=EpochFence(plan, 1))
    assert out.flush(timeout=20)
    old = db.engine.connect()
    in_flight = old.begin()
    EpochFence(plan, 1)(old)  # the old notifier's write has passed its fence and holds the row
    old.execute(sa.text(f"INSERT INTO {table} (k) VALUES (1)"))
    done = threading.Event()

    def new_notifier() -> None:
        out.publish([{"k": 2}], fence=EpochFence(plan, 2))
        out.flush(timeout=30)
        done.set()

    thread = threading.Thread(target=new_notifier)
    thread.start()
    time.sleep(0.5)
    assert not done.is_set()  # waiting on the row lock, not racing the write in flight
    in_flight.commit()
    thread.join(30)
    assert done.is_set()
    assert db.rows(table, "k") == [(0,), (1,), (2,)] and stored_epoch(db, plan) == 2
    late = old.begin()
    with pytest.raises(Exception, match="epoch 2 has written since"):
        EpochFence(plan, 1)(old)
    late.rollback()
    old.close()


def test_a_write_frozen_in_flight_is_dropped_by_the_database_and_never_commits(net_db: Database) -> None:
    """A notifier paused in the middle of a write does not block the next notifier for as long as
    it stays paused, and its rows, checked under a lease long gone, never commit."""
    db, plan, table = net_db, f"plan-{uuid.uuid4().hex[:8]}", net_db.table_name("fenced")
    out = start(db, table)
    out.publish([{"k": 0}], fence=EpochFence(plan, 1))
    assert out.flush(timeout=20)
    old = db.engine.connect()
    frozen = old.begin()
    EpochFence(plan, 1)(old)
    old.execute(sa.text(f"INSERT INTO {table} (k) VALUES (1)"))  # then nothing: the process is stopped
    asked = time.monotonic()
    out.publish([{"k": 2}], fence=EpochFence(plan, 2))
    assert out.flush(timeout=30)
    waited = time.monotonic() - asked
    assert waited < IDLE_LIMIT_S + 2.0, f"the new notifier's first write waited {waited:.1f} s"
    time.sleep(0.5)
    with pytest.raises(sa.exc.DBAPIError):  # the process wakes up and commits: the database dropped it
        old.execute(sa.text(f"INSERT INTO {table} (k) VALUES (3)"))
        frozen.commit()
    old.invalidate()
    old.close()
    assert db.rows(table, "k") == [(0,), (2,)] and stored_epoch(db, plan) == 2
