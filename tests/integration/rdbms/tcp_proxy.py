"""A small TCP proxy the outage tests put between an adapter and its database.

`cut()` closes the listener and every live connection (both sides), so the client sees
its connections die and new ones refused — a database outage as the network shows it;
`restore()` listens on the same port again.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable


class TcpProxy:
    """Forwards 127.0.0.1:<port> to (host, port) on threads; cut and restore at will."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port: int = probe.getsockname()[1]
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._listener: socket.socket | None = None
        self._running = threading.Event()
        self.connections = 0  # accepted so far

    def __enter__(self) -> TcpProxy:
        self.restore()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cut()

    @property
    def is_up(self) -> bool:
        return self._running.is_set()

    def restore(self) -> None:
        if self._running.is_set():
            return
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(0.05)
        self._listener = listener
        self._running.set()
        self._spawn(self._accept, listener)

    def cut(self) -> None:
        """Stop listening and kill every live connection; returns once all threads are gone."""
        self._running.clear()
        with self._lock:
            victims = list(self._sockets)
            self._sockets.clear()
            threads, self._threads = self._threads, []
        for s in victims:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        for t in threads:
            t.join(5)
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def _spawn(self, target: Callable[..., None], *args: object) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)
        with self._lock:
            self._threads.append(t)
        t.start()

    def _accept(self, listener: socket.socket) -> None:
        while self._running.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            client.settimeout(None)
            upstream.settimeout(None)
            with self._lock:
                if not self._running.is_set():
                    client.close()
                    upstream.close()
                    return
                self._sockets.update((client, upstream))
                self.connections += 1
            self._spawn(self._pump, client, upstream)
            self._spawn(self._pump, upstream, client)

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._sockets.discard(src)
                self._sockets.discard(dst)
            src.close()
            dst.close()
