"""Table and column names: validated as identifiers, always quoted by SQLAlchemy, never pasted."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from adapters.output import AdapterConfigError, RdbmsAdapter, RecordError, build_adapter
from adapters.output.rdbms import is_identifier
from adapters.output.rdbms.schema import build_table, column_type


def dialect_of(url: str) -> sa.Dialect:
    return sa.make_url(f"{url}://").get_dialect()()


BASE: dict[str, Any] = {"url": "sqlite:///unused.db", "table": "orders"}


@pytest.mark.parametrize("name", ["orders", "delivered_orders", "_x", "Order2", "a" * 63])
def test_plain_names_are_identifiers(name: str) -> None:
    assert is_identifier(name)


@pytest.mark.parametrize(
    "name",
    ["orders; drop table x", "orders--", "a b", "1abc", "", "a" * 64, 'x"y', "x`y", "naïve", "t.x", None, 3],
)
def test_anything_else_is_not(name: object) -> None:
    assert not is_identifier(name)


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"table": "orders; drop table x"}, "table"),
        ({"schema": "public; drop table x"}, "schema"),
        ({"mode": "update", "key_columns": ["id = 1 or 1"]}, "key_columns[0]"),
        ({"columns": [{"name": "a); drop table x; --", "type": "INT"}]}, "columns[0].name"),
    ],
)
def test_config_names_that_are_not_identifiers_are_rejected(change: dict[str, Any], key: str) -> None:
    with pytest.raises(AdapterConfigError, match="not a valid identifier") as info:
        build_adapter("rdbms", "out", {**BASE, **change})
    assert info.value.key == key


def test_record_columns_that_are_not_identifiers_are_refused_at_publish() -> None:
    out = build_adapter("rdbms", "out", BASE)
    with pytest.raises(RecordError, match="not a valid identifier"):
        out.publish([{"ok": 1}, {"x; drop table orders": 1}])
    assert out.stats.published == 0


def test_records_must_fit_the_declared_columns_and_carry_the_keys() -> None:
    config = {
        **BASE,
        "mode": "insert-or-update",
        "key_columns": ["k"],
        "columns": [{"name": "k", "type": "INT"}, {"name": "v", "type": "INT"}],
    }
    out = build_adapter("rdbms", "out", config)
    with pytest.raises(RecordError, match="'w', which is not one of the declared columns"):
        out.publish([{"k": 1, "w": 2}])
    with pytest.raises(RecordError, match="lacks key column"):
        out.publish([{"v": 2}])
    with pytest.raises(RecordError, match="not a row"):
        out.publish(["k=1"])
    assert out.publish([{"k": 1, "v": 2}]) == 1
    out.stop(timeout=0)


@pytest.mark.parametrize(
    ("url", "quoted"),
    [("mysql+pymysql", "`select`"), ("postgresql+psycopg2", '"select"'), ("sqlite", '"select"')],
)
def test_reserved_words_are_quoted_by_sqlalchemy(url: str, quoted: str) -> None:
    dialect = dialect_of(url)
    table = build_table(
        "select", None, [("from", column_type("BIGINT")), ("Where", column_type("VARCHAR(5)"))]
    )
    sql = str(sa.insert(table).compile(dialect=dialect))
    assert sql.startswith(f"INSERT INTO {quoted} (")
    plain = build_table("orders", None, [("customer_name", column_type("TEXT"))])
    assert str(sa.insert(plain).compile(dialect=dialect)).startswith(
        f"INSERT INTO {quoted[0]}orders{quoted[-1]} ("
    )
    assert "VALUES" in sql and "drop" not in sql.lower()


def test_declared_types_render_per_dialect() -> None:
    table = build_table(
        "t",
        None,
        [
            (n, column_type(t))
            for n, t in [
                ("a", "BIGINT"),
                ("b", "VARCHAR(20)"),
                ("c", "DOUBLE"),
                ("d", "DECIMAL(10,2)"),
                ("e", "bool"),
            ]
        ],
        primary_key=["a", "b"],
    )
    ddl = str(sa.schema.CreateTable(table).compile(dialect=dialect_of("postgresql+psycopg2")))
    for fragment in (
        '"a" BIGINT NOT NULL',
        '"b" VARCHAR(20) NOT NULL',
        '"c" DOUBLE PRECISION',
        '"d" NUMERIC(10, 2)',
        '"e" BOOLEAN',
        'PRIMARY KEY ("a", "b")',
    ):
        assert fragment in ddl
    assert isinstance(build_adapter("rdbms", "out", BASE), RdbmsAdapter)
