"""`cepheus publish` input: JSON Lines and CSV files into Data Bridge events, errors naming path:line."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from adapters.thrift import WireEvent
from app.node.catalog import KnownStream, known
from app.publishing import PublishInputError, file_format, read_events, stream_from_definition
from app.registry import Attribute, StreamDefinition

ORDERS = known(
    StreamDefinition(
        "orders",
        "1.0.0",
        meta=(Attribute("src", "STRING"),),
        payload=(Attribute("orderNo", "STRING"), Attribute("qty", "INT")),
    )
)
NOW = 42


def events(path: Path, stream: KnownStream = ORDERS, **kwargs: Any) -> list[tuple[int, WireEvent]]:
    return list(read_events(str(path), stream, now=lambda: NOW, **kwargs))


def failure(path: Path, stream: KnownStream = ORDERS, **kwargs: Any) -> str:
    with pytest.raises(PublishInputError) as info:
        events(path, stream, **kwargs)
    return str(info.value)


def wire(ts: int, src: str | None, order: str, qty: int | None) -> WireEvent:
    return WireEvent("orders:1.0.0", ts, (src,), None, (order, qty))


@pytest.fixture
def jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "orders.jsonl"
    path.write_text(
        "\n".join(
            [
                '{"stream": "orders", "timestamp": 1000, "data": ["web", "o1", 1]}',
                '{"time": 5000}',
                "",
                '{"stream": "payments", "timestamp": 1100, "data": [1, 2, 3]}',
                '{"stream": "orders:1.0.0", "data": {"meta_src": "app", "orderNo": "o2", "qty": 2}}',
                '{"stream": "orders:2.0.0", "data": ["web", "skipped", 9]}',
                '["web", "o3", 3]',
                '{"event": {"metaData": {"src": "pos"}, "payloadData": {"orderNo": "o4", "qty": 4}}, "timestamp": 7}',
                '{"data": ["web", "o5", 5], "timestamp": 1200}',
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    return path


def test_jsonl_takes_every_form_and_filters_replay_lines_by_stream(jsonl: Path) -> None:
    assert events(jsonl) == [
        (1, wire(NOW, "web", "o1", 1)),
        (5, wire(NOW, "app", "o2", 2)),
        (7, wire(NOW, "web", "o3", 3)),
        (8, wire(NOW, "pos", "o4", 4)),
        (9, wire(NOW, "web", "o5", 5)),
    ]


def test_jsonl_file_timestamps_when_asked_and_now_for_events_without_one(jsonl: Path) -> None:
    stamps = [(line, e.timestamp) for line, e in events(jsonl, use_file_timestamps=True)]
    assert stamps == [(1, 1000), (5, NOW), (7, NOW), (8, 7), (9, 1200)]


def test_now_is_called_for_every_event(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('["a", "o1", 1]\n["a", "o2", 2]\n')
    clock = iter([10, 20])
    got = list(read_events(str(path), ORDERS, now=lambda: next(clock)))
    assert [e.timestamp for _, e in got] == [10, 20]


def test_a_stream_filter_matches_the_name_or_the_id(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text(
        '{"stream": "orders", "data": ["a", "byname", 1]}\n'
        '{"stream": "orders:1.0.0", "data": ["a", "byid", 1]}\n'
        '{"stream": "Orders", "data": ["a", "othercase", 1]}\n'
    )
    assert [e.payload for _, e in events(path)] == [("byname", 1), ("byid", 1)]


def test_lines_of_other_streams_are_not_checked(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('{"stream": "other", "data": "not even an event"}\n["a", "o", 1]\n')
    assert events(path) == [(2, wire(NOW, "a", "o", 1))]


def test_csv_skips_the_header_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "orders.csv"
    path.write_text('meta_src,orderNo,qty\nweb,o1,1\n\n"a,b",o2,\n', encoding="utf-8")
    assert events(path) == [(2, wire(NOW, "web", "o1", 1)), (4, wire(NOW, "a,b", "o2", None))]


def test_csv_without_a_header_and_file_timestamps_use_now(tmp_path: Path) -> None:
    path = tmp_path / "orders.csv"
    path.write_text("web,o1,1\nweb,o2,2\n")
    assert events(path, use_file_timestamps=True) == [
        (1, wire(NOW, "web", "o1", 1)),
        (2, wire(NOW, "web", "o2", 2)),
    ]


def test_a_header_only_counts_on_the_first_line(tmp_path: Path) -> None:
    path = tmp_path / "orders.csv"
    path.write_text("web,o1,1\nmeta_src,orderNo,qty\n")
    assert failure(path) == f"{path}:2: attribute 'qty': 'qty' is not an int"


def test_the_format_follows_the_extension_unless_given(tmp_path: Path) -> None:
    assert file_format("x/ORDERS.CSV") == "csv"
    assert file_format("x/orders.jsonl") == "jsonl"
    assert file_format("x/orders.txt") == "jsonl"
    path = tmp_path / "orders.txt"
    path.write_text("web,o1,1\n")
    assert events(path, fmt="csv") == [(1, wire(NOW, "web", "o1", 1))]
    assert failure(path, fmt="xml") == "format 'xml' is unknown (use jsonl or csv)"


def test_an_open_handle_is_read_instead_of_the_path() -> None:
    handle = io.StringIO('["web", "o1", 1]\n')
    got = list(read_events("-", ORDERS, "jsonl", now=lambda: NOW, handle=handle))
    assert got == [(1, wire(NOW, "web", "o1", 1))]
    assert not handle.closed


# ---- errors name the file and the line ------------------------------------------------------------


def test_jsonl_bad_json(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('["a", "o", 1]\n{oops\n')
    assert failure(path).startswith(f"{path}:2: not JSON (")


def test_jsonl_wrong_type(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('["a", "o", 1]\n\n{"stream": "orders", "data": ["a", "o", "x"]}\n')
    assert failure(path) == f"{path}:3: attribute 'qty': expected int, got string 'x'"


def test_jsonl_wrong_count(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('["a", "o"]\n')
    assert failure(path) == f"{path}:1: orders:1.0.0 has 3 attributes, got 2 values"


def test_jsonl_bad_timestamp(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('{"data": ["a", "o", 1], "timestamp": "soon"}\n')
    assert failure(path) == f"{path}:1: timestamp must be a whole number of ms since the epoch, got 'soon'"


def test_jsonl_time_marker_with_other_keys_is_an_event_error(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('{"time": 5, "data": ["a", "o", 1]}\n')
    assert failure(path) == f"{path}:1: unknown key 'time' (expected data, timestamp)"


def test_csv_bad_value_and_wrong_count(tmp_path: Path) -> None:
    path = tmp_path / "e.csv"
    path.write_text("web,o1,1\nweb,o2,many\n")
    assert failure(path) == f"{path}:2: attribute 'qty': 'many' is not an int"
    path.write_text("web,o1\n")
    assert failure(path) == f"{path}:1: orders:1.0.0 has 3 attributes, the record has 2 fields"


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_bytes(b'["a", "o", 1]\n\xff\xfe\n')
    assert failure(path) == f"{path}: not UTF-8 text"


def test_events_before_an_error_are_yielded_first(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('["a", "o", 1]\n["a", "o", "x"]\n')
    reader = read_events(str(path), ORDERS, now=lambda: NOW)
    assert next(reader) == (1, wire(NOW, "a", "o", 1))
    with pytest.raises(PublishInputError, match=r":2: attribute 'qty'"):
        next(reader)


# ---- stream definitions -----------------------------------------------------------------------------


def test_stream_from_definition_accepts_single_quotes() -> None:
    stream = stream_from_definition(
        "{'name': 'orders', 'version': '1.0.0', 'metaData': [{'name': 'src', 'type': 'STRING'}],"
        " 'payloadData': [{'name': 'orderNo', 'type': 'string'}, {'name': 'qty', 'type': 'INT'}]}"
    )
    assert stream == ORDERS


def test_stream_from_definition_defaults_the_version() -> None:
    stream = stream_from_definition('{"name": "p", "payloadData": [{"name": "x", "type": "LONG"}]}')
    assert stream.id == "p:1.0.0"
    assert [(n, t.value) for n, t in stream.attributes] == [("x", "long")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "stream definition: Malformed stream definition {"),
        ("[]", "stream definition: Malformed stream definition []"),
        ("{'version': '1.0.0'}", "stream definition: stream name is null"),
        (
            "{'name': 'x', 'version': '1'}",
            "stream definition: version 1 does not adhere to the format x.x.x ",
        ),
        (
            "{'name': 'x', 'payloadData': [{'name': 'a', 'type': 'BLOB'}]}",
            'stream definition: Malformed stream definition, Invalid type assigned to attribute name "a" '
            "in Payload data attributes",
        ),
        (
            "{'name': 'x', 'payloadData': [{'name': 'a', 'type': 'INT'}, {'name': 'a', 'type': 'LONG'}]}",
            "stream definition: stream x:1.0.0: payload attribute 'a' is defined twice",
        ),
        (
            "{'name': 'x', 'payloadData': [{'name': 'a-b', 'type': 'INT'}]}",
            "stream definition: stream x:1.0.0: payload[0].name must be an identifier (got 'a-b')",
        ),
    ],
)
def test_malformed_definitions(text: str, message: str) -> None:
    with pytest.raises(PublishInputError) as info:
        stream_from_definition(text)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("name", "text"),
    [("orders.csv", "meta_src,orderNo,qty\nweb,o1,1\n"), ("orders.jsonl", '["web", "o1", 1]\n')],
)
def test_a_leading_byte_order_mark_is_ignored(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert [e for _, e in events(path)] == [wire(NOW, "web", "o1", 1)]
