"""Bundles: the §6.1 encoder, the §6.2 decoder and the wire form (§3.3, §6.3, §6.4)."""

from __future__ import annotations

import math
from typing import Any

import pytest
import thriftpy2.protocol
import thriftpy2.transport
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.thrift import idl
from adapters.thrift.bundle import _decode_mixed, decode_bundle, encode_bundle
from adapters.thrift.bundle_codec import read_bundle, write_bundle
from adapters.thrift.codec import Reader
from adapters.thrift.definitions import WireStreamDefinition, parse_definition
from adapters.thrift.errors import EventEncodingError, UndefinedEventType
from adapters.thrift.events import Bundle, WireEvent, WireEvents

from .wire_samples import BUNDLE_STRUCT, DELIVERY_STREAM, PIZZA_ORDER, SESSION

PIZZA = parse_definition(PIZZA_ORDER)
DELIVERY = parse_definition(DELIVERY_STREAM)
KNOWN = {d.stream_id: d for d in (PIZZA, DELIVERY)}
lookup = KNOWN.get

PIZZA_EVENTS = [
    WireEvent("pizzaOrder:1.0.0", 1700000000000, None, None, (1001, "Alice", 12.5, False)),
    WireEvent("pizzaOrder:1.0.0", 1700000000500, None, None, (1002, "Bob", 20.0, True), {"channel": "web"}),
]


def reread(bundle: Bundle) -> Bundle:
    return read_bundle(Reader.of(write_bundle(bundle)))


def test_pizza_example_encodes_to_the_lists_of_section_6_3() -> None:
    bundle = encode_bundle(SESSION, PIZZA_EVENTS, lookup)
    assert bundle.event_num == 2
    assert list(bundle.ints) == [1001, 1002]
    assert list(bundle.longs) == [1700000000000, 1700000000500]
    assert list(bundle.doubles) == [12.5, 20.0]
    assert list(bundle.bools) == [False, True]
    assert list(bundle.strings) == ["pizzaOrder:1.0.0", "Alice", "pizzaOrder:1.0.0", "Bob"]
    assert bundle.arbitrary == {1: {"channel": "web"}}


def test_pizza_example_writes_the_bytes_of_section_6_3() -> None:
    assert write_bundle(encode_bundle(SESSION, PIZZA_EVENTS, lookup)) == BUNDLE_STRUCT


def test_thriftpy2_with_our_idl_writes_the_same_bundle_bytes() -> None:
    protocol: Any = thriftpy2.protocol
    transport: Any = thriftpy2.transport
    thrift_bundle = idl.module().ThriftEventBundle(
        sessionId=SESSION,
        eventNum=2,
        intAttributeList=[1001, 1002],
        longAttributeList=[1700000000000, 1700000000500],
        doubleAttributeList=[12.5, 20.0],
        boolAttributeList=[False, True],
        stringAttributeList=["pizzaOrder:1.0.0", "Alice", "pizzaOrder:1.0.0", "Bob"],
        arbitraryDataMapMap={1: {"channel": "web"}},
    )
    buffer = transport.TMemoryBuffer()
    thrift_bundle.write(protocol.TBinaryProtocol(buffer))
    assert buffer.getvalue() == BUNDLE_STRUCT


def test_pizza_bytes_decode_to_the_two_events() -> None:
    assert decode_bundle(read_bundle(Reader.of(BUNDLE_STRUCT)), lookup) == PIZZA_EVENTS


def test_delivery_example_orders_meta_before_payload_and_leaves_lists_out() -> None:
    event = WireEvent(
        "deliveryStream:1.0.0", 77, ("Delivery1",), None, ("Order1", "Colombo", 100, 50.0, "Mohan")
    )
    bundle = encode_bundle(SESSION, [event], lookup)
    assert list(bundle.strings) == ["deliveryStream:1.0.0", "Delivery1", "Order1", "Colombo", "Mohan"]
    assert list(bundle.longs) == [77, 100]
    assert list(bundle.doubles) == [50.0]
    data = write_bundle(bundle)
    assert b"\x0f\x00\x03" not in data and b"\x0f\x00\x06" not in data and b"\x0d\x00\x08" not in data
    assert decode_bundle(reread(bundle), lookup) == [event]


