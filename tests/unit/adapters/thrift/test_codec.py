"""The bounded TBinaryProtocol reader: lengths are checked before anything is allocated."""

from __future__ import annotations

import pytest

from adapters.thrift.codec import LIST, STRING, STRUCT, Reader
from adapters.thrift.errors import ConnectionClosed, ThriftProtocolError
from adapters.thrift.messages import read_message_begin


class Source:
    """A byte source that records how much it was asked for."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.requested: list[int] = []

    def __call__(self, n: int) -> bytes:
        self.requested.append(n)
        chunk, self.data = self.data[:3], self.data[3:]
        return chunk


def test_huge_declared_string_length_fails_without_reading() -> None:
    source = Source(b"\x7f\xff\xff\xff" + b"x" * 10)
    reader = Reader(source, limit=1024)
    with pytest.raises(ThriftProtocolError, match=r"exceeds 1024 bytes \(max_message_bytes\)"):
        reader.string()
    assert max(source.requested) <= 1024
    assert source.data == b"x" * 8  # read: two chunks of 3 bytes, for the 4 of the length; no more


def test_negative_length_is_a_protocol_error() -> None:
    with pytest.raises(ThriftProtocolError, match="negative"):
        Reader.of(b"\xff\xff\xff\xff").string()


def test_huge_list_count_is_a_protocol_error() -> None:
    with pytest.raises(ThriftProtocolError, match="list size"):
        Reader.of(b"\x0b\x10\x00\x00\x00", limit=1024).skip(LIST)


def test_budget_covers_the_whole_message() -> None:
    data = b"\x00\x00\x00\x08abcdefgh" * 4
    reader = Reader(Source(data), limit=30)
    reader.begin()
    assert reader.string() == "abcdefgh"
    assert reader.string() == "abcdefgh"
    with pytest.raises(ThriftProtocolError):
        reader.string()


def test_values_arriving_in_small_pieces_are_assembled() -> None:
    reader = Reader(Source(b"\x00\x00\x00\x0bhello world\x00\x00\x00\x07"), limit=1024)
    assert reader.string() == "hello world"
    assert reader.i32() == 7


def test_eof_between_messages_is_clean_and_inside_one_is_not() -> None:
    reader = Reader(Source(b""), limit=64)
    reader.begin()
    with pytest.raises(ConnectionClosed) as clean:
        reader.i32()
    assert clean.value.clean
    reader = Reader(Source(b"\x80\x01"), limit=64)
    reader.begin()
    with pytest.raises(ConnectionClosed) as torn:
        reader.i32()
    assert not torn.value.clean


def test_deeply_nested_structs_are_refused() -> None:
    nested = b"\x0c\x00\x01" * 200 + b"\x00" * 201
    with pytest.raises(ThriftProtocolError, match="nested deeper"):
        Reader.of(nested).skip(STRUCT)


def test_unknown_type_code_is_a_protocol_error() -> None:
    with pytest.raises(ThriftProtocolError, match="unknown Thrift type"):
        Reader.of(b"\x07\x00\x01\x00").skip(STRUCT)


def test_bad_message_version_is_a_protocol_error() -> None:
    with pytest.raises(ThriftProtocolError, match="bad version"):
        read_message_begin(Reader.of(b"\x80\x02\x00\x01\x00\x00\x00\x00"))


def test_invalid_utf8_becomes_replacement_characters() -> None:
    assert Reader.of(b"\x00\x00\x00\x02\xff\xfe").string() == "\ufffd\ufffd"
    reader = Reader.of(b"\x00\x00\x00\x00")
    reader.skip(STRING)
    assert reader.pos == 4


def test_a_framed_transport_client_is_told_what_is_wrong() -> None:
    framed = (19).to_bytes(4, "big") + b"\x80\x01\x00\x01\x00\x00\x00\x07publish\x00\x00\x00\x01\x00"
    with pytest.raises(ThriftProtocolError, match="TFramedTransport"):
        read_message_begin(Reader.of(framed))
