"""build_adapter: types, the pizza sample's config, and config errors that name the key."""

from __future__ import annotations

import re
from typing import Any

import pytest

from adapters.output import ADAPTER_TYPES, AdapterConfigError, RdbmsAdapter, build_adapter
from adapters.output.rdbms import Mode
from engine.errors import AdapterError, ConfigError

DATASOURCES = {"pizzaDB": "sqlite:///var/pizza.db"}
PIZZA: dict[str, Any] = {
    "datasource": "pizzaDB",
    "table": "delivered_orders",
    "mode": "insert-or-update",
    "key_columns": ["customer_name"],
    "create_table": True,
    "columns": [{"name": "sum_order_id", "type": "BIGINT"}, {"name": "customer_name", "type": "VARCHAR(20)"}],
}


def test_the_pizza_sample_config_builds_an_unstarted_rdbms_adapter() -> None:
    out = build_adapter("rdbms", "pizzaOut", PIZZA, DATASOURCES)
    assert isinstance(out, RdbmsAdapter)
    s = out.settings
    assert (s.table, s.mode, s.key_columns, s.create_table) == (
        "delivered_orders",
        Mode.INSERT_OR_UPDATE,
        ("customer_name",),
        True,
    )
    assert [c for c, _ in s.columns] == ["sum_order_id", "customer_name"]
    assert out.stats.published == 0


def test_mysql_is_an_alias_of_rdbms() -> None:
    assert isinstance(build_adapter("mysql", "pizzaOut", PIZZA, DATASOURCES), RdbmsAdapter)


def test_unknown_type_names_the_known_ones() -> None:
    with pytest.raises(AdapterConfigError, match="type 'kafka' is unknown") as info:
        build_adapter("kafka", "out", {})
    assert info.value.key == "type"
    assert set(ADAPTER_TYPES) >= {"rdbms", "logger", "http"}


def test_config_errors_are_adapter_and_config_errors_and_say_which_adapter() -> None:
    with pytest.raises(AdapterConfigError) as info:
        build_adapter("rdbms", "pizzaOut", {**PIZZA, "tabel": "x"}, DATASOURCES)
    assert isinstance(info.value, AdapterError) and isinstance(info.value, ConfigError)
    assert str(info.value).startswith("output adapter 'pizzaOut' (rdbms): tabel: unknown key")


@pytest.mark.parametrize(
    ("change", "key", "text"),
    [
        ({"datasource": "nope"}, "datasource", "unknown data source 'nope' (known: pizzaDB)"),
        ({"datasource": None}, "datasource", "exactly one of"),
        ({"url": "sqlite://"}, "datasource", "exactly one of"),
        ({"datasource": None, "url": "oracle+nosuchdriver://x"}, "url", "not a usable SQLAlchemy URL"),
        ({"table": None}, "table", "is required"),
        ({"mode": "upsert"}, "mode", "must be one of insert, update, insert-or-update"),
        ({"key_columns": []}, "key_columns", "needs at least one key column"),
        ({"key_columns": ["customer_name", "customer_name"]}, "key_columns", "twice"),
        ({"key_columns": ["total"]}, "key_columns[0]", "not one of the declared columns"),
        ({"columns": []}, "create_table", "needs `columns`"),
        ({"columns": [{"name": "a", "type": "BLOB"}]}, "columns[0].type", "unknown column type 'BLOB'"),
        ({"columns": [{"name": "a", "type": "VARCHAR"}]}, "columns[0].type", "needs a length"),
        ({"columns": [{"name": "a", "type": "BIGINT(3, 4)"}]}, "columns[0].type", "takes no length"),
        ({"columns": [{"name": "a"}]}, "columns[0].type", "is required"),
        ({"columns": [{"name": "a", "type": "INT", "null": True}]}, "columns[0].null", "unknown key"),
        ({"create_table": "yes"}, "create_table", "must be true or false"),
        ({"batch_events": 0}, "batch_events", "at least 1"),
        ({"timeout_s": "5"}, "timeout_s", "must be a number"),
    ],
)
def test_rdbms_config_errors_name_the_key(change: dict[str, Any], key: str, text: str) -> None:
    config = {k: v for k, v in {**PIZZA, **change}.items() if v is not None}
    with pytest.raises(AdapterConfigError, match=re.escape(text)) as info:
        build_adapter("rdbms", "pizzaOut", config, DATASOURCES)
    assert info.value.key == key
    assert f": {key}: " in str(info.value)


def test_update_mode_needs_a_column_besides_the_keys() -> None:
    config = {**PIZZA, "mode": "update", "columns": [{"name": "customer_name", "type": "VARCHAR(20)"}]}
    with pytest.raises(AdapterConfigError, match="besides the key columns"):
        build_adapter("rdbms", "pizzaOut", config, DATASOURCES)


def test_url_password_never_appears_in_the_target_description() -> None:
    config = {k: v for k, v in PIZZA.items() if k != "datasource"}
    out = build_adapter("rdbms", "o", {**config, "url": "mysql+pymysql://u:hunter2@db/x"})
    assert isinstance(out, RdbmsAdapter)
    assert "hunter2" not in out.describe_target()


def test_adapter_name_must_be_given() -> None:
    with pytest.raises(AdapterConfigError) as info:
        build_adapter("logger", "", {})
    assert info.value.key == "name"


def test_a_wso2event_adapter_verifies_tls_unless_told_not_to(caplog: pytest.LogCaptureFixture) -> None:
    peer = {"receiverURL": "tcp://127.0.0.1:7611", "username": "admin", "password": "pw"}
    default = build_adapter("wso2event", "fwd", peer).settings  # type: ignore[attr-defined]
    assert (default.ca_file, default.insecure) == (None, False)
    trusting = build_adapter("wso2event", "fwd", {**peer, "ca_file": "var/tls/cert.pem"}).settings  # type: ignore[attr-defined]
    assert (trusting.ca_file, trusting.insecure) == ("var/tls/cert.pem", False)
    with caplog.at_level("WARNING"):
        insecure = build_adapter("wso2event", "fwd", {**peer, "verify_tls": False}).settings  # type: ignore[attr-defined]
    assert insecure.insecure is True
    assert "output adapter fwd does not verify the receivers' TLS certificates" in caplog.text
