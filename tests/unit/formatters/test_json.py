"""The json formatter: flat objects, field names, the whole event, WSO2's envelope."""

from __future__ import annotations

import json

import pytest

from engine.events import Event
from engine.types import AttrType
from formatters import FormatterConfigError, build_formatter

ATTRS = [("meta_deliveryNo", AttrType.STRING), ("sumOrderId", AttrType.LONG), ("price", AttrType.DOUBLE)]


def test_flat_objects_keep_attribute_names_and_json_types() -> None:
    fmt = build_formatter("json", ATTRS)
    assert fmt.format([Event(1, ("D1", 3, 2.5))]) == ['{"meta_deliveryNo":"D1","sumOrderId":3,"price":2.5}']


def test_fields_select_rename_and_order_and_timestamp_field_is_added() -> None:
    fmt = build_formatter(
        "json", ATTRS, {"fields": {"price": "amount", "sumOrderId": "n"}, "timestamp_field": "ts"}
    )
    assert json.loads(fmt.format([Event(9, ("D1", 3, 2.5))])[0]) == {"amount": 2.5, "n": 3, "ts": 9}
    assert fmt.format([Event(9, ("D1", 3, 2.5))])[0].startswith('{"amount"')


def test_event_envelope_carries_stream_time_and_type() -> None:
    fmt = build_formatter("json", ATTRS, {"envelope": "event"}, stream="deliveredOrders:1.0.0")
    out = fmt.format([Event(7, ("D1", 3, 2.5), expired=True)])
    assert json.loads(out[0]) == {
        "stream": "deliveredOrders",
        "timestamp": 7,
        "type": "expired",
        "data": {"meta_deliveryNo": "D1", "sumOrderId": 3, "price": 2.5},
    }


def test_wso2_envelope_splits_by_prefix() -> None:
    fmt = build_formatter("json", ATTRS, {"envelope": "wso2"})
    assert json.loads(fmt.format([Event(7, ("D1", 3, 2.5))])[0]) == {
        "event": {
            "metaData": {"deliveryNo": "D1"},
            "correlationData": {},
            "payloadData": {"sumOrderId": 3, "price": 2.5},
        }
    }


def test_non_finite_floats_become_null_and_text_is_escaped() -> None:
    fmt = build_formatter("json", [("s", AttrType.STRING), ("x", AttrType.DOUBLE)])
    out = fmt.format([Event(1, ('say "hi"\n', float("nan")))])
    assert json.loads(out[0]) == {"s": 'say "hi"\n', "x": None}


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"envelope": "soap"}, "envelope"),
        ({"fields": {"nope": "x"}}, "fields.nope"),
        ({"fields": {"price": 3}}, "fields.price"),
        ({"fields": {"price": "a", "sumOrderId": "a"}}, "fields"),
        ({"envelope": "wso2", "fields": {"price": "a"}}, "fields"),
        ({"envelope": "event", "timestamp_field": "ts"}, "timestamp_field"),
        ({"meta": ["price"]}, "meta"),
    ],
)
def test_config_errors_name_the_key(config: dict[str, object], key: str) -> None:
    with pytest.raises(FormatterConfigError) as info:
        build_formatter("json", ATTRS, config)
    assert info.value.key == key
