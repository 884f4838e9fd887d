"""waitress's server and connections with the node's limits, applied in waitress's I/O thread.

waitress reads requests without blocking in one I/O thread and hands only complete ones to
its workers, so a slow client never holds a worker; it limits the sizes of the header and
the body. Added here, with the policy of `app.node.http_limits.Guard`:

- admission: a connection past its address's limit gets 429, one past `max_connections`
  makes room by closing the guard's victim or, with none, gets 503; either is answered and
  closed as soon as it is accepted (waitress itself would stop accepting at its limit,
  leaving everyone waiting in the listen backlog);
- the deadlines, checked every second;
- the times the deadlines need (`TimedRequest`, `GuardedChannel`);
- JSON for the errors waitress answers itself (a malformed request, a header or a body over
  its limit), like every other error of the port.

Owns `GuardedServer` and what it is built of; `app.node.http_server` runs them.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from typing import Any

from waitress.channel import HTTPChannel  # type: ignore[import-untyped]
from waitress.parser import HTTPRequestParser  # type: ignore[import-untyped]
from waitress.server import TcpWSGIServer  # type: ignore[import-untyped]
from waitress.task import ErrorTask  # type: ignore[import-untyped]

from app.node.http_limits import Guard

log = logging.getLogger(__name__)


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


def _refuse(conn: socket.socket, status: str, message: str) -> None:
    """Answer a connection we will not serve and close it; its request is never read."""
    body = json.dumps({"error": message}).encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
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
    next_channel_cleanup: float = 0.0

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
                "429 Too Many Requests",
                f"too many open connections from {host} (the limit is "
                f"{self.guard.limits.max_connections_per_address}); close some and retry",
            )
            return
        if self.guard.over_capacity:
            victim = self.guard.victim(c for c in self._map.values() if isinstance(c, GuardedChannel))
            if victim is None:
                self.guard.release(host)
                _refuse(
                    conn, "503 Service Unavailable", "every connection of the node is busy; retry shortly"
                )
                return
            victim.will_close = True  # closed by this loop; closing now could free its fd for reuse mid-poll
        try:
            self.set_socket_options(conn)
            channel = self.channel_class(self, conn, addr, self.adj, map=self._map)
        except OSError:
            self.guard.release(host)
            conn.close()
            return
        channel.counted_host = host

    def readable(self) -> bool:
        """waitress's, less its connection limit: admission is `handle_accept`'s."""
        now = time.time()
        if now >= self.next_channel_cleanup:
            self.next_channel_cleanup = now + self.adj.cleanup_interval
            self.maintenance(now)
        return bool(self.accepting)

    def maintenance(self, now: float) -> None:
        try:
            self.guard.sweep(self.active_channels.values())
        except Exception:  # the I/O thread must survive our bug: it serves every connection
            log.exception("http deadline sweep failed")
