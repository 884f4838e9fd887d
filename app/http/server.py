"""`WebServer`: the node's HTTP port, a WSGI app served by waitress in threads of this process.

One I/O thread ("http-io") accepts, reads and writes every connection; `Limits.threads`
workers run the app on complete requests, and one more serves the probes only (`GET /health`,
`/livez`, `/readyz`), so a load balancer's check never waits behind logins;
`app.http.guard` adds connection limits, deadlines, refusals before the body
(`app.http.screen`) and JSON errors. The thread count is fixed whatever the clients do.

`stop()` closes the listeners first (a new connection is refused), lets the requests being
served finish and deliver their replies (up to `Limits.stop_timeout`), closes every other
connection (idle, or a request not yet complete), then the workers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from waitress import wasyncore  # type: ignore[import-untyped]
from waitress.adjustments import Adjustments  # type: ignore[import-untyped]
from waitress.task import ThreadedTaskDispatcher  # type: ignore[import-untyped]

from app.http.guard import GuardedServer
from app.http.limits import Guard, Limits
from app.http.screen import Lockout, Screen

log = logging.getLogger(__name__)

T = TypeVar("T")


class WebServer:
    def __init__(
        self,
        app: Any,
        host: str,
        port: int,
        limits: Limits | None = None,
        lockout: Lockout
        | None = None,  # a client address's login lockout (`app.http.screen.address_lockout`)
    ) -> None:
        self.limits = limits = limits or Limits()
        adj = Adjustments(
            host=host,
            port=port,
            threads=limits.threads,
            max_request_header_size=limits.max_header_bytes + 1,  # waitress refuses at the size itself
            max_request_body_size=limits.max_body_bytes + 1,
            cleanup_interval=1,  # how often the deadlines are checked
            asyncore_loop_timeout=1,
            asyncore_use_poll=True,  # select() cannot watch more than 1024 sockets
            ident="cepheus",
            expose_tracebacks=False,
            clear_untrusted_proxy_headers=True,
        )
        self.guard = Guard(limits)
        self.screen = Screen(limits.max_inflight_bytes, lockout)
        self._map: dict[int, Any] = {}
        self._dispatcher = ThreadedTaskDispatcher()
        self._health = ThreadedTaskDispatcher()
        self._servers: list[GuardedServer] = []
        try:
            for sockinfo in adj.listen:
                self._servers.append(
                    GuardedServer(
                        app, self._map, self._dispatcher, adj, sockinfo, self.guard, self.screen, self._health
                    )
                )
        except BaseException:
            wasyncore.close_all(self._map, ignore_all=True)
            raise
        self.port = int(self._servers[0].effective_port)
        self._thread = threading.Thread(target=self._run, name="http-io", daemon=True)

    def start(self) -> None:
        self._dispatcher.set_thread_count(self.limits.threads)
        self._health.set_thread_count(1)
        self._thread.start()

    def _run(self) -> None:
        try:
            wasyncore.loop(timeout=1, map=self._map, use_poll=True)
        except Exception:
            log.exception("http I/O thread failed; the HTTP port no longer answers")

    def stop(self) -> None:
        """Refuse new connections, finish the requests being served, close everything."""
        self._in_loop(self._close_listeners)
        deadline = time.monotonic() + self.limits.stop_timeout
        while True:
            left = self._in_loop(self._close_unserved)
            if not left or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        if left:
            log.warning(
                "http closed %d connection(s) still serving or sending a reply after %g s",
                left,
                self.limits.stop_timeout,
            )
        self._in_loop(lambda: wasyncore.close_all(self._map, ignore_all=True))  # the loop ends with its map
        self._thread.join(5)
        self._dispatcher.shutdown(cancel_pending=True, timeout=5)
        self._health.shutdown(cancel_pending=True, timeout=5)

    def _in_loop(self, action: Callable[[], T]) -> T | None:
        """Run `action` in the I/O thread (the only one that may touch connections) and wait for it."""
        if not self._thread.is_alive():
            return action()
        done = threading.Event()
        result: list[T] = []

        def thunk() -> None:
            try:
                result.append(action())
            finally:
                done.set()

        self._servers[0].trigger.pull_trigger(thunk)
        if not done.wait(5):
            log.warning("http I/O thread did not answer within 5 s while stopping")
        return result[0] if result else None

    def _close_listeners(self) -> None:
        for server in self._servers:
            if server.socket is not None:
                wasyncore.dispatcher.close(server)  # not server.close(): that closes its trigger too

    def _close_unserved(self) -> int:
        """Close each connection with no request in service once its reply is sent; how many are open."""
        left = 0
        for server in self._servers:
            for channel in list(server.active_channels.values()):
                left += 1
                if not channel.requests:
                    channel.close_when_flushed = True
        return left
