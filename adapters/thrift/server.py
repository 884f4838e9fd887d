"""`DataBridgeServer`: the two Data Bridge listeners of a node (PROTOCOL §1).

Owns sockets and threads: the plain port serves `ThriftEventTransmissionService`, the TLS
port `ThriftSecureEventTransmissionService`, both over buffered (unframed) TBinaryProtocol
and one shared session table. Each connection gets a thread. Peers that connect and leave
without a byte, or abandon a TLS handshake, are normal; undecodable input closes only its
own connection. What a call does is the `Dispatcher`'s business.

Anyone who can reach the ports is assumed hostile until it has logged in, so what a client
can cost the node is bounded:
- connections: per port (`max_connections`, `max_tls_connections`, apart so that a flood of
  one does not lock publishers out of the other) and per client address over both
  (`max_connections_per_address`). A refused client is told why in a Thrift
  `TApplicationException` (which clients raise before anything else they check), and the
  refusal is logged with its address;
- time: a connection must log in, or show a valid session, within `login_timeout_seconds`;
  a message must arrive whole within `message_timeout_seconds` of its first byte (so a client
  sending a byte a second is closed); a logged-in connection may idle `idle_timeout_seconds`;
- memory: until a connection is trusted, a message may have `max_login_message_bytes` (a
  bundle is trusted as soon as its first field, the session id, proves valid); after that
  `max_message_bytes`; and all unfinished messages together hold at most
  `max_inflight_bytes` (readers wait for room, then give up).
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from typing import Any

from adapters.thrift.admission import PER_ADDRESS_KEY, Admission, Refusal
from adapters.thrift.budget import InflightBudget
from adapters.thrift.codec import Reader
from adapters.thrift.errors import ConnectionClosed, ThriftProtocolError
from adapters.thrift.handler import Handler
from adapters.thrift.idl import PLAIN_SERVICE, SECURE_SERVICE, service
from adapters.thrift.messages import UNKNOWN, encode_application_exception
from adapters.thrift.peer import Peer
from adapters.thrift.service import Dispatcher
from adapters.thrift.sessions import Sessions
from adapters.thrift.settings import ServerSettings
from adapters.thrift.tls import server_context
from adapters.throttle import Burst
from engine.errors import AdapterError

log = logging.getLogger(__name__)

_ACCEPT_POLL_SECONDS = 0.05  # at worst, how late an accept thread sees a stop (a shutdown wakes it at once)
_ACCEPT_PAUSE_SECONDS = 1.0
_NOTE_INTERVAL = 10.0
_NOTE_KEYS = 10_000
_NOTE_BURST = 30  # lines about peers per interval, all peers together
_REFUSERS = 16  # threads telling refused clients why, at most; beyond, refusals just close
_REFUSAL_SECONDS = 2.0
_REFUSAL_QUIET_SECONDS = 0.5


class DataBridgeServer:
    """Serves Data Bridge clients for `handler`; `start()` binds, `stop()` closes all."""

    def __init__(self, settings: ServerSettings, handler: Handler, sessions: Sessions | None = None) -> None:
        self.settings = settings
        self.sessions = sessions if sessions is not None else Sessions(settings.session_timeout_minutes * 60)
        self._plain = Dispatcher(service(PLAIN_SERVICE), handler, self.sessions)
        self._secure = Dispatcher(service(SECURE_SERVICE), handler, self.sessions)
        self.admission = Admission(
            {
                "plain": (settings.max_connections, "thrift.max_connections"),
                "tls": (settings.max_tls_connections, "thrift.max_tls_connections"),
            },
            settings.max_connections_per_address,
        )
        self.budget = InflightBudget(settings.max_inflight_bytes)
        self._refusers = threading.BoundedSemaphore(_REFUSERS)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._listeners: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._connections: set[_Connection] = set()
        self._tls: ssl.SSLContext | None = None
        self._last_note: dict[tuple[str, str], float] = {}
        self._burst = Burst(_NOTE_BURST, _NOTE_INTERVAL)
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
        kind = "tls" if tls else "plain"
        while not self._stopping.is_set():
            try:
                conn, peer = listener.accept()
            except TimeoutError:
                continue
            except OSError as exc:
                if self._stopping.is_set():
                    return
                self._accept_failed(exc)
                continue
            conn.settimeout(None)
            address = str(peer[0])
            with self._lock:
                if self._stopping.is_set():
                    conn.close()
                    return
                refusal = self.admission.admit(kind, address)
                if refusal is None:
                    self._start_serving(conn, peer, kind, dispatcher, tls)
            if refusal is not None:
                self._refuse(conn, peer, kind, refusal)

    def _accept_failed(self, exc: OSError) -> None:
        """Out of file descriptors (or another accept error): the listener stays readable, so
        pause instead of spinning, and say so once per pause."""
        self._note(
            logging.WARNING, "", "thrift accept failed (%s); pausing %.0f s", exc, _ACCEPT_PAUSE_SECONDS
        )
        self._stopping.wait(_ACCEPT_PAUSE_SECONDS)

    def _start_serving(
        self, conn: socket.socket, peer: Any, kind: str, dispatcher: Dispatcher, tls: bool
    ) -> None:
        connection = _Connection(conn, kind, Peer(address=str(peer[0])))
        connection.thread = threading.Thread(
            target=self._serve, args=(connection, peer, dispatcher, tls), name=f"thrift-{peer}", daemon=True
        )
        self._connections.add(connection)
        try:
            connection.thread.start()
        except RuntimeError as exc:  # no thread to be had (process or memory limit): this connection only
            self._connections.discard(connection)
            self.admission.release(kind, connection.peer.address)
            conn.close()
            self._note(
                logging.WARNING, "", "thrift connection from %s closed: no thread for it (%s)", peer, exc
            )

    def _refuse(self, conn: socket.socket, peer: Any, kind: str, refusal: Refusal) -> None:
        """Log the refusal and tell the client why, in a thread of its own (bounded in number
        and time: the accept loop must never wait on a client). On the TLS port only a full
        port is explained: telling costs a handshake, which one address's excess is not worth."""
        self._note(
            logging.WARNING, str(peer[0]), "thrift connection from %s refused: %s", peer, refusal.reason
        )
        explain = kind != "tls" or refusal.key != PER_ADDRESS_KEY
        if not explain or not self._refusers.acquire(blocking=False):
            conn.close()
            return
        try:
            threading.Thread(
                target=self._tell_refused,
                args=(conn, kind, refusal.reason),
                name=f"thrift-refuse-{peer}",
                daemon=True,
            ).start()
        except RuntimeError:
            self._refusers.release()
            conn.close()

    def _tell_refused(self, conn: socket.socket, kind: str, reason: str) -> None:
        stream = conn
        try:
            conn.settimeout(_REFUSAL_SECONDS)
            if kind == "tls":
                assert self._tls is not None
                stream = self._tls.wrap_socket(conn, server_side=True)
            message = f"Cepheus refused the connection: {reason}"
            stream.sendall(encode_application_exception("", 0, UNKNOWN, message))
            if kind != "tls":
                conn.shutdown(socket.SHUT_WR)
            # read what the client sends until it closes: closing with its request unread would
            # reset the connection, which can discard our answer before the client reads it
            # (a client sends its request right after connecting: one that stays silent is not waited for)
            deadline = time.monotonic() + _REFUSAL_SECONDS
            stream.settimeout(_REFUSAL_QUIET_SECONDS)
            while time.monotonic() < deadline and stream.recv(65536):
                pass
        except (OSError, ValueError):
            pass
        finally:
            stream.close()
            self._refusers.release()

    def _serve(self, connection: _Connection, peer: Any, dispatcher: Dispatcher, tls: bool) -> None:
        s = self.settings
        timing = _Timing(connection, s)
        reader = Reader(timing.recv, s.max_login_message_bytes, self.budget, s.message_timeout_seconds)
        reader.limit_key = (
            "thrift.max_login_message_bytes, before the client has logged in on this connection"
        )
        reader.on_session = lambda session_id: self._trust_session(session_id, connection.peer, reader)
        try:
            if tls:
                self._handshake(connection, peer, timing)
            self._serve_calls(connection, peer, dispatcher, reader, timing)
        except (ConnectionClosed, OSError) as exc:
            log.debug("thrift connection from %s ended: %s", peer, exc)
        except Exception:  # a decoder bug must cost one connection, never the server
            log.exception("thrift connection from %s failed", peer)
        finally:
            with self._lock:
                self._connections.discard(connection)
            self.admission.release(connection.kind, connection.peer.address)
            reader.release()
            connection.sock.close()

    def _handshake(self, connection: _Connection, peer: Any, timing: _Timing) -> None:
        assert self._tls is not None
        connection.sock.settimeout(min(self.settings.handshake_timeout_seconds, timing.login_left()))
        stream = self._tls.wrap_socket(connection.sock, server_side=True, do_handshake_on_connect=False)
        connection.sock = stream
        if self._stopping.is_set():
            _shutdown(stream)
        try:
            stream.do_handshake()
        except (OSError, ValueError) as exc:
            msg = f"TLS handshake with {peer} did not complete ({exc})"
            raise ConnectionClosed(msg, clean=True) from exc

    def _trust_session(self, session_id: str, client: Peer, reader: Reader) -> None:
        """A bundle's session id was read: a valid one lifts the connection's limits at once."""
        if not client.trusted and self.sessions.valid(session_id):
            client.trusted = True
        if client.trusted:
            self._lift_limits(reader)

    def _lift_limits(self, reader: Reader) -> None:
        reader.limit = self.settings.max_message_bytes
        reader.limit_key = "thrift.max_message_bytes"

    def _serve_calls(
        self, connection: _Connection, peer: Any, dispatcher: Dispatcher, reader: Reader, timing: _Timing
    ) -> None:
        stream, client = connection.sock, connection.peer
        while not self._stopping.is_set():
            timing.next_message(pending=reader.pos < len(reader.buf))
            try:
                reply = dispatcher.handle(reader, client)
            except ThriftProtocolError as exc:
                self._note(logging.INFO, client.address, "thrift connection from %s closed: %s", peer, exc)
                return
            except ConnectionClosed as exc:
                level = logging.DEBUG if exc.clean else logging.INFO
                self._note(level, client.address, "thrift connection from %s closed: %s", peer, exc)
                return
            if client.trusted and reader.limit != self.settings.max_message_bytes:
                self._lift_limits(reader)
            stream.sendall(reply.data)
            if reply.close:
                message = "thrift connection from %s closed after a protocol error: %s"
                self._note(logging.INFO, client.address, message, peer, reply.reason)
                return

    def _note(self, level: int, address: str, message: str, *args: object) -> None:
        """Log about a misbehaving peer at `level` at most once per interval per kind of
        message and client address, and at most `_NOTE_BURST` lines per interval in all, else
        at DEBUG, so that a port scan, a broken client or many attackers cannot flood the log."""
        now = time.monotonic()
        key = (message, address)
        if level > logging.DEBUG and now - self._last_note.get(key, -_NOTE_INTERVAL) >= _NOTE_INTERVAL:
            if len(self._last_note) >= _NOTE_KEYS:
                self._last_note.clear()
            self._last_note[key] = now
            allowed, held = self._burst.allow()
            if allowed:
                suffix = f" ({held} more such lines held back)" if held else ""
                log.log(level, message + suffix, *args)
                return
        log.debug(message, *args)


