"""`InflightBudget` and the `Reader` that draws on it: the bytes of unfinished messages are
bounded node-wide and given back when a message is done or its connection closes."""

from __future__ import annotations

import threading

import pytest

from adapters.thrift.budget import InflightBudget
from adapters.thrift.codec import Reader, encode_string
from adapters.thrift.errors import ThriftProtocolError


def test_take_waits_for_room_and_times_out() -> None:
    budget = InflightBudget(100)
    assert budget.take(80, timeout=0)
    assert not budget.take(30, timeout=0.01)
    released = threading.Timer(0.05, budget.give, args=(50,))
    released.start()
    assert budget.take(30, timeout=5)
    assert budget.held == 60
    released.join()


def chunks(data: bytes, size: int = 5) -> object:
    parts = [data[i : i + size] for i in range(0, len(data), size)]

    def recv(_n: int) -> bytes:
        return parts.pop(0) if parts else b""

    return recv


def test_a_reader_holds_the_bytes_of_its_current_message_only() -> None:
    budget = InflightBudget(1000)
    data = encode_string("a" * 40) + encode_string("b" * 40)
    reader = Reader(chunks(data), 1000, budget)  # type: ignore[arg-type]
    reader.begin()
    assert reader.string() == "a" * 40
    assert budget.held == 45  # its 44 bytes, and the first byte of the next that came with them
    reader.begin()  # the first message is done: only what is buffered of the next stays held
    assert budget.held == len(reader.buf)
    assert reader.string() == "b" * 40
    reader.release()
    assert budget.held == 0


def test_a_reader_gives_up_when_the_budget_stays_spent() -> None:
    budget = InflightBudget(64)
    reader = Reader(chunks(encode_string("x" * 100), 50), 1000, budget, budget_wait=0.01)  # type: ignore[arg-type]
    reader.begin()
    with pytest.raises(ThriftProtocolError, match="max_inflight_bytes"):
        reader.string()
    assert budget.held <= 64  # never more than the budget
    reader.release()
    assert budget.held == 0


def test_the_limit_can_rise_in_the_middle_of_a_message() -> None:
    data = encode_string("s") + encode_string("z" * 200)
    kept = Reader(chunks(data, 50), 16)  # type: ignore[arg-type]
    kept.limit_key = "thrift.max_login_message_bytes"
    kept.begin()
    assert kept.string() == "s"
    with pytest.raises(ThriftProtocolError, match="16 bytes .thrift.max_login_message_bytes"):
        kept.string()
    raised = Reader(chunks(data, 50), 16)  # type: ignore[arg-type]
    raised.begin()
    assert raised.string() == "s"
    raised.limit = 1000
    assert raised.string() == "z" * 200
