"""`DataBridgeServer`: the two Data Bridge listeners of a node (PROTOCOL §1).

Owns sockets and threads: the plain port serves `ThriftEventTransmissionService`, the TLS
port `ThriftSecureEventTransmissionService`, both over buffered (unframed) TBinaryProtocol
and one shared session table. Each connection gets a thread (at most `max_connections`;
more are closed at once). Peers that connect and leave without a byte, or abandon a TLS
handshake, are normal; undecodable input closes only its own connection. What a call does
is the `Dispatcher`'s business.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from typing import Any

from adapters.thrift.codec import Reader
from adapters.thrift.errors import ConnectionClosed, ThriftProtocolError
from adapters.thrift.handler import Handler
from adapters.thrift.idl import PLAIN_SERVICE, SECURE_SERVICE, service
from adapters.thrift.service import Dispatcher
from adapters.thrift.sessions import Sessions
from adapters.thrift.settings import ServerSettings
from adapters.thrift.tls import server_context
from engine.errors import AdapterError

log = logging.getLogger(__name__)

_ACCEPT_POLL_SECONDS = 0.5
_NOTE_INTERVAL = 10.0


class DataBridgeServer:
    """Serves Data Bridge clients for `handler`; `start()` binds, `stop()` closes all."""

    def __init__(self, settings: ServerSettings, handler: Handler, sessions: Sessions | None = None) -> None:
        self.settings = settings
        self.sessions = sessions if sessions is not None else Sessions(settings.session_timeout_minutes * 60)
        self._plain = Dispatcher(service(PLAIN_SERVICE), handler, self.sessions)
        self._secure = Dispatcher(service(SECURE_SERVICE), handler, self.sessions)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._listeners: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._connections: set[_Connection] = set()
        self._tls: ssl.SSLContext | None = None
        self._last_note: dict[str, float] = {}
        self.port = 0
        self.tls_port: int | None = None

    def start(self) -> None:
        """Bind both ports (port 0 picks a free one) and start accepting."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        settings = self.settings
        plain = self._listen(settings.port)
        self.port = plain.getsockname()[1]
        self._accept_in_thread(plain, self._plain, tls=False)
        log.info("thrift receiver listening on %s:%d (plain, %s)", settings.host, self.port, PLAIN_SERVICE)
        if settings.tls_port is not None:
            self._tls, cert = server_context(settings)
            secure = self._listen(settings.tls_port)
            self.tls_port = secure.getsockname()[1]
            self._accept_in_thread(secure, self._secure, tls=True)
            log.info(
                "thrift receiver listening on %s:%d (TLS, %s, certificate %s)",
                settings.host,
                self.tls_port,
                SECURE_SERVICE,
                cert,
            )

    def stop(self, timeout: float = 5.0) -> None:
        """Close the listeners and every connection, and join all threads."""
        self._stopping.set()
        for listener in self._listeners:
            _shutdown(listener)
            listener.close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            _shutdown(connection.sock)
        deadline = time.monotonic() + timeout
        for thread in self._threads + [c.thread for c in connections]:
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                log.warning("thrift thread %s did not stop within %.1f s", thread.name, timeout)
        self._listeners.clear()
        self._threads.clear()

    def __enter__(self) -> DataBridgeServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def connection_count(self) -> int:
        with self._lock:
            return len(self._connections)

    def _listen(self, port: int) -> socket.socket:
        family = socket.AF_INET6 if ":" in self.settings.host else socket.AF_INET
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((self.settings.host, port))
            listener.listen(128)
        except OSError as exc:
            listener.close()
            msg = (
                f"thrift receiver cannot listen on {self.settings.host}:{port} ({exc}); "
                "stop whatever uses the port or change thrift.port / thrift.tls_port (or the port offset)"
            )
            raise AdapterError(msg) from exc
        listener.settimeout(_ACCEPT_POLL_SECONDS)
        self._listeners.append(listener)
        return listener

    def _accept_in_thread(self, listener: socket.socket, dispatcher: Dispatcher, *, tls: bool) -> None:
        kind = "tls" if tls else "plain"
        thread = threading.Thread(
            target=self._accept_loop,
            args=(listener, dispatcher, tls),
            name=f"thrift-accept-{kind}",
            daemon=True,
        )
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self, listener: socket.socket, dispatcher: Dispatcher, tls: bool) -> None:
        while not self._stopping.is_set():
            try:
                conn, peer = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stopping.is_set():
                    return
                log.warning("thrift accept failed", exc_info=True)
                time.sleep(_ACCEPT_POLL_SECONDS)
                continue
            conn.settimeout(None)
            with self._lock:
                if self._stopping.is_set():
                    conn.close()
                    return
                if len(self._connections) >= self.settings.max_connections:
                    self._refuse(conn, peer)
                    continue
                connection = _Connection(conn)
                connection.thread = threading.Thread(
                    target=self._serve,
                    args=(connection, peer, dispatcher, tls),
                    name=f"thrift-{peer}",
                    daemon=True,
                )
                self._connections.add(connection)
                connection.thread.start()

    def _refuse(self, conn: socket.socket, peer: Any) -> None:
        conn.close()
        limit = self.settings.max_connections
        self._note(
            logging.WARNING, "thrift connection from %s refused: max_connections (%d) reached", peer, limit
        )

    def _serve(self, connection: _Connection, peer: Any, dispatcher: Dispatcher, tls: bool) -> None:
        try:
            if tls:
                self._handshake(connection, peer)
            self._serve_calls(connection.sock, peer, dispatcher)
        except (ConnectionClosed, OSError) as exc:
            log.debug("thrift connection from %s ended: %s", peer, exc)
        except Exception:  # a decoder bug must cost one connection, never the server
            log.exception("thrift connection from %s failed", peer)
        finally:
            with self._lock:
                self._connections.discard(connection)
            connection.sock.close()

    def _handshake(self, connection: _Connection, peer: Any) -> None:
        assert self._tls is not None
        connection.sock.settimeout(self.settings.handshake_timeout_seconds)
        stream = self._tls.wrap_socket(connection.sock, server_side=True, do_handshake_on_connect=False)
        connection.sock = stream
        if self._stopping.is_set():
            _shutdown(stream)
        try:
            stream.do_handshake()
        except (OSError, ValueError) as exc:
            msg = f"TLS handshake with {peer} did not complete ({exc})"
            raise ConnectionClosed(msg, clean=True) from exc

    def _serve_calls(self, stream: socket.socket, peer: Any, dispatcher: Dispatcher) -> None:
        stream.settimeout(self.settings.idle_timeout_seconds)
        reader = Reader(stream.recv, self.settings.max_message_bytes)
        while not self._stopping.is_set():
            try:
                reply = dispatcher.handle(reader)
            except ThriftProtocolError as exc:
                self._note(logging.INFO, "thrift connection from %s closed: %s", peer, exc)
                return
            except ConnectionClosed as exc:
                level = logging.DEBUG if exc.clean else logging.INFO
                self._note(level, "thrift connection from %s closed: %s", peer, exc)
                return
            stream.sendall(reply.data)
            if reply.close:
                self._note(logging.INFO, "thrift connection from %s closed after a protocol error", peer)
                return

    def _note(self, level: int, message: str, *args: object) -> None:
        """Log about a misbehaving peer at `level` at most once per interval, else at DEBUG,
        so that a port scan or a broken client cannot flood the log."""
        now = time.monotonic()
        if level > logging.DEBUG and now - self._last_note.get(message, -_NOTE_INTERVAL) >= _NOTE_INTERVAL:
            self._last_note[message] = now
            log.log(level, message, *args)
        else:
            log.debug(message, *args)


class _Connection:
    """One accepted connection: its socket (replaced by the TLS one after wrapping) and thread."""

    __slots__ = ("sock", "thread")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.thread = threading.Thread()


def _shutdown(sock: socket.socket) -> None:
    """Wake a thread blocked on `sock` (the C-level call, so TLS sockets work too)."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass
