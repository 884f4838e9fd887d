"""waitress's server and connections with the node's limits, applied in waitress's I/O thread.

waitress reads requests without blocking in one I/O thread and hands only complete ones to
its workers, so a slow client never holds a worker; it limits the sizes of the header and
the body. Added here, with the policy of `app.http.limits.Guard`:

- admission: a connection past its address's limit gets 429, one past `max_connections`
  makes room by closing the guard's victim or, with none, gets 503; either is answered and
  closed as soon as it is accepted (waitress itself would stop accepting at its limit,
  leaving everyone waiting in the listen backlog);
- the deadlines, checked every second;
- the times the deadlines need (`TimedRequest`, `GuardedChannel`);
- `app.http.screen`'s refusals once a request's headers are complete, answered without
  reading the body and without a worker (a request pipelined behind one in service is
  answered by a worker after it, in order);
- every refusal ends through `app.http.drain`, so the client reads it rather than a reset;
- `GET /health` (and the probes `/livez`, `/readyz`) served by a worker of its own, never
  waiting behind logins;
- after an accept error (out of file descriptors: the listener stays readable), the listener
  is not polled for `ACCEPT_PAUSE` seconds instead of spinning;
- JSON for the errors waitress answers itself (a malformed request, a header or a body over
  its limit), like every other error of the port.

Owns `GuardedServer` and what it is built of; `app.http.server` runs them.
"""

from __future__ import annotations

import errno
import json
import logging
import socket
import time
from collections.abc import Callable
from typing import Any

from waitress.channel import HTTPChannel  # type: ignore[import-untyped]
from waitress.parser import HTTPRequestParser  # type: ignore[import-untyped]
from waitress.server import TcpWSGIServer  # type: ignore[import-untyped]
from waitress.task import ErrorTask  # type: ignore[import-untyped]
from waitress.utilities import Error  # type: ignore[import-untyped]

from app.http.drain import Drains
from app.http.limits import Guard
from app.http.screen import Refusal, Screen, is_health, retry_after

log = logging.getLogger(__name__)

ACCEPT_PAUSE = 1.0  # seconds the listener rests after an accept error


class Refused(Error):  # type: ignore[misc]
    """A `Refusal` answered by a worker, for a request pipelined behind one in service."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal
        self.code = refusal.status
        self.reason = refusal.reason


class TimedRequest(HTTPRequestParser):  # type: ignore[misc]
    """waitress's request parser, noting when the request began and when its headers ended, and
    asking the screen about it then (and about each piece of a chunked body). A refused request
    swallows whatever follows: its connection is about to be handed to a drain."""

    def __init__(self, adj: Any, screen: Screen | None = None, address: str = "") -> None:
        super().__init__(adj)
        self.started = time.monotonic()
        self.headers_at: float | None = None
        self.screen = screen
        self.address = address
        self.held = 0
        self.refusal: Refusal | None = None

    def received(self, data: bytes) -> int:
        if self.refusal is not None:
            return len(data)
        body_before = self.body_bytes_received
        consumed: int = super().received(data)
        headers_ended = self.headers_finished and self.headers_at is None
        if headers_ended:
            self.headers_at = time.monotonic()
        if self.screen is not None and self.error is None:
            if headers_ended and not self.empty:
                self._refuse(self.screen.head(self, self.address))
            elif not headers_ended and self.chunked:
                self._refuse(self.screen.more(self, self.body_bytes_received - body_before))
        return len(data) if self.refusal is not None else consumed

    def _refuse(self, refusal: Refusal | None) -> None:
        if refusal is not None:
            self.refusal = refusal
            self.completed = False  # never queued for a worker
            self.expect_continue = False

    def close(self) -> None:
        super().close()
        if self.screen is not None:
            self.screen.done(self)

    def restart_clocks(self, now: float) -> None:
        self.started = now
        if self.headers_at is not None:
            self.headers_at = now


class JsonErrorTask(ErrorTask):  # type: ignore[misc]
    """The reply to a request waitress refuses itself, as `{"error": ...}`."""

    def execute(self) -> None:
        error = self.request.error
        adj = self.channel.adj
        if isinstance(error, Refused):
            message = error.refusal.message
            self.response_headers.extend(error.refusal.headers)
        elif error.code == 431:
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
    """One client connection: waitress's, with the times the deadlines need and the screen."""

    parser_class: Callable[[Any], TimedRequest] = TimedRequest
    error_task_class = JsonErrorTask

    def __init__(self, server: GuardedServer, sock: socket.socket, addr: Any, adj: Any, map: Any) -> None:
        self.accepted = time.monotonic()
        self.got_data = False
        self.counted_host: str | None = None  # set once the connection counts against its address
        self.parser_class = self._new_request
        super().__init__(server, sock, addr, adj, map=map)

    def _new_request(self, adj: Any) -> TimedRequest:
        return TimedRequest(adj, self.server.screen, str(self.addr[0]) if self.addr else "")

    def received(self, data: bytes) -> bool:
        first, self.got_data = not self.got_data, True
        result = bool(super().received(data))
        request = self.request
        if first and request is not None and not self.requests:
            request.started = self.accepted  # the first request's clock runs from connecting
        if request is not None and request.refusal is not None:
            self._answer_refused(request, request.refusal)
        return result

    def _answer_refused(self, request: TimedRequest, refusal: Refusal) -> None:
        with self.requests_lock:
            if self.requests or self.total_outbufs_len:  # earlier replies go first, by a worker
                request.error = Refused(refusal)
                request.completed = True
                self.request = None
                self.requests.append(request)
                if len(self.requests) == 1:
                    self.server.add_task(self)
                return
            self.request = None
        fd = self.socket.detach()  # the drain takes the connection over; closing the channel won't
        self.handle_close()
        request.close()
        self.server.drains.start(socket.socket(fileno=fd), refusal.reply())

    def del_channel(self, map: Any = None) -> None:
        super().del_channel(map)
        host, self.counted_host = self.counted_host, None
        if host is not None:
            self.server.guard.release(host)
        request, self.request = self.request, None
        if request is not None:
            request.close()  # gives back the body budget of a request never completed


