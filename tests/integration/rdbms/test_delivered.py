"""Replay protection: records with origins reach the table once, whatever is replayed or retried.

Each test on MariaDB and PostgreSQL runs in a schema (database) of its own, dropped at the
end, so it sees `cepheus_delivered` created on first need and never meets another test's
marks; on SQLite every test has a database file of its own.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa

from adapters.output import AdapterStats, Origin, RdbmsAdapter, build_adapter
from engine.errors import NotLeader

from .database import Database

COLUMNS = [{"name": "k", "type": "BIGINT"}, {"name": "v", "type": "VARCHAR(20)"}]
SOURCE = "pizza/deliveredOrders/toTable"


@dataclass
class Place:
    """Where a test writes: its database and the schema of its tables (None: the default one)."""

    db: Database
    schema: str | None

    def adapter(self, table: str, name: str = "out", **config: Any) -> RdbmsAdapter:
        settings = {"url": self.db.url, "table": table, "create_table": True, "columns": COLUMNS}
        if self.schema is not None:
            settings["schema"] = self.schema
        out = build_adapter("rdbms", name, {**settings, **config})
        assert isinstance(out, RdbmsAdapter)
        self.db.adapters.append(out)
        out.start()
        return out

    def table(self, name: str) -> sa.Table:
        return sa.Table(name, sa.MetaData(), autoload_with=self.db.engine, schema=self.schema)

    def rows(self, name: str, *columns: str) -> list[tuple[Any, ...]]:
        t = self.table(name)
        query = sa.select(*(t.c[c] for c in columns)).order_by(*(t.c[c] for c in columns))
        with self.db.engine.connect() as conn:
            return [tuple(r) for r in conn.execute(query)]

    def marks(self) -> dict[str, tuple[str, int, int]]:
        """source -> (log_id, position, idx) as `cepheus_delivered` holds them."""
        rows = self.rows("cepheus_delivered", "source", "log_id", "position", "idx")
        return {source: (log_id, position, idx) for source, log_id, position, idx in rows}

    def has_table(self, name: str) -> bool:
        with self.db.engine.connect() as conn:
            return sa.inspect(conn).has_table(name, schema=self.schema)


@pytest.fixture
def place(db: Database) -> Iterator[Place]:
    backend = sa.make_url(db.url).get_backend_name()
    if backend == "sqlite":
        yield Place(db, None)
        return
    schema = f"d_{uuid.uuid4().hex[:10]}"
    create, drop = (
        (f"CREATE DATABASE {schema}", f"DROP DATABASE {schema}")
        if backend == "mysql"
        else (f"CREATE SCHEMA {schema}", f"DROP SCHEMA {schema} CASCADE")
    )
    db.execute(create)
    try:
        yield Place(db, schema)
    finally:
        for adapter in db.adapters:
            adapter.stop(timeout=5)
        db.execute(drop)


def at(*positions: int, log_id: str = "log-1", source: str = SOURCE) -> list[Origin]:
    """Two records per input-log position: indexes 0 and 1."""
    return [Origin(source, log_id, p, i) for p in positions for i in (0, 1)]


def records(*positions: int, tag: str = "") -> list[dict[str, Any]]:
    return [{"k": p * 10 + i, "v": f"{tag}{p}.{i}"} for p in positions for i in (0, 1)]


def balanced(s: AdapterStats) -> bool:
    return s.published == s.written + s.rejected + s.fenced + s.skipped + s.abandoned + s.pending


def test_a_replay_after_a_restart_writes_only_what_the_table_lacks(
    place: Place, caplog: pytest.LogCaptureFixture
) -> None:
    table = place.db.table_name("orders")
    before = place.adapter(table, batch_events=4)
    before.publish(records(1, 2, 3), origins=at(1, 2, 3))
    assert before.flush(timeout=20)
    assert before.stop(timeout=5)
    assert before.stats.written == 6 and place.marks() == {SOURCE: ("log-1", 3, 1)}

    after = place.adapter(table, name="restarted", batch_events=4)  # the node restarted: a new adapter
    with caplog.at_level(logging.INFO, logger="adapters.output.rdbms.adapter"):
        after.publish(records(2, 3, 4, 5), origins=at(2, 3, 4, 5))
        assert after.flush(timeout=20)
    assert place.rows(table, "k") == [(k,) for k in (10, 11, 20, 21, 30, 31, 40, 41, 50, 51)]
    s = after.stats
    assert (s.published, s.written, s.skipped, s.rejected) == (8, 4, 4, 0) and balanced(s)
    assert place.marks() == {SOURCE: ("log-1", 5, 1)}
    lines = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert lines == [
        f"adapter restarted: skipped 4 records table {table} already had (replayed after a restart)"
    ]


def test_a_replay_cut_inside_an_input_record_keeps_its_later_outputs(place: Place) -> None:
    table = place.db.table_name("orders")
    out = place.adapter(table)
    out.publish(records(1)[:1], origins=at(1)[:1])  # the crash came between outputs 0 and 1 of record 1
    assert out.flush(timeout=20)
    out.publish(records(1, 2), origins=at(1, 2))
    assert out.flush(timeout=20)
    assert place.rows(table, "k") == [(10,), (11,), (20,), (21,)]
    assert out.stats.skipped == 1


def test_a_new_log_replaces_the_mark_and_is_not_suppressed(place: Place) -> None:
    table = place.db.table_name("orders")
    out = place.adapter(table)
    out.publish(records(5), origins=at(5, log_id="log-1"))
    assert out.flush(timeout=20)
    out.publish(records(1, tag="new "), origins=at(1, log_id="log-2"))  # positions start again
    assert out.flush(timeout=20)
    assert place.rows(table, "v") == [("5.0",), ("5.1",), ("new 1.0",), ("new 1.1",)]
    assert place.marks() == {SOURCE: ("log-2", 1, 1)}
    assert out.stats.skipped == 0


def test_records_without_origins_are_always_written(place: Place) -> None:
    table = place.db.table_name("orders")
    out = place.adapter(table, mode="insert")
    for _ in range(2):
        out.publish(
            [{"k": 1, "v": "marked"}, {"k": 2, "v": "plain"}], origins=[Origin(SOURCE, "l", 1, 0), None]
        )
        out.publish([{"k": 3, "v": "unmarked call"}])
    assert out.flush(timeout=20)
    assert place.rows(table, "k") == [(1,), (2,), (2,), (3,), (3,)]
    s = out.stats
    assert (s.written, s.skipped) == (5, 1) and balanced(s)


def test_records_without_any_origin_leave_no_trace(place: Place) -> None:
    table = place.db.table_name("orders")
    out = place.adapter(table)
    out.publish(records(1), origins=[None, None])
    assert out.flush(timeout=20)
    assert place.rows(table, "k") == [(10,), (11,)]
    assert not place.has_table("cepheus_delivered")  # created on first need only


def test_the_sources_of_two_formatters_are_independent(place: Place) -> None:
    table = place.db.table_name("orders")
    out = place.adapter(table)
    a, b = "pizza/deliveredOrders/toTable", "pizza/refunds/toTable"
    out.publish(records(1, 2, tag="a"), origins=at(1, 2, source=a))
    out.publish(records(7, tag="b"), origins=at(1, source=b))  # the same positions, another source
    assert out.flush(timeout=20)
    out.publish(
        records(2, 3, tag="a") + records(7, 8, tag="b"), origins=at(2, 3, source=a) + at(1, 2, source=b)
    )
    assert out.flush(timeout=20)
    assert [v for (v,) in place.rows(table, "v")] == [
        "a1.0", "a1.1", "a2.0", "a2.1", "a3.0", "a3.1", "b7.0", "b7.1", "b8.0", "b8.1"
    ]  # fmt: skip
    assert place.marks() == {a: ("log-1", 3, 1), b: ("log-1", 2, 1)}
    assert out.stats.skipped == 4


def test_sources_differing_only_in_case_are_different_sources(place: Place) -> None:
    table = place.db.table_name("orders")
    out = place.adapter(table)
    out.publish(records(1, tag="a"), origins=at(1, source="Pizza/out/toTable"))
    out.publish(records(2, tag="b"), origins=at(1, source="pizza/out/toTable"))  # MySQL: a binary collation
    assert out.flush(timeout=20)
    assert place.rows(table, "k") == [(10,), (11,), (20,), (21,)]
    assert place.marks() == {"Pizza/out/toTable": ("log-1", 1, 1), "pizza/out/toTable": ("log-1", 1, 1)}


def test_rows_the_table_refuses_leave_the_mark_where_it_was(place: Place) -> None:
    table = place.db.table_name("strict")
    sa.Table(  # made by hand: v may not be null
        table,
        sa.MetaData(),
        sa.Column("k", sa.BigInteger, nullable=False),
        sa.Column("v", sa.String(20), nullable=False),
        schema=place.schema,
    ).create(place.db.engine)
    out = place.adapter(table, create_table=False, batch_events=10)
    out.publish([{"k": 1, "v": "a"}], origins=[Origin(SOURCE, "l", 1, 0)])
    assert out.flush(timeout=20)
    out.publish([{"k": 2, "v": None}], origins=[Origin(SOURCE, "l", 2, 0)])  # a batch that fails whole
    assert out.flush(timeout=20)
    assert place.marks() == {SOURCE: ("l", 1, 0)} and out.stats.rejected == 1
    out.publish(
        [{"k": 3, "v": "c"}, {"k": 4, "v": None}, {"k": 5, "v": "e"}],
        origins=[Origin(SOURCE, "l", p, 0) for p in (3, 4, 5)],
    )  # refused as a batch, then written one by one: only the bad record is rejected
    assert out.flush(timeout=20)
    assert place.rows(table, "k") == [(1,), (3,), (5,)]
    assert place.marks() == {SOURCE: ("l", 5, 0)}
    s = out.stats
    assert (s.written, s.rejected, s.skipped) == (3, 2, 0) and balanced(s)


def test_a_fenced_batch_leaves_the_mark_where_it_was(place: Place) -> None:
    table = place.db.table_name("orders")
    out = place.adapter(table)
    out.publish(records(1), origins=at(1))
    assert out.flush(timeout=20)

    def deposed(conn: sa.Connection) -> None:
        raise NotLeader("lease epoch 7 was taken over by epoch 8")

    out.publish(records(2), fence=deposed, origins=at(2))
    assert out.flush(timeout=20)
    assert place.marks() == {SOURCE: ("log-1", 1, 1)} and out.stats.fenced == 2
    out.publish(records(2), origins=at(2))  # the new leader's replay of them is not suppressed
    assert out.flush(timeout=20)
    assert place.rows(table, "k") == [(10,), (11,), (20,), (21,)]
    assert out.stats.skipped == 0


def test_a_commit_whose_answer_was_lost_is_not_written_twice(
    place: Place, caplog: pytest.LogCaptureFixture
) -> None:
    table = place.db.table_name("orders")
    out = place.adapter(table, mode="insert", retry_initial_ms=20, retry_max_ms=100)
    out.publish(records(1), origins=at(1))
    assert out.flush(timeout=20)  # tables created: the next commit is the batch's
    lost: list[bool] = []

    def commit_then_lose_the_connection(conn: sa.Connection) -> None:
        if lost:
            return
        lost.append(True)
        dbapi = conn.connection.dbapi_connection
        assert dbapi is not None
        dbapi.commit()  # the database commits...
        dbapi.close()  # ...and the answer never arrives

    engine = out._get_engine()
    sa.event.listen(engine, "commit", commit_then_lose_the_connection)
    try:
        with caplog.at_level(logging.INFO, logger="adapters.output.rdbms.adapter"):
            out.publish(records(2, 3), origins=at(2, 3))
            assert out.flush(timeout=20)
    finally:
        sa.event.remove(engine, "commit", commit_then_lose_the_connection)
    assert lost
    assert place.rows(table, "k") == [(10,), (11,), (20,), (21,), (30,), (31,)]
    s = out.stats
    assert (s.in_doubt, s.skipped, s.written) == (4, 4, 2) and balanced(s)
    assert any("the interrupted commit went through" in r.getMessage() for r in caplog.records)


def test_update_mode_does_not_apply_a_replayed_change_again(place: Place) -> None:
    table = place.db.table_name("orders")
    seed = place.adapter(table, name="seed", mode="insert")
    seed.publish([{"k": 1, "v": "initial"}])
    assert seed.flush(timeout=20)
    out = place.adapter(table, mode="update", key_columns=["k"])
    out.publish([{"k": 1, "v": "from plan"}], origins=[Origin(SOURCE, "l", 1, 0)])
    assert out.flush(timeout=20)
    with place.db.engine.begin() as conn:  # an operator corrects the row afterwards
        t = place.table(table)
        conn.execute(sa.update(t).where(t.c.k == 1).values(v="corrected"))
    out.publish([{"k": 1, "v": "from plan"}], origins=[Origin(SOURCE, "l", 1, 0)])  # the replay
    assert out.flush(timeout=20)
    assert place.rows(table, "k", "v") == [(1, "corrected")]
    assert out.stats.skipped == 1


def test_insert_or_update_skips_the_replayed_part_and_applies_the_rest(place: Place) -> None:
    table = place.db.table_name("orders")
    out = place.adapter(table, mode="insert-or-update", key_columns=["k"], batch_events=3)
    out.publish([{"k": 1, "v": f"v{p}"} for p in (1, 2)], origins=[Origin(SOURCE, "l", p, 0) for p in (1, 2)])
    assert out.flush(timeout=20)
    replay = [{"k": p % 2, "v": f"v{p}"} for p in (1, 2, 3, 4, 5)]
    out.publish(replay, origins=[Origin(SOURCE, "l", p, 0) for p in (1, 2, 3, 4, 5)])
    assert out.flush(timeout=20)
    assert place.rows(table, "k", "v") == [(0, "v4"), (1, "v5")]
    s = out.stats
    assert (s.written, s.skipped) == (5, 2) and balanced(s)
    assert place.marks() == {SOURCE: ("l", 5, 0)}


def test_a_dropped_delivered_table_is_created_again_and_no_record_is_rejected(place: Place) -> None:
    table = place.db.table_name("orders")
    out = place.adapter(table, retry_initial_ms=20, retry_max_ms=100)
    out.publish(records(1), origins=at(1))
    assert out.flush(timeout=20)
    place.table("cepheus_delivered").drop(place.db.engine)
    out.publish(records(2), origins=at(2))
    assert out.flush(timeout=20)
    assert place.rows(table, "k") == [(10,), (11,), (20,), (21,)]
    assert place.marks() == {SOURCE: ("log-1", 2, 1)}
    s = out.stats
    assert (s.written, s.rejected, s.pending) == (4, 0, 0)


@pytest.mark.parametrize("marked", [True, False], ids=["marked", "fresh"])
def test_two_writers_replaying_the_same_records_write_each_once(place: Place, marked: bool) -> None:
    """Two nodes briefly writing the same source (no fence here): the marks' row locks, or the
    race to insert a source's first mark, serialise them."""
    table = place.db.table_name("orders")
    fast = {"mode": "insert", "batch_events": 5, "retry_initial_ms": 10, "retry_max_ms": 50}
    first = place.adapter(table, name="first", **fast)
    if marked:
        first.publish([{"k": 0, "v": "seed"}], origins=[Origin(SOURCE, "l", 0, 0)])
        assert first.flush(timeout=20)  # tables created, the mark exists
    second = place.adapter(table, name="second", **fast)
    replay = [{"k": p, "v": f"{p}"} for p in range(1, 41)]
    marks = [Origin(SOURCE, "l", p, 0) for p in range(1, 41)]
    go = threading.Barrier(2)

    def publish(out: RdbmsAdapter) -> None:
        go.wait()
        out.publish(replay, origins=marks)

    threads = [threading.Thread(target=publish, args=(out,)) for out in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert first.flush(timeout=30) and second.flush(timeout=30)
    seed = 1 if marked else 0
    assert place.rows(table, "k") == [(k,) for k in range(1 - seed, 41)]
    written = first.stats.written + second.stats.written
    skipped = first.stats.skipped + second.stats.skipped
    assert (written, skipped) == (40 + seed, 40)
    assert place.marks() == {SOURCE: ("l", 40, 0)}


def test_a_writer_whose_known_mark_another_moved_reads_it_again(place: Place) -> None:
    """A writer skips the read of the marks it stored last; when another writer moved one
    meanwhile (a new notifier), its conditional update misses and it reads them again."""
    table = place.db.table_name("orders")
    first = place.adapter(table, name="first", batch_events=100)
    first.publish(records(1, 2), origins=at(1, 2))
    assert first.flush(timeout=20)
    second = place.adapter(table, name="second", batch_events=100)
    second.publish(records(3, 4), origins=at(3, 4))
    assert second.flush(timeout=20)
    first.publish(records(3, 4, 5), origins=at(3, 4, 5))  # its own mark says 2: stale
    assert first.flush(timeout=20)
    assert place.rows(table, "k") == [(k,) for k in (10, 11, 20, 21, 30, 31, 40, 41, 50, 51)]
    assert (first.stats.written, first.stats.skipped) == (6, 4)
    assert place.marks() == {SOURCE: ("log-1", 5, 1)}


def test_a_run_half_written_before_a_crash_is_split_at_the_mark(place: Place) -> None:
    """The outputs of one input record published as a run (its first origin alone): the dead
    process wrote the first 7 of 20; the replay, in batches that cut the run elsewhere, writes
    the other 13 and the run of the next record, each once."""
    table = place.db.table_name("orders")
    rows = [{"k": i, "v": f"r{i}"} for i in range(20)]
    before = place.adapter(table, batch_events=3)
    before.publish(rows[:7], origins=Origin(SOURCE, "log-1", 4, 0))
    assert before.flush(timeout=20) and before.stop(timeout=5)
    assert place.marks() == {SOURCE: ("log-1", 4, 6)}

    after = place.adapter(table, name="restarted", batch_events=5)
    after.publish(rows, origins=Origin(SOURCE, "log-1", 4, 0))
    after.publish([{"k": 100 + i, "v": "next"} for i in range(3)], origins=Origin(SOURCE, "log-1", 5, 0))
    assert after.flush(timeout=20)
    assert place.rows(table, "k") == [(k,) for k in [*range(20), 100, 101, 102]]
    s = after.stats
    assert (s.published, s.written, s.skipped) == (23, 16, 7) and balanced(s)
    assert place.marks() == {SOURCE: ("log-1", 5, 2)}


def test_runs_and_per_record_origins_of_the_same_records_are_one_thing(place: Place) -> None:
    """A caller that still passes one origin per record (Spark's micro-batches) and one that
    passes runs skip each other's records exactly."""
    table = place.db.table_name("orders")
    out = place.adapter(table, batch_events=4)
    out.publish(records(1, 2), origins=at(1, 2))  # per record
    out.publish(records(2, 3), origins=[*at(2), *at(3)])
    out.publish(records(3)[:1] + records(4), origins=None)  # no origins: written again
    assert out.flush(timeout=20)
    for p in (3, 4):
        out.publish(records(p), origins=Origin(SOURCE, "log-1", p, 0))  # runs
    assert out.flush(timeout=20)
    assert place.rows(table, "k") == [(k,) for k in (10, 11, 20, 21, 30, 30, 31, 40, 40, 41, 41)]
    s = out.stats
    assert (s.written, s.skipped) == (11, 4) and balanced(s)
    assert place.marks() == {SOURCE: ("log-1", 4, 1)}