def test_null_strings_travel_as_the_null_marker() -> None:
    event = WireEvent("deliveryStream:1.0.0", 1, (None,), None, ("Order1", None, 5, 1.0, "_null"))
    bundle = encode_bundle(None, [event], lookup)
    assert list(bundle.strings) == ["deliveryStream:1.0.0", "_null", "Order1", "_null", "_null"]
    decoded = decode_bundle(reread(bundle), lookup)
    assert decoded == [event._replace(payload=("Order1", None, 5, 1.0, None))]


def test_null_in_a_non_string_attribute_cannot_be_encoded() -> None:
    event = WireEvent("pizzaOrder:1.0.0", 1, None, None, (None, "Alice", 1.0, True))
    with pytest.raises(EventEncodingError, match="non-STRING"):
        encode_bundle(None, [event], lookup)


def test_events_of_an_unknown_stream_cannot_be_encoded() -> None:
    with pytest.raises(EventEncodingError, match="define the stream"):
        encode_bundle(None, [WireEvent("nope:1.0.0", 1)], lookup)


def test_values_of_the_wrong_type_fail_when_written() -> None:
    event = WireEvent("pizzaOrder:1.0.0", 1, None, None, ("one", "Alice", 1.0, True))
    with pytest.raises(EventEncodingError, match="declared Thrift types"):
        write_bundle(encode_bundle(None, [event], lookup))


def test_mixed_streams_in_one_bundle_round_trip() -> None:
    delivery = WireEvent("deliveryStream:1.0.0", 5, ("D1",), None, ("O1", "Kandy", 50, 70.0, "Rajeev"))
    events = [PIZZA_EVENTS[0], delivery, PIZZA_EVENTS[1], delivery]
    assert decode_bundle(reread(encode_bundle(SESSION, events, lookup)), lookup) == events


def test_unknown_stream_id_is_an_undefined_event_type() -> None:
    bundle = encode_bundle(SESSION, PIZZA_EVENTS, lookup)
    with pytest.raises(UndefinedEventType, match="No StreamDefinition for streamId pizzaOrder:1.0.0"):
        decode_bundle(bundle, lambda _sid: None)


def test_a_list_running_out_is_an_undefined_event_type() -> None:
    bundle = encode_bundle(SESSION, PIZZA_EVENTS, lookup)
    bundle.ints = [1001]
    with pytest.raises(UndefinedEventType, match="event 1 of a bundle of 2 .* intAttributeList"):
        decode_bundle(bundle, lookup)


def test_values_left_over_are_an_undefined_event_type() -> None:
    bundle = encode_bundle(SESSION, PIZZA_EVENTS, lookup)
    bundle.strings = [*bundle.strings, "extra"]
    with pytest.raises(UndefinedEventType, match=r"1 in stringAttributeList"):
        decode_bundle(bundle, lookup)


def test_a_java_null_in_an_int_attribute_shifts_values_and_is_detected() -> None:
    bundle = encode_bundle(SESSION, PIZZA_EVENTS, lookup)
    bundle.ints = [1002]
    bundle.strings = ["pizzaOrder:1.0.0", "_null", "Alice", "pizzaOrder:1.0.0", "Bob"]
    with pytest.raises(UndefinedEventType, match="streamId Alice"):
        decode_bundle(bundle, lookup)


def test_empty_and_negative_bundles() -> None:
    assert decode_bundle(Bundle(), lookup) == []
    with pytest.raises(UndefinedEventType, match="negative"):
        decode_bundle(Bundle(event_num=-1), lookup)
    with pytest.raises(UndefinedEventType, match="no stream id"):
        decode_bundle(Bundle(event_num=1), lookup)


def test_lists_of_the_wrong_element_type_count_as_absent() -> None:
    data = b"\x08\x00\x02\x00\x00\x00\x00" + b"\x0f\x00\x03\x0a\x00\x00\x00\x01" + b"\x00" * 8 + b"\x00"
    bundle = read_bundle(Reader.of(data))
    assert bundle.ints == () and bundle.event_num == 0