class _Connection:
    """One accepted connection: its socket (replaced by the TLS one after wrapping), the port
    it came to, its client, and its thread."""

    __slots__ = ("sock", "kind", "peer", "thread", "accepted")

    def __init__(self, sock: socket.socket, kind: str, peer: Peer) -> None:
        self.sock = sock
        self.kind = kind
        self.peer = peer
        self.thread = threading.Thread()
        self.accepted = time.monotonic()


class _Timing:
    """The socket timeout of one connection, set before every read: until the client is
    trusted, the login deadline; while a message is arriving, that message's deadline;
    between messages of a trusted client, the idle timeout. A missed deadline closes the
    connection with a reason that names the configuration key."""

    __slots__ = ("_connection", "_settings", "_started", "_login_deadline")

    def __init__(self, connection: _Connection, settings: ServerSettings) -> None:
        self._connection = connection
        self._settings = settings
        self._started: float | None = None
        self._login_deadline = connection.accepted + settings.login_timeout_seconds

    def login_left(self) -> float:
        return max(0.001, self._login_deadline - time.monotonic())

    def next_message(self, pending: bool) -> None:
        """A new message starts (`pending`: some of its bytes are buffered already)."""
        self._started = time.monotonic() if pending else None

    def recv(self, n: int) -> bytes:
        s = self._settings
        trusted = self._connection.peer.trusted
        now = time.monotonic()
        deadline: float | None = None
        why, clean = "", False
        if self._started is not None:
            deadline = self._started + s.message_timeout_seconds
            why = f"no whole message within {s.message_timeout_seconds:g} s (thrift.message_timeout_seconds)"
        elif trusted and s.idle_timeout_seconds > 0:
            deadline = now + s.idle_timeout_seconds
            why, clean = f"idle for {s.idle_timeout_seconds:g} s (thrift.idle_timeout_seconds)", True
        if not trusted and (deadline is None or self._login_deadline < deadline):
            deadline = self._login_deadline
            why = f"not logged in within {s.login_timeout_seconds:g} s of connecting (thrift.login_timeout_seconds)"
        sock = self._connection.sock
        sock.settimeout(None if deadline is None else max(0.001, deadline - now))
        try:
            data = sock.recv(n)
        except TimeoutError as exc:
            raise ConnectionClosed(why, clean=clean) from exc
        if self._started is None:
            self._started = time.monotonic()  # the message's clock starts with its first byte
        return data


def _shutdown(sock: socket.socket) -> None:
    """Wake a thread blocked on `sock` (the C-level call, so TLS sockets work too)."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass
