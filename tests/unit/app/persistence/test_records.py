from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.persistence.records import COLUMNS2, Events, RecordError, Tick, decode, encode, stamped

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(),
)
rows = st.lists(st.lists(values, max_size=6).map(tuple), max_size=20)


@given(st.text(min_size=1), rows, st.data())
def test_events_come_back_equal_with_types_kept(stream, rows, data) -> None:
    stamps = data.draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=len(rows), max_size=len(rows)))
    record = Events(stream, stamps, rows)
    back = decode(encode(record))
    assert back == record
    assert [[type(v) for v in row] for row in back.rows] == [[type(v) for v in row] for row in rows]


def test_nan_and_lone_surrogates_survive() -> None:
    back = decode(encode(Events("S", [1], [(float("nan"), "\ud800", "\udc00x")])))
    assert isinstance(back, Events)
    value, *rest = back.rows[0]
    assert value != value
    assert rest == ["\ud800", "\udc00x"]


@given(st.integers(-(2**63), 2**63 - 1))
def test_tick_comes_back_equal(time_ms) -> None:
    assert decode(encode(Tick(time_ms))) == Tick(time_ms)


def test_a_value_of_another_type_is_refused_with_its_type_and_stream() -> None:
    with pytest.raises(ValueError, match="stream S: cannot log a value of type bytes"):
        encode(Events("S", [1], [(b"x",)]))


def test_rows_and_timestamps_must_pair_up() -> None:
    with pytest.raises(ValueError, match="stream S: 2 rows but 1 timestamps"):
        encode(Events("S", [1], [(1,), (2,)]))


@pytest.mark.parametrize("payload", [b"", b"\x09", b"\x02\x00", encode(Events("S", [1], [(1, "ab")]))[:-1]])
def test_a_payload_that_is_no_record_is_a_record_error(payload) -> None:
    with pytest.raises(RecordError):
        decode(payload)


column_kinds = st.sampled_from(["int", "float", "str", "bool", "mixed", "bigint"])
by_kind = {
    "int": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(allow_nan=False),
    "str": st.text(),
    "bool": st.booleans(),
    "mixed": values,
    "bigint": st.integers(2**63, 2**70),
}


@given(st.lists(column_kinds, max_size=5), st.integers(1, 30), st.integers(), st.data())
def test_rows_of_one_width_go_by_columns_and_come_back_equal(kinds, n, at, data) -> None:
    columns = [data.draw(st.lists(by_kind[k], min_size=n, max_size=n)) for k in kinds]
    rows = list(zip(*columns, strict=True)) if kinds else [()] * n
    record = Events("S", list(range(n)), rows, at=at % 2**62)
    payload = encode(record)
    assert payload[0] == 4  # the column layout
    back = decode(payload)
    assert back == record
    assert [[type(v) for v in row] for row in back.rows] == [[type(v) for v in row] for row in rows]


def test_a_truncated_column_payload_is_a_record_error() -> None:
    payload = encode(Events("S", [1, 2], [(1, "ab", 2.5), (2, "c", None)]))
    for cut in range(1, len(payload)):
        with pytest.raises(RecordError):
            decode(payload[:cut])


declared = {"int": int, "bigint": int, "float": float, "str": str, "bool": bool, "mixed": None}


@given(st.lists(column_kinds, min_size=1, max_size=5), st.integers(1, 30), st.data())
def test_columns_handed_over_with_their_types_encode_as_the_rows_do(kinds, n, data) -> None:
    columns = [data.draw(st.lists(by_kind[k], min_size=n, max_size=n)) for k in kinds]
    rows = list(zip(*columns, strict=True))
    typed = tuple((declared[k], tuple(c)) for k, c in zip(kinds, columns, strict=True))
    with_columns = Events("S", list(range(n)), rows, 7, columns=typed)
    assert encode(with_columns) == encode(Events("S", list(range(n)), rows, 7))
    assert decode(encode(with_columns)) == with_columns


@pytest.mark.parametrize("rows", [[(1, "a"), (2, "b")], [(1,), (2, "b")]], ids=["columns", "rows"])
def test_a_payload_encoded_before_the_clock_is_read_is_stamped_after(rows) -> None:
    payload = stamped(encode(Events("S", [1, 2], rows)), 1_700_000_000_123)
    assert decode(payload) == Events("S", [1, 2], rows, 1_700_000_000_123)


def test_only_an_events_payload_is_stamped() -> None:
    with pytest.raises(ValueError, match="only an Events payload"):
        stamped(encode(Tick(5)), 6)


def test_one_timestamp_and_one_string_for_every_event_are_stored_once() -> None:
    rows = [("host-a", i, f"s{i % 3}", i / 2) for i in range(200)]
    record = Events("S", [1_700_000_000_000] * 200, rows, 5)
    columns = tuple(
        (t, list(c)) for t, c in zip((str, int, str, float), zip(*rows, strict=True), strict=True)
    )
    payload = encode(Events("S", record.timestamps, rows, 5, columns))
    varied = encode(Events("S", [1_700_000_000_000 + i for i in range(200)], rows, 5))
    assert payload[0] == COLUMNS2
    assert len(varied) - len(payload) == 199 * 8
    assert payload.count(b"host-a") == 1
    assert decode(payload) == record
    assert decode(stamped(payload, 9)) == Events("S", record.timestamps, rows, 9)


# written by the encoder of the previous format (kind 3, every timestamp stored), and row-wise
OLD_COLUMNS = bytes.fromhex(
    "03d2040000000000000100000003000000050000005305000000000000000500000000000000070000000000"
    "000002010000000000000002000000000000000300000000000000030100000001000000030000000500000061"
    "616200630100000000000004400000000000000c40000000000000f0bf0401000100680000000100000000000000"
    "000100000003000000030000000000000000000000020000005300000000000000000000000000000000000000"
    "000000000001000000010000000100000000050601000000160000007831313830353931363230373137343131"
    "333033343234"
)
OLD_ROWS = bytes.fromhex(
    "010900000000000000010000000200000003000000020000000000000001000000530100000000000000020000"
    "00000000000100000002000000030305010000000000000002000000000000000100000062"
)


def test_payloads_of_the_previous_format_still_decode() -> None:
    assert decode(OLD_COLUMNS) == Events(
        "S",
        [5, 5, 7],
        [(1, "a", 2.5, True, None), (2, "a", 3.5, False, "x"), (3, "b\x00c", -1.0, True, 2**70)],
        1234,
    )
    assert decode(OLD_ROWS) == Events("S", [1, 2], [(1,), (2, "b")], 9)
    assert decode(stamped(OLD_COLUMNS, 77)).at == 77  # type: ignore[union-attr]


def test_a_record_of_an_unknown_kind_or_flag_is_refused_naming_it() -> None:
    with pytest.raises(RecordError, match="unknown record kind 9: this Cepheus reads kinds 1, 2, 3, 4"):
        decode(b"\x09" + bytes(20))
    payload = bytearray(encode(Events("S", [1], [(1,)])))
    payload[21] = 2  # the flags byte
    with pytest.raises(RecordError, match="unknown flags 2"):
        decode(bytes(payload))
