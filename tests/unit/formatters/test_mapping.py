"""The map formatter: attribute → column rows, target types, the pizza mapping."""

from __future__ import annotations

import pytest

from engine.errors import FormatError
from engine.events import Event
from engine.types import AttrType
from formatters import FormatterConfigError, build_formatter

DELIVERED = [("sumOrderId", AttrType.LONG), ("customerName", AttrType.STRING)]
PIZZA = {
    "mappings": [
        {"column": "sum_order_id", "attribute": "sumOrderId"},
        {"column": "customer_name", "attribute": "customerName"},
    ]
}


def test_pizza_mapping_gives_rows_in_mapping_order() -> None:
    fmt = build_formatter("map", DELIVERED, PIZZA)
    rows = fmt.format([Event(1000, (1, "Tom")), Event(2000, (2, "John"))])
    assert rows == [{"sum_order_id": 1, "customer_name": "Tom"}, {"sum_order_id": 2, "customer_name": "John"}]
    assert list(rows[0]) == ["sum_order_id", "customer_name"]


def test_without_mappings_every_attribute_keeps_its_name() -> None:
    fmt = build_formatter("map", DELIVERED, {})
    assert fmt.format([Event(1, (7, "Ann"))]) == [{"sumOrderId": 7, "customerName": "Ann"}]


def test_mappings_may_select_and_reorder_attributes() -> None:
    fmt = build_formatter("map", DELIVERED, {"mappings": [{"column": "who", "attribute": "customerName"}]})
    assert fmt.format([Event(1, (7, "Ann"))]) == [{"who": "Ann"}]


def test_timestamp_column_carries_the_event_time() -> None:
    fmt = build_formatter("map", DELIVERED, {"timestamp_column": "ts"})
    assert fmt.format([Event(1234, (7, "Ann"))]) == [{"sumOrderId": 7, "customerName": "Ann", "ts": 1234}]


@pytest.mark.parametrize(
    ("declared", "value", "expected"),
    [
        ("BIGINT", 3.0, 3),
        ("VARCHAR(20)", 42, "42"),
        ("string", True, "true"),
        ("DOUBLE", 2, 2.0),
        ("double precision", "2.5", 2.5),
        ("boolean", "TRUE", True),
        ("int", None, None),
    ],
)
def test_target_types_convert_exactly(declared: str, value: object, expected: object) -> None:
    fmt = build_formatter(
        "map", [("x", AttrType.OBJECT)], {"mappings": [{"column": "c", "attribute": "x", "type": declared}]}
    )
    result = fmt.format([Event(1, (value,))])[0]["c"]
    assert result == expected and type(result) is type(expected)


def test_a_lossy_conversion_is_an_error_naming_attribute_and_column() -> None:
    fmt = build_formatter(
        "map", [("x", AttrType.DOUBLE)], {"mappings": [{"column": "c", "attribute": "x", "type": "BIGINT"}]}
    )
    with pytest.raises(FormatError, match=r"event 1: attribute 'x' → column 'c'.*2\.5"):
        fmt.format([Event(1, (2.0,)), Event(2, (2.5,))])


@pytest.mark.parametrize(
    ("config", "key", "text"),
    [
        (
            {"mappings": [{"column": "a", "attribute": "nope"}]},
            "mappings[0].attribute",
            "unknown attribute 'nope'",
        ),
        ({"mappings": [{"attribute": "sumOrderId"}]}, "mappings[0].column", "is required"),
        (
            {"mappings": [{"column": "a", "attribute": "sumOrderId", "type": "BLOB"}]},
            "mappings[0].type",
            "unknown type",
        ),
        (
            {"mappings": [{"column": "a", "attribute": "sumOrderId", "colour": 1}]},
            "mappings[0].colour",
            "unknown key",
        ),
        (
            {
                "mappings": [
                    {"column": "a", "attribute": "sumOrderId"},
                    {"column": "a", "attribute": "customerName"},
                ]
            },
            "mappings[1].column",
            "mapped twice",
        ),
        ({"mappings": []}, "mappings", "at least one"),
        ({"mappings": "sumOrderId"}, "mappings", "list of tables"),
        ({"mappings": ["sumOrderId"]}, "mappings[0]", "must be a table"),
        ({"timestamp_column": "sumOrderId"}, "timestamp_column", "mapped twice"),
        ({"mapping": []}, "mapping", "unknown key"),
    ],
)
def test_config_errors_name_the_key(config: dict[str, object], key: str, text: str) -> None:
    with pytest.raises(FormatterConfigError, match=text) as info:
        build_formatter("map", DELIVERED, config)
    assert info.value.key == key
    assert f"map formatter: {key}: " in str(info.value)


def test_short_table_form_maps_column_to_attribute() -> None:
    fmt = build_formatter(
        "map", DELIVERED, {"mappings": {"sum_order_id": "sumOrderId", "customer_name": "customerName"}}
    )
    assert fmt.format([Event(1, (1, "Tom"))]) == [{"sum_order_id": 1, "customer_name": "Tom"}]


@pytest.mark.parametrize(
    ("mappings", "key"), [({"a": "nope"}, "mappings.a"), ({"a": 1}, "mappings.a"), ({}, "mappings")]
)
def test_short_table_form_errors_name_the_column(mappings: dict[str, object], key: str) -> None:
    with pytest.raises(FormatterConfigError) as info:
        build_formatter("map", DELIVERED, {"mappings": mappings})
    assert info.value.key == key
