"""Stream definition JSON: lenient parsing, WSO2's `mtd` messages and the `ade` rules (§5)."""

from __future__ import annotations

import pytest

from adapters.thrift.definitions import (
    WireStreamDefinition,
    check_definition,
    parse_definition,
    same_definition,
)
from adapters.thrift.errors import DefinitionConflict, MalformedDefinition

from .wire_samples import DELIVERY_STREAM, ORDER_STREAM, PIZZA_ORDER


def test_single_quoted_pizza_order_stream_parses() -> None:
    definition = parse_definition(ORDER_STREAM)
    assert definition.stream_id == "orderStream:1.0.0"
    assert definition.nick_name == "Analytics Statistics Information"
    assert definition.description == "Details of Analytics Statistics"
    assert definition.meta == () and definition.correlation == ()
    assert [name for name, _ in definition.payload] == [
        "orderNo",
        "customerName",
        "telephoneNo",
        "orderInfo",
        "orderedTime",
    ]
    assert {kind for _, kind in definition.payload} == {"STRING"}


def test_single_quoted_delivery_stream_keeps_meta_and_payload_order() -> None:
    definition = parse_definition(DELIVERY_STREAM)
    assert definition.meta == (("deliveryNo", "STRING"),)
    assert definition.payload == (
        ("orderNo", "STRING"),
        ("areaName", "STRING"),
        ("time", "LONG"),
        ("totalBill", "DOUBLE"),
        ("deliveredBy", "STRING"),
    )


def test_unquoted_keys_lower_case_types_and_default_version() -> None:
    definition = parse_definition("{name: 'ticks', payloadData: [{name: 'price', type: 'double'}]}")
    assert definition == WireStreamDefinition("ticks", "1.0.0", payload=(("price", "DOUBLE"),))


def test_gson_rendering_with_a_stream_id_key_parses() -> None:
    text = '{"streamId":"x:2.0.0","name":"x","version":"2.0.0","tags":["a"],"payloadData":[{"name":"n","type":"INT"}]}'
    assert parse_definition(text).tags == ("a",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{'version':'1.0.0'}", "stream name is null"),
        ("{'name':null}", "stream name is null"),
        ("{'name':'s','version':'1.0'}", "version 1.0 does not adhere to the format x.x.x "),
        ("{'name':'a:b'}", "name a:b cannot contain '-' "),
        ("{'name':'s','version':'1:0.0'}", "version 1:0.0 cannot contain '-' "),
        ("{'name':", " Malformed stream definition {'name':"),
        ("[1, 2]", " Malformed stream definition [1, 2]"),
        (
            "{'name':'s','metaData':[{'name':'m','type':'BOOLEAN'}]}",
            ' Malformed stream definition, Invalid type assigned to attribute name "m" in Meta data attributes',
        ),
        (
            "{'name':'s','correlationData':[{'name':'c'}]}",
            ' Malformed stream definition, Invalid type assigned to attribute name "c" in Correlation data attributes',
        ),
        (
            "{'name':'s','payloadData':[{'name':'p','type':'INT'},{'name':'q','type':'INTEGER'}]}",
            ' Malformed stream definition, Invalid type assigned to attribute name "q" in Payload data attributes',
        ),
    ],
)
def test_invalid_definitions_give_wso2_messages(text: str, message: str) -> None:
    with pytest.raises(MalformedDefinition) as caught:
        parse_definition(text)
    assert caught.value.message == message


def test_to_json_is_proper_json_that_parses_back() -> None:
    definition = parse_definition(DELIVERY_STREAM)
    text = definition.to_json()
    assert "'" not in text
    assert parse_definition(text) == definition


def test_same_definition_ignores_nick_name_description_and_tags() -> None:
    plain = parse_definition(PIZZA_ORDER)
    decorated = WireStreamDefinition(
        plain.name, plain.version, payload=plain.payload, nick_name="n", description="d", tags=("t",)
    )
    assert same_definition(plain, decorated)
    reordered = WireStreamDefinition(plain.name, plain.version, payload=plain.payload[::-1])
    assert not same_definition(plain, reordered)


def test_redefining_an_equal_stream_returns_the_stored_one() -> None:
    stored = parse_definition(ORDER_STREAM)
    again = WireStreamDefinition(stored.name, stored.version, payload=stored.payload)
    assert check_definition(again, [stored]) is stored


def test_redefining_a_different_stream_with_the_same_id_is_a_conflict() -> None:
    stored = parse_definition(PIZZA_ORDER)
    different = WireStreamDefinition(stored.name, stored.version, payload=stored.payload[:2])
    with pytest.raises(DefinitionConflict) as caught:
        check_definition(different, [stored])
    assert caught.value.message.startswith("Similar event stream for ")
    assert "with the same name and version already exist: " in caught.value.message


def test_new_version_must_keep_attribute_types() -> None:
    stored = parse_definition(PIZZA_ORDER)
    retyped = WireStreamDefinition("pizzaOrder", "2.0.0", payload=(("orderNo", "LONG"),))
    with pytest.raises(DefinitionConflict) as caught:
        check_definition(retyped, [stored])
    assert caught.value.message.startswith(
        "Attribute type mismatch payload orderNo type:LONG was already defined with type:INT"
    )
    extended = WireStreamDefinition("pizzaOrder", "2.0.0", payload=(*stored.payload, ("tip", "FLOAT")))
    assert check_definition(extended, [stored]) is None


def test_constructing_a_definition_with_an_unknown_type_fails() -> None:
    with pytest.raises(MalformedDefinition, match="BOOLEAN"):
        WireStreamDefinition("s", payload=(("flag", "BOOLEAN"),))
