"""Registry CRUD on SQLite, MariaDB and PostgreSQL: every kind round-trips, names are case-sensitive,
references are enforced, and a failed transaction leaves nothing behind."""

from __future__ import annotations

import pytest

from app.registry import (
    Attribute,
    DataSource,
    ExecutionPlan,
    Formatter,
    InUseError,
    InvalidPlan,
    Outcome,
    OutputAdapter,
    Receiver,
    Registry,
    StreamDefinition,
    ValidationError,
)

ORDERS = StreamDefinition(
    "orderStream",
    "1.0.0",
    "orders",
    meta=(Attribute("source", "STRING"),),
    payload=(Attribute("orderNo", "STRING"), Attribute("amount", "DOUBLE")),
)
OUT = StreamDefinition("bigOrders", "1.0.0", payload=(Attribute("orderNo", "STRING"),))
PLAN_TEXT = """@Plan:name('bigOrders')
@Import('orderStream:1.0.0')
define stream orders (meta_source string, orderNo string, amount double);
@Export('bigOrders:1.0.0')
define stream big (orderNo string);
from orders[amount > 100] select orderNo insert into big;
"""
PLAN = ExecutionPlan("bigOrders", PLAN_TEXT, distributed_mode="redundant", ha_mode="active-active")
DB = DataSource("shopDB", "mysql+pymysql://shop:secret@db.example/shop", {"pool_size": 5})
TABLE = OutputAdapter("bigOrdersTable", "rdbms", {"datasource": "shopDB", "table": "big_orders"})
MAPPING = Formatter(
    "bigOrdersRows", "bigOrders:1.0.0", "bigOrdersTable", "map", {"mappings": {"order_no": "orderNo"}}
)
THRIFT = Receiver("databridge", "thrift", {"note": "Grüße, 注文 🍕"})


def put_all(registry: Registry) -> None:
    with registry.transaction() as store:
        store.put_stream(ORDERS)
        store.put_stream(OUT)
        store.put_plan(PLAN)
        store.put_datasource(DB)
        store.put_adapter(TABLE)
        store.put_formatter(MAPPING)
        store.put_receiver(THRIFT)


def test_every_kind_round_trips(registry: Registry) -> None:
    put_all(registry)
    assert registry.get_stream("orderStream:1.0.0") == ORDERS
    assert registry.get_plan("bigOrders") == PLAN
    assert registry.get_datasource("shopDB") == DB
    assert registry.get_adapter("bigOrdersTable") == TABLE
    assert registry.get_formatter("bigOrdersRows") == MAPPING
    assert registry.get_receiver("databridge") == THRIFT
    assert [s.id for s in registry.list_streams()] == ["bigOrders:1.0.0", "orderStream:1.0.0"]
    assert registry.get_plan("missing") is None
    revision = registry.revision()
    assert revision == 1 and all(p.revision == revision for p in registry.list_plans())


def test_put_reports_created_unchanged_and_updated(registry: Registry) -> None:
    assert registry.put_receiver(THRIFT) is Outcome.CREATED
    assert registry.put_receiver(THRIFT) is Outcome.UNCHANGED
    assert registry.revision() == 1
    disabled = Receiver("databridge", "thrift", THRIFT.config, enabled=False)
    assert registry.put_receiver(disabled) is Outcome.UPDATED
    assert registry.get_receiver("databridge") == disabled
    assert registry.delete_receiver("databridge") is True
    assert registry.delete_receiver("databridge") is False
    assert registry.list_receivers() == []


def test_names_are_case_sensitive(registry: Registry) -> None:
    registry.put_receiver(Receiver("orders", "http"))
    registry.put_receiver(Receiver("Orders", "thrift"))
    assert [(r.name, r.type) for r in registry.list_receivers()] == [("Orders", "thrift"), ("orders", "http")]


def test_changes_since_tells_another_node_what_to_redeploy(registry: Registry) -> None:
    put_all(registry)
    seen = registry.revision()
    assert registry.changes_since(seen) == []
    registry.put_plan(ExecutionPlan("bigOrders", PLAN_TEXT, snapshot_interval_minutes=5))
    registry.delete_receiver("databridge")
    changes = registry.changes_since(seen)
    assert [(c.revision, c.kind, c.name, c.deleted) for c in changes] == [
        (seen + 1, "plan", "bigOrders", False),
        (seen + 2, "receiver", "databridge", True),
    ]
    assert registry.revision() == seen + 2
    assert registry.get_plan("bigOrders").revision == seen + 1  # type: ignore[union-attr]
    assert len(registry.changes_since(0)) == 7


def test_a_failed_transaction_writes_nothing(registry: Registry) -> None:
    with pytest.raises(RuntimeError), registry.transaction() as store:
        store.put_stream(ORDERS)
        raise RuntimeError
    assert registry.list_streams() == [] and registry.revision() == 0 and registry.changes_since(0) == []


def test_references_are_checked_before_commit(registry: Registry) -> None:
    with pytest.raises(InvalidPlan, match="stream orderStream:1.0.0 is not defined") as info:
        registry.put_plan(PLAN)
    assert (info.value.query_error.line, info.value.query_error.col) == (2, 1)
    put_all(registry)
    with pytest.raises(ValidationError, match="output adapter 'nope' does not exist"):
        registry.put_formatter(Formatter("f", "bigOrders:1.0.0", "nope", "json"))
    with pytest.raises(ValidationError, match="has no attribute 'amount'"):
        registry.put_formatter(
            Formatter("f", "bigOrders:1.0.0", "bigOrdersTable", "map", {"mappings": {"a": "amount"}})
        )
    with pytest.raises(ValidationError, match="data source 'other' does not exist"):
        registry.put_adapter(OutputAdapter("t2", "rdbms", {"datasource": "other"}))
    with pytest.raises(InUseError, match="formatter 'bigOrdersRows'"):
        registry.delete_adapter("bigOrdersTable")
    with pytest.raises(InUseError, match="output adapter 'bigOrdersTable'"):
        registry.delete_datasource("shopDB")
    with pytest.raises(InUseError, match="plan 'bigOrders'"):
        registry.delete_stream("orderStream:1.0.0")
    # changing a stream under a plan that imports it breaks the plan: refused, nothing written
    revision = registry.revision()
    with pytest.raises(InvalidPlan, match="does not match the definition of orderStream:1.0.0"):
        registry.put_stream(
            StreamDefinition("orderStream", "1.0.0", payload=(Attribute("orderNo", "STRING"),))
        )
    assert registry.get_stream("orderStream:1.0.0") == ORDERS and registry.revision() == revision


def test_validation_errors_name_the_field(registry: Registry) -> None:
    with pytest.raises(
        ValidationError, match="ha_mode applies only to distributed_mode = 'redundant'"
    ) as info:
        registry.put_plan(ExecutionPlan("p", PLAN_TEXT, ha_mode="failover"))
    assert info.value.field == "ha_mode"
    with pytest.raises(ValidationError, match=r"payload\[0\].type must be one of STRING") as info:
        registry.put_stream(StreamDefinition("s", payload=(Attribute("x", "TEXT"),)))
    assert info.value.field == "payload[0].type"
    with pytest.raises(ValidationError, match="type must be one of thrift, http"):
        registry.put_receiver(Receiver("r", "kafka"))
    assert registry.revision() == 0
