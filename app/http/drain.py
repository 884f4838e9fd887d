"""`Drain`: the end of a connection the node refuses, so its client reads the reply.

Closing a socket with unread request bytes makes the kernel send a reset, and a client that
gets it before reading may see ECONNRESET instead of the 429 or 503. A `Drain` takes over
the socket in waitress's I/O thread (no worker is held): it sends the reply, shuts down the
write side, then reads and discards until the client closes, or it has been quiet for
`QUIET` seconds, or `TOTAL` seconds have passed (checked each time the I/O loop turns,
at least once a second), and closes. At most `MAX_DRAINS` are open at once; past that a
refused connection is closed at once, so refusals cannot pile up open sockets.

Owns `Drain` and `Drains`; imports waitress only.
"""

from __future__ import annotations

import logging
import socket
import time
from typing import Any

from waitress import wasyncore  # type: ignore[import-untyped]

log = logging.getLogger(__name__)

QUIET = 0.5
TOTAL = 2.0
MAX_DRAINS = 200


class Drains:
    """The drains of one port; used in its I/O thread only."""

    def __init__(self, map: dict[int, Any]) -> None:
        self._map = map
        self.open = 0

    def start(self, sock: socket.socket, reply: bytes) -> None:
        """Send `reply` on `sock` and close it gently; `sock` belongs to the drain from now."""
        if self.open >= MAX_DRAINS:
            try:
                sock.setblocking(False)
                sock.send(reply)
            except OSError:
                pass
            sock.close()
            return
        try:
            Drain(self, sock, reply, self._map)
        except OSError:  # the client is gone already
            sock.close()


class Drain(wasyncore.dispatcher):  # type: ignore[misc]
    def __init__(self, drains: Drains, sock: socket.socket, reply: bytes, map: dict[int, Any]) -> None:
        self._drains = drains
        self._pending = reply
        self._began = self._heard = time.monotonic()
        super().__init__(sock, map=map)
        drains.open += 1
        try:
            self.handle_write()  # the reply usually fits the socket buffer: no need to wait for the loop
        except OSError:
            self.handle_close()

    def writable(self) -> bool:
        return self.socket is not None and bool(self._pending)

    def readable(self) -> bool:
        if self.socket is None:
            return False
        now = time.monotonic()
        if now - self._heard > QUIET or now - self._began > TOTAL:
            self.handle_close()
            return False
        return True

    def handle_write(self) -> None:
        if not self._pending:
            return
        sent = self.send(self._pending)
        self._pending = self._pending[sent:]
        if not self._pending and self.socket is not None:
            try:
                self.socket.shutdown(socket.SHUT_WR)
            except OSError:
                self.handle_close()

    def handle_read(self) -> None:
        if self.recv(65536):  # recv closes the drain when the client has closed
            self._heard = time.monotonic()

    def handle_close(self) -> None:
        if self.socket is not None:
            self._drains.open -= 1
            self.close()

    def handle_error(self) -> None:
        log.debug("http drain of a refused connection failed", exc_info=True)
        self.handle_close()
