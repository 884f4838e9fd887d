"""The policy of the node's HTTP port: which connections may open, which must close.

`Guard` keeps the count of open connections per client address and in all, and decides
from times a connection carries (see `Connection`); `app.http.guard` applies its
decisions to waitress's connections in the I/O thread.

- `max_connections_per_address`: a client address's connection past it is refused;
- `max_connections`: past it, the connection that has waited longest without sending a
  request (silent, or its headers incomplete, then idle keep-alive, then a body still
  arriving) is closed to make room; if every connection has a request in service, the new
  one is refused (`victim` is None);
- deadlines, where waitress only knows inactivity (one byte a second keeps its connection
  open forever): a connection must complete its request headers within `header_timeout` of
  connecting (a later request on a keep-alive connection: of its first byte), and the body
  within `body_timeout` of the headers; a keep-alive connection idle for `idle_timeout` is
  closed. A request being served stops its connection's clocks.

Imports nothing of ours but `adapters.throttle` (log lines under a flood).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from adapters.throttle import Throttle

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """The `[http]` limits of the port (`app.config.Http` documents each)."""

    threads: int = 8
    max_connections: int = 1000
    max_connections_per_address: int = 50
    header_timeout: float = 10.0
    body_timeout: float = 60.0
    idle_timeout: float = 30.0
    max_header_bytes: int = 64 * 1024
    max_body_bytes: int = 16 * 1024 * 1024
    max_inflight_bytes: int = 64 * 1024 * 1024  # request bodies held at once, all connections
    stop_timeout: float = 10.0  # how long `stop()` waits for requests being served


class PartialRequest(Protocol):
    started: float  # monotonic time of its first byte (of connecting, for a connection's first)
    headers_at: float | None  # monotonic time its headers were complete

    def restart_clocks(self, now: float) -> None: ...


class Connection(Protocol):
    """What the guard reads of a waitress channel (and sets: `will_close`)."""

    addr: Any
    will_close: bool
    close_when_flushed: bool
    request: PartialRequest | None  # the request being received
    requests: list[Any]  # complete requests, in service or queued
    got_data: bool
    accepted: float  # monotonic
    last_activity: float  # wall clock, kept by waitress
    total_outbufs_len: int  # reply bytes not yet sent


C = TypeVar("C", bound=Connection)


class Guard:
    """Connection counts, whom to close to make room, and the deadlines; shared by the listeners
    of one port. Counting is thread-safe; `victim` and `sweep` run in the I/O thread."""

    def __init__(
        self,
        limits: Limits,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,  # waitress's `last_activity` is wall-clock time
    ) -> None:
        self.limits = limits
        self._clock = clock
        self._wall = wall
        self._lock = threading.Lock()
        self._open: dict[str, int] = {}
        self._total = 0
        self._refusals = Throttle(30.0)
        self._drops = Throttle(30.0)
        self._evictions = Throttle(30.0)

    def admit(self, host: str) -> bool:
        """Count a new connection from `host`, or say no: it has the most it may open."""
        with self._lock:
            count = self._open.get(host, 0)
            if count < self.limits.max_connections_per_address:
                self._open[host] = count + 1
                self._total += 1
                return True
        allowed, held = self._refusals.allow()
        if allowed:
            log.warning(
                "http refused a connection from %s: it has %d open, the limit "
                "(http.max_connections_per_address)%s",
                host,
                count,
                f"; {held} more refused since the last such line" if held else "",
            )
        return False

    def release(self, host: str) -> None:
        with self._lock:
            self._total -= 1
            count = self._open.get(host, 0) - 1
            if count > 0:
                self._open[host] = count
            else:
                self._open.pop(host, None)

    def open_from(self, host: str) -> int:
        with self._lock:
            return self._open.get(host, 0)

    @property
    def over_capacity(self) -> bool:
        """More connections are counted than `max_connections`."""
        with self._lock:
            return self._total > self.limits.max_connections

    def victim(self, channels: Iterable[C]) -> C | None:
        """The connection to close to make room for a new one; None when all are busy.

        First the one waiting longest for its request headers (silent since connecting, or
        sending them slowly), then the longest idle keep-alive one, then the one whose body
        has been arriving longest. A connection with a request in service, or a reply to
        send, is never chosen.
        """
        best: tuple[int, float] | None = None
        chosen = None
        for channel in channels:
            if (
                channel.will_close
                or channel.close_when_flushed
                or channel.requests
                or channel.total_outbufs_len
            ):
                continue
            request = channel.request
            if request is None:
                rank = (1, channel.last_activity) if channel.got_data else (0, channel.accepted)
            elif request.headers_at is None:
                rank = (0, request.started)
            else:
                rank = (2, request.headers_at)
            if best is None or rank < best:
                best, chosen = rank, channel
        if chosen is not None:
            allowed, held = self._evictions.allow()
            if allowed:
                log.warning(
                    "http closed the connection from %s that waited longest for its request, to make "
                    "room for a new one (http.max_connections reached)%s",
                    chosen.addr[0] if chosen.addr else "?",
                    f"; {held} more closed since the last such line" if held else "",
                )
        return chosen

    def sweep(self, channels: Iterable[Connection]) -> None:
        """Close the connections past a deadline (run in the I/O thread)."""
        now, wall = self._clock(), self._wall()
        for channel in list(channels):
            overdue = self._overdue(channel, now, wall)
            if overdue is None:
                continue
            channel.will_close = True
            if overdue:
                allowed, held = self._drops.allow()
                if allowed:
                    log.warning(
                        "http closed a connection from %s: %s%s",
                        channel.addr[0] if channel.addr else "?",
                        overdue,
                        f"; {held} more closed since the last such line" if held else "",
                    )

    def _overdue(self, channel: Connection, now: float, wall: float) -> str | None:
        """Why `channel` must close now ("" when it was only idle), else None."""
        if channel.will_close or channel.close_when_flushed:
            return None
        limits = self.limits
        request = channel.request
        if channel.requests:  # being served: a next request's clocks wait for it
            if request is not None:
                request.restart_clocks(now)
            return None
        if request is not None:
            if request.headers_at is None:
                if now - request.started > limits.header_timeout:
                    return self._late_headers()
            elif now - request.headers_at > limits.body_timeout:
                return (
                    f"the request body did not arrive within {limits.body_timeout:g} s of its "
                    "headers (http.body_timeout_seconds)"
                )
            return None
        if not channel.got_data:
            return self._late_headers() if now - channel.accepted > limits.header_timeout else None
        return "" if wall - channel.last_activity > limits.idle_timeout else None

    def _late_headers(self) -> str:
        return (
            f"the request headers did not arrive within {self.limits.header_timeout:g} s "
            "(http.header_timeout_seconds)"
        )
