"""JSON and CSV events into rows of a registered stream: every accepted form, every error message."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.http.events import EventFormatError, row_from_csv, row_from_json, rows_from_json
from adapters.thrift import WireEvent
from app.node.catalog import KnownStream, known
from app.publishing import to_wire
from app.registry import Attribute, StreamDefinition

ORDERS = known(
    StreamDefinition(
        "orders",
        "1.0.0",
        meta=(Attribute("src", "STRING"),),
        correlation=(Attribute("cid", "LONG"),),
        payload=(
            Attribute("orderNo", "STRING"),
            Attribute("qty", "INT"),
            Attribute("price", "DOUBLE"),
            Attribute("paid", "BOOL"),
        ),
    )
)
PAYLOAD_ONLY = known(
    StreamDefinition("p", "2.0.0", payload=(Attribute("x", "INT"), Attribute("y", "STRING")))
)

VALUES = ["web", 7, "Order1", 2, 9.5, True]
ROW = ("web", 7, "Order1", 2, 9.5, True)
NAMED = {"meta_src": "web", "correlation_cid": 7, "orderNo": "Order1", "qty": 2, "price": 9.5, "paid": True}
WSO2 = {
    "metaData": {"src": "web"},
    "correlationData": {"cid": 7},
    "payloadData": {"orderNo": "Order1", "qty": 2, "price": 9.5, "paid": True},
}


def error(body: Any, stream: KnownStream = ORDERS) -> str:
    with pytest.raises(EventFormatError) as info:
        rows_from_json(body, stream)
    return str(info.value)


def csv_error(fields: list[str], stream: KnownStream = ORDERS) -> str:
    with pytest.raises(EventFormatError) as info:
        row_from_csv(fields, stream, "orders.csv:3")
    return str(info.value)


# ---- accepted JSON forms ----------------------------------------------------------------------


def test_known_stream_flattens_meta_correlation_then_payload() -> None:
    assert [name for name, _ in ORDERS.attributes] == [
        "meta_src",
        "correlation_cid",
        "orderNo",
        "qty",
        "price",
        "paid",
    ]


@pytest.mark.parametrize(
    "event",
    [
        VALUES,
        {"data": VALUES},
        {"data": NAMED},
        {"data": dict(reversed(list(NAMED.items())))},  # by name, in any order
        {"event": WSO2},
    ],
    ids=["array", "data-array", "data-object", "data-object-reordered", "wso2"],
)
def test_each_json_form_gives_the_same_row(event: Any) -> None:
    assert rows_from_json([event], ORDERS) == ([ROW], [None])


def test_timestamps_are_kept_per_event() -> None:
    body = [
        {"data": VALUES, "timestamp": 1_700_000_000_000},
        VALUES,
        {"event": WSO2, "timestamp": 0},
        {"data": NAMED, "timestamp": 5},
    ]
    rows, stamps = rows_from_json(body, ORDERS)
    assert rows == [ROW] * 4
    assert stamps == [1_700_000_000_000, None, 0, 5]


def test_a_single_object_body_is_one_event() -> None:
    assert rows_from_json({"data": VALUES, "timestamp": 3}, ORDERS) == ([ROW], [3])
    assert rows_from_json({"event": WSO2}, ORDERS) == ([ROW], [None])


def test_a_list_body_may_hold_many_events() -> None:
    second = ["app", None, "Order2", 1, 1, False]
    rows, _ = rows_from_json([VALUES, second], ORDERS)
    assert rows == [ROW, ("app", None, "Order2", 1, 1.0, False)]


def test_an_empty_list_is_no_events() -> None:
    assert rows_from_json([], ORDERS) == ([], [])


def test_values_are_coerced_to_the_attribute_types() -> None:
    (row,), _ = rows_from_json([["web", 7.0, "o", 3.0, 4, False]], ORDERS)
    assert row == ("web", 7, "o", 3, 4.0, False)
    assert type(row[1]) is int and type(row[4]) is float


def test_null_is_accepted_for_any_attribute() -> None:
    (row,), _ = rows_from_json([{"data": dict.fromkeys(NAMED)}], ORDERS)
    assert row == (None,) * 6


def test_wso2_sections_may_be_left_out_when_the_stream_has_none() -> None:
    assert rows_from_json({"event": {"payloadData": {"y": "a", "x": 1}}}, PAYLOAD_ONLY) == (
        [(1, "a")],
        [None],
    )


def test_row_from_json_names_the_given_place_in_errors() -> None:
    assert row_from_json({"data": [1, "a"], "timestamp": 9}, PAYLOAD_ONLY, "line 4") == ((1, "a"), 9)
    with pytest.raises(EventFormatError, match=r"^line 4: p:2\.0\.0 has 2 attributes, got 1 value$"):
        row_from_json([1], PAYLOAD_ONLY, "line 4")


# ---- JSON errors ------------------------------------------------------------------------------


def test_wrong_number_of_values() -> None:
    assert error([VALUES, ["web"]]) == "event 1: orders:1.0.0 has 6 attributes, got 1 value"
    assert error({"data": VALUES + [1]}) == "event 0: orders:1.0.0 has 6 attributes, got 7 values"


def test_unknown_attribute_by_name() -> None:
    assert error({"data": {**NAMED, "colour": "red"}}) == (
        "event 0: orders:1.0.0 has no attribute 'colour' "
        "(it has correlation_cid, meta_src, orderNo, paid, price, qty)"
    )


def test_meta_attribute_needs_its_prefix_in_data_by_name() -> None:
    named = {("src" if k == "meta_src" else k): v for k, v in NAMED.items()}
    assert error({"data": named}).startswith("event 0: orders:1.0.0 has no attribute 'src' (it has ")


def test_missing_attribute_by_name() -> None:
    named = {k: v for k, v in NAMED.items() if k != "qty"}
    assert error([VALUES, {"data": named}]) == "event 1: attribute 'qty' is missing (use null for no value)"


def test_wso2_missing_attribute() -> None:
    event = {**WSO2, "correlationData": {}}
    assert (
        error({"event": event}) == "event 0: attribute 'correlation_cid' is missing (use null for no value)"
    )


def test_wso2_unknown_attribute_names_the_section() -> None:
    event = {**WSO2, "metaData": {"src": "web", "host": "h"}}
    assert error({"event": event}) == "event 0: event.metaData has no attribute 'host' in orders:1.0.0"


def test_wso2_section_must_be_an_object() -> None:
    assert error({"event": {**WSO2, "payloadData": [1]}}) == "event 0: event.payloadData must be an object"
    assert error({"event": [1]}) == (
        "event 0: 'event' must be an object with metaData, correlationData and payloadData"
    )


@pytest.mark.parametrize(
    ("index", "name", "value", "message"),
    [
        (3, "qty", "two", "expected int, got string 'two'"),
        (5, "paid", 1, "expected bool, got int 1"),
        # Siddhi's InputHandler takes "true" for a bool attribute unchecked; Cepheus refuses it
        (5, "paid", "true", "expected bool, got string 'true'"),
        (0, "meta_src", 5, "expected string, got int 5"),
        (1, "correlation_cid", True, "expected long, got bool True"),
        (4, "price", "9.5", "expected double, got string '9.5'"),
        (3, "qty", 2.5, "expected int, got double 2.5"),
    ],
)
def test_wrong_type_names_event_and_attribute(index: int, name: str, value: Any, message: str) -> None:
    values = list(VALUES)
    values[index] = value
    assert error([VALUES, VALUES, values]) == f"event 2: attribute {name!r}: {message}"
    assert error([{"data": {**NAMED, name: value}}]) == f"event 0: attribute {name!r}: {message}"


def test_int_out_of_range() -> None:
    values = list(VALUES)
    values[3] = 2**31
    assert error([values]) == "event 0: attribute 'qty': 2147483648 is out of range for int"


def test_unknown_keys() -> None:
    assert error({"data": VALUES, "ts": 1}) == "event 0: unknown key 'ts' (expected data, timestamp)"
    assert error({"event": WSO2, "data": VALUES}) == "event 0: unknown key 'data' (expected event, timestamp)"
    assert error({"event": {**WSO2, "arbitraryData": {}}}) == (
        "event 0: event: unknown key 'arbitraryData' (expected metaData, correlationData, payloadData)"
    )


@pytest.mark.parametrize("stamp", [-1, 1.5, "1000", True])
def test_bad_timestamp(stamp: Any) -> None:
    assert error([VALUES, {"data": VALUES, "timestamp": stamp}]) == (
        f"event 1: timestamp must be a whole number of ms since the epoch, got {stamp!r}"
    )


def test_an_object_without_data_or_event() -> None:
    assert error({"timestamp": 1}) == "event 0: expected a 'data' array or object (or WSO2's 'event' object)"


def test_data_of_the_wrong_kind() -> None:
    assert error({"data": "x"}) == "event 0: 'data' must be an array or an object, got a string"


def test_an_event_that_is_neither_array_nor_object() -> None:
    assert error([VALUES, "hello"]) == "event 1: expected an array of values or an object, got a string"
    assert error([7]) == "event 0: expected an array of values or an object, got int"


@pytest.mark.parametrize("body", ["text", 5, None])
def test_body_must_be_a_list_or_an_object(body: Any) -> None:
    assert error(body) == "the body must be a JSON list of events (or one event object)"


# ---- CSV ----------------------------------------------------------------------------------------


def test_csv_values_are_parsed_by_type() -> None:
    assert row_from_csv(["web", "7", "Order1", " 2 ", "9.5", "TRUE"], ORDERS, "f:1") == (
        "web",
        7,
        "Order1",
        2,
        9.5,
        True,
    )
    assert row_from_csv(["", "-1", " x ", "0", "1e3", "false"], ORDERS, "f:1") == (
        "",
        -1,
        " x ",
        0,
        1000.0,
        False,
    )


def test_csv_empty_field_is_null_except_for_strings() -> None:
    assert row_from_csv(["", "", "", " ", "", ""], ORDERS, "f:1") == ("", None, "", None, None, None)


def test_csv_wrong_number_of_fields() -> None:
    assert csv_error(["web", "7"]) == "orders.csv:3: orders:1.0.0 has 6 attributes, the record has 2 fields"


@pytest.mark.parametrize(
    ("index", "text", "message"),
    [
        (5, "yes", "attribute 'paid': 'yes' is not a bool"),
        (5, "1", "attribute 'paid': '1' is not a bool"),
        (1, "x", "attribute 'correlation_cid': 'x' is not a long"),
        (1, "1.5", "attribute 'correlation_cid': '1.5' is not a long"),
        (3, "3000000000", "attribute 'qty': '3000000000' is not an int"),
        (4, "abc", "attribute 'price': 'abc' is not a double"),
    ],
)
def test_csv_bad_values(index: int, text: str, message: str) -> None:
    fields = ["web", "7", "Order1", "2", "9.5", "true"]
    fields[index] = text
    assert csv_error(fields) == f"orders.csv:3: {message}"


# ---- to the wire --------------------------------------------------------------------------------


def test_to_wire_splits_the_row_into_sections() -> None:
    assert to_wire(ORDERS, ROW, 1234) == WireEvent(
        "orders:1.0.0", 1234, ("web",), (7,), ("Order1", 2, 9.5, True)
    )


def test_to_wire_leaves_empty_sections_none() -> None:
    assert to_wire(PAYLOAD_ONLY, (1, "a"), 5) == WireEvent("p:2.0.0", 5, None, None, (1, "a"))
    meta_only = known(StreamDefinition("m", meta=(Attribute("a", "INT"),)))
    assert to_wire(meta_only, (1,), 5) == WireEvent("m:1.0.0", 5, (1,), None, None)
