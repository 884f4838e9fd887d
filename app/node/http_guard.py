"""The limits the node's HTTP port adds to waitress, enforced in waitress's I/O thread.

waitress reads requests without blocking in one I/O thread and hands only complete ones to
its workers, so a slow client never holds a worker; it caps open connections and the sizes
of the header and the body. What it lacks is here:

- `Limits.max_connections_per_address`: a client address's connection past the limit is
  answered 429 and closed as soon as it is accepted;
- deadlines, where waitress only knows inactivity (one byte a second keeps its connection
  open forever): a connection must complete its request headers within `header_timeout` of
  connecting (a later request on a keep-alive connection: of its first byte), and the body
  within `body_timeout` of the headers; a keep-alive connection idle for `idle_timeout` is
  closed. A request being served stops its connection's clocks;
- JSON for the errors waitress answers itself (a malformed request, a header or a body over
  its limit), like every other error of the port.

Owns `Limits`, `GuardedServer` and what it is built of; `app.node.http_server` runs them.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from waitress.channel import HTTPChannel  # type: ignore[import-untyped]
from waitress.parser import HTTPRequestParser  # type: ignore[import-untyped]
from waitress.server import TcpWSGIServer  # type: ignore[import-untyped]
from waitress.task import ErrorTask  # type: ignore[import-untyped]

from adapters.output.throttle import Throttle

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
    stop_timeout: float = 10.0  # how long `stop()` waits for requests being served


class TimedRequest(HTTPRequestParser):  # type: ignore[misc]
    """waitress's request parser, noting when the request began and when its headers ended."""

    def __init__(self, adj: Any) -> None:
        super().__init__(adj)
        self.started = time.monotonic()
        self.headers_at: float | None = None

    def received(self, data: bytes) -> int:
        consumed: int = super().received(data)
        if self.headers_finished and self.headers_at is None:
            self.headers_at = time.monotonic()
        return consumed

    def restart_clocks(self, now: float) -> None:
        self.started = now
        if self.headers_at is not None:
            self.headers_at = now


class JsonErrorTask(ErrorTask):  # type: ignore[misc]
    """The reply to a request waitress refuses itself, as `{"error": ...}`."""

    def execute(self) -> None:
        error = self.request.error
        adj = self.channel.adj
        if error.code == 431:
            message = (
                f"the request headers exceed {adj.max_request_header_size - 1} bytes (http.max_header_bytes)"
            )
        elif error.code == 413:
            message = (
                f"the request body exceeds {adj.max_request_body_size - 1} bytes (http.max_request_bytes)"
            )
        else:
            message = f"{error.reason}: {error.body}"
        body = json.dumps({"error": message}).encode()
        self.status = f"{error.code} {error.reason}"
        self.response_headers.append(("Content-Type", "application/json"))
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class GuardedChannel(HTTPChannel):  # type: ignore[misc]
    """One client connection: waitress's, with the times the deadlines need."""

    parser_class = TimedRequest
    error_task_class = JsonErrorTask

    def __init__(self, server: GuardedServer, sock: socket.socket, addr: Any, adj: Any, map: Any) -> None:
        self.accepted = time.monotonic()
        self.got_data = False
        self.counted_host: str | None = None  # set once the connection counts against its address
        super().__init__(server, sock, addr, adj, map=map)

    def received(self, data: bytes) -> bool:
        first, self.got_data = not self.got_data, True
        result = bool(super().received(data))
        if first and self.request is not None and not self.requests:
            self.request.started = self.accepted  # the first request's clock runs from connecting
        return result

    def del_channel(self, map: Any = None) -> None:
        super().del_channel(map)
        host, self.counted_host = self.counted_host, None
        if host is not None:
            self.server.guard.release(host)


class Guard:
    """Per-address counts and the deadlines, shared by the listeners of one port."""

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
        self._refusals = Throttle(30.0)
        self._drops = Throttle(30.0)

    def admit(self, host: str) -> bool:
        """Count a new connection from `host`, or say no: it has the most it may open."""
        with self._lock:
            count = self._open.get(host, 0)
            if count < self.limits.max_connections_per_address:
                self._open[host] = count + 1
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
            count = self._open.get(host, 0) - 1
            if count > 0:
                self._open[host] = count
            else:
                self._open.pop(host, None)

    def open_from(self, host: str) -> int:
        with self._lock:
            return self._open.get(host, 0)

    def sweep(self, channels: Iterable[GuardedChannel]) -> None:
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

    def _overdue(self, channel: GuardedChannel, now: float, wall: float) -> str | None:
        """Why `channel` must close now ("" when it was only idle), else None."""
        if channel.will_close or channel.close_when_flushed:
            return None
        limits = self.limits
        request: TimedRequest | None = channel.request
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


def _refuse(conn: socket.socket, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    head = (
        "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    try:
        conn.setblocking(False)
        conn.send(head.encode() + body)
    except OSError:
        pass
    finally:
        conn.close()


class GuardedServer(TcpWSGIServer):  # type: ignore[misc]
    """One listening socket: waitress's, admitting connections through the port's `Guard`."""

    channel_class = GuardedChannel

    def __init__(
        self, application: Any, map: Any, dispatcher: Any, adj: Any, sockinfo: Any, guard: Guard
    ) -> None:
        self.guard = guard
        super().__init__(application, map=map, dispatcher=dispatcher, adj=adj, sockinfo=sockinfo)

    def handle_accept(self) -> None:
        try:
            pair = self.accept()
        except OSError:
            return
        if pair is None:
            return
        conn, addr = pair
        host = str(addr[0])
        if not self.guard.admit(host):
            _refuse(
                conn,
                f"too many open connections from {host} (the limit is "
                f"{self.guard.limits.max_connections_per_address}); close some and retry",
            )
            return
        try:
            self.set_socket_options(conn)
            channel = self.channel_class(self, conn, addr, self.adj, map=self._map)
        except OSError:
            self.guard.release(host)
            conn.close()
            return
        channel.counted_host = host

    def maintenance(self, now: float) -> None:
        try:
            self.guard.sweep(self.active_channels.values())
        except Exception:  # the I/O thread must survive our bug: it serves every connection
            log.exception("http deadline sweep failed")
