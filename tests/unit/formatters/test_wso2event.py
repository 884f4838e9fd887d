"""The wso2event formatter: meta / correlation / payload by prefix or by explicit lists."""

from __future__ import annotations

import pytest

from engine.events import Event
from engine.types import AttrType
from formatters import FormatterConfigError, WSO2Event, WSO2EventFormatter, build_formatter

DELIVERY = [
    ("meta_deliveryNo", AttrType.STRING),
    ("orderNo", AttrType.STRING),
    ("correlation_area", AttrType.STRING),
    ("time", AttrType.LONG),
    ("totalBill", AttrType.DOUBLE),
]
ROW = ("Delivery1", "Order1", "Colombo", 100, 50.0)


def test_prefixes_split_the_attributes_and_name_the_outgoing_definition() -> None:
    fmt = build_formatter("wso2event", DELIVERY, {}, stream="deliveryStream:1.0.0")
    assert fmt.format([Event(1000, ROW)]) == [
        WSO2Event("deliveryStream", "1.0.0", 1000, ("Delivery1",), ("Colombo",), ("Order1", 100, 50.0))
    ]
    assert isinstance(fmt, WSO2EventFormatter)
    assert fmt.definition.to_dict() == {
        "name": "deliveryStream",
        "version": "1.0.0",
        "metaData": [{"name": "deliveryNo", "type": "STRING"}],
        "correlationData": [{"name": "area", "type": "STRING"}],
        "payloadData": [
            {"name": "orderNo", "type": "STRING"},
            {"name": "time", "type": "LONG"},
            {"name": "totalBill", "type": "DOUBLE"},
        ],
    }


def test_explicit_lists_override_the_convention() -> None:
    config = {
        "stream_name": "DeliveredEventStream",
        "stream_version": "2.0.0",
        "meta": ["orderNo"],
        "payload": ["totalBill", "time"],
    }
    (event,) = build_formatter("wso2event", DELIVERY, config).format([Event(5, ROW)])
    assert event.stream_id == "DeliveredEventStream:2.0.0"
    assert (event.meta, event.correlation, event.payload) == (("Order1",), (), (50.0, 100))


def test_without_payload_list_the_rest_is_payload() -> None:
    (event,) = build_formatter("wso2event", DELIVERY, {"stream_name": "S", "correlation": ["time"]}).format(
        [Event(5, ROW)]
    )
    assert event.meta == () and event.correlation == (100,)
    assert event.payload == ("Delivery1", "Order1", "Colombo", 50.0)


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({}, "stream_name"),
        ({"stream_name": "a:b"}, "stream_name"),
        ({"stream_name": "S", "stream_version": "1.0"}, "stream_version"),
        ({"stream_name": "S", "meta": ["nope"]}, "meta[0]"),
        ({"stream_name": "S", "meta": ["time"], "payload": ["time"]}, "payload[0]"),
        ({"stream_name": "S", "meta": "time"}, "meta"),
    ],
)
def test_config_errors_name_the_key(config: dict[str, object], key: str) -> None:
    with pytest.raises(FormatterConfigError) as info:
        build_formatter("wso2event", DELIVERY, config)
    assert info.value.key == key


def test_object_attributes_cannot_travel() -> None:
    with pytest.raises(FormatterConfigError, match="cannot travel"):
        build_formatter("wso2event", [("x", AttrType.OBJECT)], {"stream_name": "S"})