TYPES = {
    "INT": st.integers(-(2**31), 2**31 - 1),
    "LONG": st.integers(-(2**63), 2**63 - 1),
    "FLOAT": st.floats(allow_nan=False, width=32),
    "DOUBLE": st.floats(allow_nan=False),
    "BOOL": st.booleans(),
    "STRING": st.one_of(st.none(), st.text(max_size=8)),
}
names = st.sampled_from(["a", "b", "c", "d", "e"])
sections = st.lists(st.tuples(names, st.sampled_from(list(TYPES))), max_size=4).map(tuple)


@st.composite
def streams_and_events(draw: st.DrawFn) -> tuple[list[WireStreamDefinition], list[WireEvent]]:
    definitions = [
        WireStreamDefinition(f"s{i}", "1.0.0", draw(sections), draw(sections), draw(sections))
        for i in range(draw(st.integers(1, 3)))
    ]
    events = []
    for _ in range(draw(st.integers(0, 12))):
        d = draw(st.sampled_from(definitions))
        parts = [
            tuple(draw(TYPES[kind]) for _, kind in attrs) or None
            for attrs in (d.meta, d.correlation, d.payload)
        ]
        extra = draw(
            st.one_of(st.none(), st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2))
        )
        events.append(
            WireEvent(d.stream_id, draw(st.integers(0, 2**62)), parts[0], parts[1], parts[2], extra)
        )
    return definitions, events


def normalized(events: list[WireEvent]) -> list[WireEvent]:
    def fix(values: tuple[object, ...] | None) -> tuple[object, ...] | None:
        return None if values is None else tuple(None if v == "_null" else v for v in values)

    return [
        e._replace(meta=fix(e.meta), correlation=fix(e.correlation), payload=fix(e.payload)) for e in events
    ]


@settings(max_examples=80, deadline=None)
@given(streams_and_events())
def test_any_events_round_trip_through_the_wire(
    case: tuple[list[WireStreamDefinition], list[WireEvent]],
) -> None:
    definitions, events = case
    known = {d.stream_id: d for d in definitions}.get
    bundle = reread(encode_bundle("s", events, known))
    decoded = decode_bundle(bundle, known)
    assert decoded == normalized(events)
    if events:
        assert _decode_mixed(bundle, len(events), known) == decoded
    assert all(not isinstance(v, float) or not math.isnan(v) for e in decoded for v in e.payload or ())


@settings(max_examples=80, deadline=None)
@given(streams_and_events())
def test_a_bundle_of_one_stream_read_from_the_wire_keeps_its_columns_and_their_types(
    case: tuple[list[WireStreamDefinition], list[WireEvent]],
) -> None:
    definitions, events = case
    single = [e for e in events if e.stream_id == events[0].stream_id] if events else []
    known = {d.stream_id: d for d in definitions}.get
    decoded = decode_bundle(reread(encode_bundle("s", single, known)), known)
    if not single:
        return
    assert isinstance(decoded, WireEvents) and decoded.columns is not None
    assert list(decoded.timestamps) == [e.timestamp for e in decoded]
    rows = [(e.meta or ()) + (e.correlation or ()) + (e.payload or ()) for e in decoded]
    if decoded.columns:
        assert list(zip(*[values for _, values in decoded.columns], strict=True)) == rows
    for kind, values in decoded.columns:
        assert kind is None or all(type(v) is kind for v in values)


def test_a_bundle_built_in_python_promises_no_column_types() -> None:
    decoded = decode_bundle(encode_bundle(SESSION, PIZZA_EVENTS, lookup), lookup)
    assert decoded == PIZZA_EVENTS
    assert isinstance(decoded, WireEvents) and decoded.columns is None


def test_a_string_column_holding_a_null_has_no_type() -> None:
    event = WireEvent("deliveryStream:1.0.0", 1, ("D1",), None, ("Order1", None, 5, 1.0, "Mohan"))
    decoded = decode_bundle(reread(encode_bundle(None, [event, event], lookup)), lookup)
    assert isinstance(decoded, WireEvents) and decoded.columns is not None
    assert [kind for kind, _ in decoded.columns] == [str, str, None, int, float, str]
