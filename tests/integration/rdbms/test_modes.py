"""The RDBMS adapter's execution modes on SQLite, MariaDB and PostgreSQL, and the pizza sample end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import engine
from adapters.output import RdbmsAdapter, RecordError, build_adapter
from engine.events import Event
from engine.types import AttrType
from formatters import build_formatter

from .database import Database

SAMPLE = Path(__file__).parents[3] / "samples" / "pizza"
PIZZA_ADAPTER: dict[str, Any] = {
    "datasource": "pizzaDB",
    "mode": "insert-or-update",
    "key_columns": ["customer_name"],
    "create_table": True,
    "columns": [{"name": "sum_order_id", "type": "BIGINT"}, {"name": "customer_name", "type": "VARCHAR(20)"}],
}
PIZZA_FORMATTER = {
    "mappings": [
        {"column": "sum_order_id", "attribute": "sumOrderId"},
        {"column": "customer_name", "attribute": "customerName"},
    ]
}
ORDERS = [
    {"name": "region", "type": "VARCHAR(10)"},
    {"name": "customer", "type": "VARCHAR(20)"},
    {"name": "orders", "type": "BIGINT"},
    {"name": "total", "type": "DOUBLE"},
]


def start(db: Database, table: str, **config: Any) -> RdbmsAdapter:
    out = build_adapter("rdbms", f"out_{table}", {"url": db.url, "table": table, **config})
    assert isinstance(out, RdbmsAdapter)
    db.adapters.append(out)
    out.start()
    return out


def orders_table(db: Database, mode: str, **config: Any) -> tuple[str, RdbmsAdapter]:
    table = db.table_name("orders")
    keys = ["region", "customer"] if mode != "insert" else []
    return table, start(db, table, mode=mode, key_columns=keys, create_table=True, columns=ORDERS, **config)


def row(region: str, customer: str, orders: int, total: float) -> dict[str, Any]:
    return {"region": region, "customer": customer, "orders": orders, "total": total}


def test_insert_appends_every_row_in_batches(db: Database) -> None:
    table, out = orders_table(db, "insert", batch_events=3)
    rows = [row("north", f"c{i % 4}", i, i * 1.5) for i in range(10)]
    assert out.publish(rows) == 10
    assert out.flush(timeout=20)
    got = db.rows(table, "orders", "customer", "total")
    assert got == [(i, f"c{i % 4}", i * 1.5) for i in range(10)]
    s = out.stats
    assert (s.published, s.written, s.errors, s.dropped) == (10, 10, 0, 0)


def test_update_changes_only_rows_whose_composite_key_matches(db: Database) -> None:
    table, seed = orders_table(db, "insert")
    seed.publish([row("north", "tom", 1, 10.0), row("south", "tom", 5, 50.0), row("north", "ann", 2, 20.0)])
    assert seed.flush(timeout=20)
    out = start(db, table, mode="update", key_columns=["region", "customer"], columns=ORDERS)
    out.publish(
        [
            row("north", "tom", 2, 25.0),
            row("east", "tom", 9, 90.0),
            {"region": "north", "customer": "ann", "total": 21.5},
        ]
    )
    assert out.flush(timeout=20)
    assert db.rows(table, "region", "customer", "orders", "total") == [
        ("north", "ann", 2, 21.5),  # only `total` was given: `orders` kept
        ("north", "tom", 2, 25.0),
        ("south", "tom", 5, 50.0),  # same customer, other region: untouched
    ]  # ("east", "tom") matched nothing and was not inserted
    assert out.stats.written == 3 and out.stats.rejected == 0


def test_insert_or_update_with_a_composite_key_ends_with_the_last_values(db: Database) -> None:
    table, out = orders_table(db, "insert-or-update", batch_events=4)
    out.publish([row("north", "tom", 1, 10.0), row("south", "tom", 1, 11.0), row("north", "tom", 2, 20.0)])
    assert out.flush(timeout=20)
    out.publish(
        [
            row("north", "tom", 2, 20.0),  # identical values: still a match (MySQL counts found rows)
            row("south", "ann", 1, 5.0),
            row("south", "tom", 3, 33.0),
            row("south", "ann", 2, 6.0),  # same key twice in one batch: the later wins
            {"region": "north", "customer": "tom", "total": 21.0},  # partial row: orders kept
        ]
    )
    assert out.flush(timeout=20)
    assert db.rows(table, "region", "customer", "orders", "total") == [
        ("north", "tom", 2, 21.0),
        ("south", "ann", 2, 6.0),
        ("south", "tom", 3, 33.0),
    ]
    assert out.stats.written == 8


def test_an_existing_table_needs_no_declared_columns(db: Database) -> None:
    table = db.table_name("existing")
    sa.Table(
        table,
        sa.MetaData(),
        sa.Column("customer_name", sa.String(20), primary_key=True),
        sa.Column("sum_order_id", sa.BigInteger),
    ).create(db.engine)
    out = start(db, table, mode="insert-or-update", key_columns=["customer_name"])
    out.publish([{"customer_name": "Tom", "sum_order_id": 1}, {"customer_name": "Tom", "sum_order_id": 2}])
    out.publish([{"customer_name": "Ann", "sum_order_id": 7}])
    assert out.flush(timeout=20)
    assert db.rows(table, "customer_name", "sum_order_id") == [("Ann", 7), ("Tom", 2)]
    with pytest.raises(RecordError):
        out.publish([{"customer_name": "Tom", "sum order": 3}])


def test_rows_the_database_refuses_are_rejected_alone(db: Database) -> None:
    table = db.table_name("strict")
    db.execute(f"CREATE TABLE {table} (k BIGINT NOT NULL, v VARCHAR(20) NOT NULL)")
    out = start(db, table, mode="insert", batch_events=10)
    out.publish([{"k": 1, "v": "a"}, {"k": 2, "v": None}, {"k": 3, "v": "c"}])
    assert out.flush(timeout=20)
    assert db.rows(table, "k", "v") == [(1, "a"), (3, "c")]
    s = out.stats
    assert (s.written, s.rejected, s.pending) == (2, 1, 0)


def test_a_missing_table_holds_the_records_until_it_exists(db: Database) -> None:
    table = db.table_name("later")
    out = start(db, table, mode="insert", retry_initial_ms=20, retry_max_ms=100)
    out.publish([{"k": 1}, {"k": 2}])
    assert not out.flush(timeout=0.5)
    assert out.stats.pending == 2 and out.stats.rejected == 0 and out.stats.errors > 0
    db.execute(f"CREATE TABLE {table} (k BIGINT)")
    assert out.flush(timeout=20)
    assert db.rows(table, "k") == [(1,), (2,)]


def _replay_pizza() -> list[list[Event]]:
    rt = engine.compile((SAMPLE / "plan.siddhi").read_text(), start_time=1000)
    emitted: list[list[Event]] = []
    rt.subscribe("deliveredOrders", emitted.append)
    for line in (SAMPLE / "events.jsonl").read_text().splitlines():
        item = json.loads(line)
        if "stream" in item:
            rt.send(item["stream"], [tuple(item["data"])], timestamps=item["timestamp"])
        else:
            rt.advance_to(item["time"])
    rt.shutdown()
    return emitted


def test_pizza_sample_fills_delivered_orders_exactly(db: Database) -> None:
    table = db.table_name("delivered_orders")
    out = build_adapter(
        "rdbms", "deliveredOrdersTable", {**PIZZA_ADAPTER, "table": table}, {"pizzaDB": db.url}
    )
    db.adapters.append(out)
    fmt = build_formatter(
        "map", [("sumOrderId", AttrType.LONG), ("customerName", AttrType.STRING)], PIZZA_FORMATTER
    )
    out.start()
    for _ in range(2):  # a replay (as after a failover) changes nothing: the key makes the sink idempotent
        for events in _replay_pizza():
            out.publish(fmt.format(events))
        assert out.flush(timeout=20)
        assert db.rows(table, "sum_order_id", "customer_name") == [(1, "Tom"), (2, "John"), (3, "Ratha")]
    assert out.stats.written == 6