class GuardedServer(TcpWSGIServer):  # type: ignore[misc]
    """One listening socket: waitress's, admitting connections through the port's `Guard`."""

    channel_class = GuardedChannel
    next_channel_cleanup: float = 0.0
    paused_until: float = 0.0  # monotonic; the listener is not polled before

    def __init__(
        self,
        application: Any,
        map: Any,
        dispatcher: Any,
        adj: Any,
        sockinfo: Any,
        guard: Guard,
        screen: Screen,
        health_dispatcher: Any,
    ) -> None:
        self.guard = guard
        self.screen = screen
        self.health_dispatcher = health_dispatcher
        self.drains = Drains(map)
        super().__init__(application, map=map, dispatcher=dispatcher, adj=adj, sockinfo=sockinfo)

    def add_task(self, channel: GuardedChannel) -> None:
        """Queue `channel`'s next request: the probes to their own worker, the others to the pool."""
        request = channel.requests[0]
        if request.error is None and is_health(request):
            self.health_dispatcher.add_task(channel)
        else:
            self.task_dispatcher.add_task(channel)

    def handle_accept(self) -> None:
        try:
            pair = self.accept()
        except OSError as exc:
            self.paused_until = time.monotonic() + ACCEPT_PAUSE
            log.warning(
                "http cannot accept connections (%s); not accepting for %g s%s",
                exc.strerror or exc,
                ACCEPT_PAUSE,
                " (raise the open files limit, ulimit -n)"
                if exc.errno in (errno.EMFILE, errno.ENFILE)
                else "",
            )
            return
        if pair is None:
            return
        conn, addr = pair
        host = str(addr[0])
        if not self.guard.admit(host):
            self._refuse(
                conn,
                Refusal(
                    429,
                    f"too many open connections from {host} (the limit is "
                    f"{self.guard.limits.max_connections_per_address}); close some and retry",
                ),
            )
            return
        if self.guard.over_capacity:
            victim = self.guard.victim(c for c in self._map.values() if isinstance(c, GuardedChannel))
            if victim is None:
                self.guard.release(host)
                self._refuse(
                    conn,
                    Refusal(503, "every connection of the node is busy; retry shortly", (retry_after(1),)),
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

    def _refuse(self, conn: socket.socket, refusal: Refusal) -> None:
        """Answer a connection we will not serve; its request is never read."""
        self.drains.start(conn, refusal.reply())

    def readable(self) -> bool:
        """waitress's, less its connection limit (admission is `handle_accept`'s), and resting
        after an accept error."""
        now = time.time()
        if now >= self.next_channel_cleanup:
            self.next_channel_cleanup = now + self.adj.cleanup_interval
            self.maintenance(now)
        return bool(self.accepting) and time.monotonic() >= self.paused_until

    def maintenance(self, now: float) -> None:
        try:
            self.guard.sweep(self.active_channels.values())
        except Exception:  # the I/O thread must survive our bug: it serves every connection
            log.exception("http deadline sweep failed")
