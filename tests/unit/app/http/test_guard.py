"""`Guard`: connection counts, the choice of whom to close, and the deadlines, on stand-in
connections and a test clock; then waitress's channel noting its times."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

import pytest
from waitress.adjustments import Adjustments  # type: ignore[import-untyped]

from app.http.guard import GuardedChannel, Refused
from app.http.limits import Guard, Limits
from app.http.screen import Screen

LIMITS = Limits(max_connections_per_address=2, header_timeout=10.0, body_timeout=60.0, idle_timeout=30.0)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def connection(**state: Any) -> Any:
    """A waitress channel as the guard sees it: accepted at 1000, nothing received yet."""
    fields = {
        "addr": ("10.0.0.7", 5000),
        "will_close": False,
        "close_when_flushed": False,
        "request": None,
        "requests": [],
        "got_data": False,
        "accepted": 1000.0,
        "last_activity": 1000.0,
        "total_outbufs_len": 0,
    }
    return SimpleNamespace(**{**fields, **state})


class Partial:
    """A request being received: its first byte at `started`, its headers done at `headers_at`."""

    def __init__(self, started: float, headers_at: float | None = None) -> None:
        self.started, self.headers_at = started, headers_at

    def restart_clocks(self, now: float) -> None:
        self.started = now
        if self.headers_at is not None:
            self.headers_at = now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def closed_after(guard: Guard, clock: Clock, channel: Any, seconds: float) -> bool:
    clock.now += seconds
    guard.sweep([channel])
    return bool(channel.will_close)


def test_a_silent_connection_is_closed_at_the_header_deadline(clock: Clock) -> None:
    guard, channel = Guard(LIMITS, clock, clock), connection()
    assert not closed_after(guard, clock, channel, 10.0)
    assert closed_after(guard, clock, channel, 0.5)


def test_headers_trickling_in_are_closed_at_the_deadline_from_their_first_byte(clock: Clock) -> None:
    guard, channel = Guard(LIMITS, clock, clock), connection(got_data=True, request=Partial(1005.0))
    channel.last_activity = 1014.0  # bytes keep coming: not idle
    assert not closed_after(guard, clock, channel, 14.9)
    assert closed_after(guard, clock, channel, 0.2)


def test_a_body_must_follow_its_headers_within_the_body_deadline(clock: Clock) -> None:
    guard = Guard(LIMITS, clock, clock)
    channel = connection(got_data=True, request=Partial(1000.0, headers_at=1001.0))
    assert not closed_after(guard, clock, channel, 60.9)
    assert closed_after(guard, clock, channel, 0.2)


def test_an_idle_keep_alive_connection_is_closed_after_the_idle_timeout(clock: Clock) -> None:
    guard, channel = Guard(LIMITS, clock, clock), connection(got_data=True, last_activity=1000.0)
    assert not closed_after(guard, clock, channel, 30.0)
    assert closed_after(guard, clock, channel, 0.5)


def test_a_request_in_service_stops_the_clocks_of_the_next(clock: Clock) -> None:
    guard = Guard(LIMITS, clock, clock)
    pipelined = Partial(1000.0)
    channel = connection(got_data=True, requests=["in service"], request=pipelined)
    assert not closed_after(guard, clock, channel, 100.0)
    channel.requests = []
    assert not closed_after(guard, clock, channel, 9.0)  # ten seconds from the end of the service
    assert closed_after(guard, clock, channel, 1.5)


def test_overdue_connections_are_logged_with_their_address_and_the_key(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    guard = Guard(LIMITS, clock, clock)
    with caplog.at_level(logging.WARNING):
        closed_after(guard, clock, connection(), 11.0)
        closed_after(guard, clock, connection(got_data=True, last_activity=clock.now), 31.0)  # idle: quiet
    assert caplog.messages == [
        "http closed a connection from 10.0.0.7: the request headers did not arrive within 10 s "
        "(http.header_timeout_seconds)"
    ]


def test_each_address_may_open_up_to_its_limit(caplog: pytest.LogCaptureFixture) -> None:
    guard = Guard(LIMITS)
    assert guard.admit("10.0.0.7") and guard.admit("10.0.0.7")
    with caplog.at_level(logging.WARNING):
        assert not guard.admit("10.0.0.7")
    assert guard.admit("10.0.0.8")
    guard.release("10.0.0.7")
    assert guard.admit("10.0.0.7")
    assert (guard.open_from("10.0.0.7"), guard.open_from("10.0.0.8")) == (2, 1)
    assert caplog.messages == [
        "http refused a connection from 10.0.0.7: it has 2 open, the limit (http.max_connections_per_address)"
    ]


def test_past_max_connections_the_longest_waiting_for_its_headers_makes_room(
    caplog: pytest.LogCaptureFixture,
) -> None:
    guard = Guard(Limits(max_connections=2, max_connections_per_address=10))
    assert guard.admit("10.0.0.1") and guard.admit("10.0.0.2") and not guard.over_capacity
    assert guard.admit("10.0.0.3") and guard.over_capacity
    busy = connection(requests=["in service"], accepted=900.0)
    sending = connection(got_data=True, total_outbufs_len=10, last_activity=900.0)
    idle = connection(got_data=True, last_activity=950.0)
    uploading = connection(got_data=True, request=Partial(900.0, headers_at=901.0))
    trickling = connection(got_data=True, request=Partial(990.0))
    silent = connection(accepted=995.0)
    closing = connection(accepted=800.0, will_close=True)
    everyone = [busy, sending, idle, uploading, trickling, silent, closing]
    with caplog.at_level(logging.WARNING):
        assert guard.victim(everyone) is trickling
    assert caplog.messages == [
        "http closed the connection from 10.0.0.7 that waited longest for its request, to make room "
        "for a new one (http.max_connections reached)"
    ]
    assert guard.victim([busy, sending, idle, uploading, silent]) is silent
    assert guard.victim([busy, sending, idle, uploading]) is idle
    assert guard.victim([busy, sending, uploading]) is uploading
    assert guard.victim([busy, sending, closing]) is None
    guard.release("10.0.0.1")
    assert not guard.over_capacity


@pytest.fixture
def channel() -> Iterator[GuardedChannel]:
    """A real waitress channel on one end of a socket pair, its server a stand-in."""
    ours, theirs = socket.socketpair()
    adj = Adjustments()
    server = SimpleNamespace(
        active_channels={}, adj=adj, guard=Guard(LIMITS), add_task=lambda channel: None, screen=Screen(10_000)
    )
    made = GuardedChannel(cast(Any, server), ours, ("10.0.0.7", 5000), adj, map={})
    made.accepted = -500.0  # before any reading of the monotonic clock, whatever the uptime
    yield made
    made.close()
    theirs.close()


def test_the_first_request_is_timed_from_connecting(channel: GuardedChannel) -> None:
    channel.received(b"GET /health HT")
    assert channel.request.started == -500.0


def test_a_request_after_a_complete_one_is_timed_from_its_first_byte(channel: GuardedChannel) -> None:
    channel.received(b"GET /health HTTP/1.1\r\nHost: c\r\n\r\nGET /next HT")
    assert len(channel.requests) == 1
    assert channel.request.started > -500.0


def test_a_refused_request_pipelined_behind_one_in_service_is_answered_after_it(
    channel: GuardedChannel,
) -> None:
    channel.received(
        b"GET /health HTTP/1.1\r\nHost: c\r\n\r\n"
        b"POST /events/t:1 HTTP/1.1\r\nHost: c\r\nContent-Length: 10\r\n\r\n[1"
    )
    assert [r.path for r in channel.requests] == ["/health", "/events/t:1"]
    assert channel.requests[0].error is None
    refused = channel.requests[1].error
    assert isinstance(refused, Refused) and refused.code == 401
    assert channel.request is None and channel.socket is not None  # still open for the first reply
