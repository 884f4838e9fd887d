"""The channel between cluster members: authenticated TCP connections carrying `ha.messages`,
over mutual TLS when the cluster has certificates.

A message is a JSON header (its fields, with `"t"` its type) and an optional binary body (a
message's `body` field), framed as

    length of what follows (I, big-endian) | header length (I) | header (UTF-8 JSON) | body

Messages are encoded and decoded here and nowhere else (`encode`, `decode`): what arrives is
checked field by field against the message's dataclass, so a member never acts on a header
of the wrong shape.

Every connection starts with a mutual challenge-response on the cluster's shared secret
(`[cluster] secret`): the connecting side sends `Hello` (its name, what the connection is for,
a nonce); the accepting side answers with its own nonce and an HMAC-SHA256 over both nonces,
its name and the purpose (`Challenge`); the connecting side proves itself the same way
(`Proof`). Nothing else is read before that, frames before it are at most `HANDSHAKE_BYTES`,
and it must finish within `handshake_seconds` in all: a client without the secret costs the
node one short-lived socket. The secret authenticates peers; it does not encrypt, and after
it nothing authenticates a message.

With certificates (`[cluster] cert_file`, `key_file`, `ca_file`: `ClusterKeys`) every
connection is TLS first (1.2 at least, 1.3 when both sides have it), and the handshake on the
secret runs inside it: each side shows its certificate and requires the other's, signed by the
cluster CA. Host names are not checked: members are reached at whatever `wka` and `advertise`
say (an address, a name, a proxy in front), and membership is a certificate from the cluster's
own CA plus the secret, which a certificate for some host name would add nothing to. Every
record is then authenticated by TLS: one altered or injected on the way fails its integrity
check, and the connection fails (`PeerTLSError`) with nothing decoded from it. The accepting
side does its TLS handshake in the connection's own thread within the same `handshake_seconds`;
a connection that does not complete it (plain bytes, no certificate from the CA, silence) is
refused and counted (`PeerServer.refused_tls`), and logged at most once a minute.

Imports nothing of ours but its errors (`app.cluster.errors`, `engine.errors`), `ha.messages`
and the log throttle (`adapters.throttle`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import logging
import os
import socket
import ssl
import struct
import threading
import time
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from adapters.throttle import Throttle
from app.cluster.errors import PeerClosed, PeerError, PeerRefused, PeerReset, PeerTLSError
from app.cluster.tls import ClusterKeys, Stream, TLSStream, keys_of, why
from ha.messages import KINDS, Challenge, Hello, Message, Proof, Refused, Welcome

log = logging.getLogger(__name__)

HANDSHAKE_BYTES = 4096
HANDSHAKE_SECONDS = 3.0
MAX_MESSAGE_BYTES = 512 * 1024 * 1024  # a snapshot travels in one message
MAX_HANDSHAKES = 16  # connections authenticating at once; more are closed at once
SEND_SECONDS = 5  # a send that cannot go on for this long fails the connection
REFUSALS_LOG_SECONDS = 60.0  # connections refused for want of TLS: one log line at most this often
_FRAME = struct.Struct(">II")
_M = typing.TypeVar("_M")


# ---- the codec -----------------------------------------------------------------------------

Check = Callable[[Any], Any]  # the field's value from JSON, or raises ValueError


def _checker(hint: Any) -> Check:
    """How to take a field of type `hint` from a decoded JSON header."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is bool:
        return lambda v: v if isinstance(v, bool) else _wrong(v, "a boolean")
    if hint is int:
        return lambda v: v if isinstance(v, int) and not isinstance(v, bool) else _wrong(v, "an integer")
    if hint is str:
        return lambda v: v if isinstance(v, str) else _wrong(v, "a string")
    if hint is type(None):
        return lambda v: v if v is None else _wrong(v, "null")
    if origin in (types.UnionType, typing.Union):
        options = [_checker(a) for a in args]

        def either(v: Any) -> Any:
            for option in options:
                try:
                    return option(v)
                except ValueError:
                    continue
            return _wrong(v, " or ".join(str(a) for a in args))

        return either
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = _checker(args[0])
        return lambda v: tuple(item(x) for x in v) if isinstance(v, list) else _wrong(v, "a list")
    if origin is Mapping or origin is dict:
        key, value = _checker(args[0]), _checker(args[1])
        return lambda v: (
            {key(k): value(x) for k, x in v.items()} if isinstance(v, dict) else _wrong(v, "an object")
        )
    msg = f"no wire form for {hint!r}"
    raise TypeError(msg)


def _wrong(value: Any, wanted: str) -> Any:
    msg = f"{json.dumps(value)[:40]} is not {wanted}"
    raise ValueError(msg)


@dataclasses.dataclass(frozen=True)
class _Shape:
    kind: type[Message]
    fields: tuple[tuple[str, str, Check, bool], ...]  # name, wire key, check, required
    body: bool  # it has a `body` field


def _shape(kind: type[Message]) -> _Shape:
    hints = typing.get_type_hints(kind)
    fields = []
    for f in dataclasses.fields(kind):
        if f.name == "body":
            continue
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        fields.append((f.name, f.metadata.get("wire", f.name), _checker(hints[f.name]), required))
    return _Shape(kind, tuple(fields), any(f.name == "body" for f in dataclasses.fields(kind)))


_SHAPES: dict[str, _Shape] = {kind.TAG: _shape(kind) for kind in KINDS}
_BY_KIND: dict[type[Message], _Shape] = {s.kind: s for s in _SHAPES.values()}


def encode(message: Message) -> tuple[bytes, bytes]:
    """`message` as its wire header and body."""
    shape = _BY_KIND[type(message)]
    header: dict[str, Any] = {"t": message.TAG}
    for name, key, _, _ in shape.fields:
        value = getattr(message, name)
        header[key] = dict(value) if isinstance(value, Mapping) else value
    body: bytes = getattr(message, "body") if shape.body else b""  # noqa: B009
    return json.dumps(header, separators=(",", ":")).encode(), body


def decode(data: bytes, body: bytes, peer: str) -> Message:
    """The message of a wire header and body; `PeerError` for anything not one of ours."""
    try:
        header = json.loads(data)
    except ValueError as exc:
        msg = f"{peer} sent a message that is not ours ({exc})"
        raise PeerError(msg) from None
    if not isinstance(header, dict) or not isinstance(header.get("t"), str):
        msg = f"{peer} sent a message without a type"
        raise PeerError(msg)
    shape = _SHAPES.get(header["t"])
    if shape is None:
        msg = f"{peer} sent a message of unknown type {header['t'][:40]!r}"
        raise PeerError(msg)
    values: dict[str, Any] = {}
    for name, key, check, required in shape.fields:
        if key not in header:
            if required:
                msg = f"{peer} sent a {shape.kind.TAG!r} message without {key!r}"
                raise PeerError(msg)
            continue
        try:
            values[name] = check(header[key])
        except (ValueError, AttributeError, TypeError) as exc:
            msg = f"{peer} sent a {shape.kind.TAG!r} message whose {key!r} is wrong: {exc}"
            raise PeerError(msg) from None
    if shape.body:
        values["body"] = body
    elif body:
        msg = f"{peer} sent a {shape.kind.TAG!r} message with a body"
        raise PeerError(msg)
    return shape.kind(**values)


class Connection:
    """One authenticated connection; `send` may be called from several threads."""

    def __init__(self, sock: Stream, peer: str, purpose: str) -> None:
        self.sock = sock
        self.peer = peer
        self.purpose = purpose
        self._send_lock = threading.Lock()
        self._closed = False

    def send(self, message: Message) -> None:
        data, body = encode(message)
        frame = _FRAME.pack(4 + len(data) + len(body), len(data)) + data
        try:
            with self._send_lock:
                self.sock.sendall(frame + body if len(body) < 65536 else frame)
                if len(body) >= 65536:
                    self.sock.sendall(body)
        except ssl.SSLError as exc:
            self.close()
            msg = f"cannot send to {self.peer}: TLS failed ({why(exc)})"
            raise PeerTLSError(msg) from None
        except OSError as exc:
            self.close()
            msg = f"cannot send to {self.peer}: {exc.strerror or exc}"
            raise PeerError(msg) from None

    def close_with(self, message: Message) -> None:
        """Close, telling the peer `message` first if that goes out at once: never wait on a peer
        that does not read (a send stuck on it holds the send lock for up to `SEND_SECONDS`)."""
        data, body = encode(message)
        if self._send_lock.acquire(blocking=False):
            try:
                self.sock.send(
                    _FRAME.pack(4 + len(data) + len(body), len(data)) + data + body, socket.MSG_DONTWAIT
                )
            except OSError:
                pass
            finally:
                self._send_lock.release()
        self.close()  # a send stuck in another thread fails now

    def recv(
        self, limit: int = MAX_MESSAGE_BYTES, timeout: float | None = None, idle: float | None = None
    ) -> Message:
        """The next message; `PeerError` if none came within `timeout` s (None: wait), or if
        `idle` s passed without a byte (a large message may take longer, as long as it flows)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        return _recv(self.sock, self.peer, limit, deadline, idle)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    @property
    def closed(self) -> bool:
        return self._closed


def _recv_exact(sock: Stream, n: int, peer: str, deadline: float | None, idle: float | None = None) -> bytes:
    chunks: list[bytes] = []
    while n:
        if idle is not None:
            deadline = time.monotonic() + idle
        try:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    msg = f"{peer} sent nothing in time"
                    raise PeerError(msg)
                sock.settimeout(left)  # fails too if another thread closed the connection meanwhile
            chunk = sock.recv(min(n, 1 << 20))
        except TimeoutError:
            msg = f"{peer} sent nothing in time"
            raise PeerError(msg) from None
        except ssl.SSLError as exc:  # an altered or forged record, or the peer's alert
            msg = f"TLS connection with {peer} failed: {why(exc)}; nothing more is read from it"
            raise PeerTLSError(msg) from None
        except OSError as exc:
            msg = f"connection to {peer} failed: {exc.strerror or exc}"
            raise PeerReset(msg) from None
        if not chunk:
            msg = f"{peer} closed the connection"
            raise PeerClosed(msg)
        chunks.append(chunk)
        n -= len(chunk)
    if deadline is not None:
        try:
            sock.settimeout(None)
        except OSError:  # closed by another thread: the next read or send says so
            pass
    return b"".join(chunks)


def _recv(
    sock: Stream, peer: str, limit: int, deadline: float | None = None, idle: float | None = None
) -> Message:
    size, header_size = _FRAME.unpack(_recv_exact(sock, _FRAME.size, peer, deadline, idle))
    if size > limit or header_size > size - 4:
        msg = f"{peer} sent a message of {size} bytes (at most {limit} here)"
        raise PeerError(msg)
    data = _recv_exact(sock, size - 4, peer, deadline, idle)
    return decode(data[:header_size], data[header_size:], peer)


def _expect(message: Message, kind: type[_M], peer: str, what: str) -> _M:
    if not isinstance(message, kind):
        why = f": {message.why}" if isinstance(message, Refused) else ""
        msg = f"{peer} {what}{why}"
        raise PeerError(msg)
    return message


def _proof(secret: bytes, role: str, first: str, second: str, name: str, purpose: str) -> str:
    text = "\x00".join((role, first, second, name, purpose)).encode("utf-8", "surrogatepass")
    return hmac.new(secret, text, hashlib.sha256).hexdigest()


def connect(
    address: str,
    me: str,
    purpose: str,
    secret: bytes | ClusterKeys,
    timeout: float = 2.0,
    handshake_seconds: float = HANDSHAKE_SECONDS,
) -> Connection:
    """An authenticated connection to the member at `address` ("host:port") for `purpose`:
    `timeout` to connect, then `handshake_seconds` for the handshakes (TLS when `secret` has
    its contexts, then the secret's)."""
    keys = keys_of(secret)
    host, _, port = address.rpartition(":")
    try:
        sock = socket.create_connection((host, int(port)), timeout=timeout)
    except ConnectionRefusedError:
        msg = f"cannot connect to cluster member {address}: connection refused"
        raise PeerRefused(msg) from None
    except (OSError, ValueError) as exc:
        msg = f"cannot connect to cluster member {address}: {getattr(exc, 'strerror', None) or exc}"
        raise PeerError(msg) from None
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(handshake_seconds)
        deadline = time.monotonic() + handshake_seconds
        stream: Stream = sock
        if keys.client is not None:
            tls = TLSStream(sock, keys.client, server_side=False)
            tls.handshake(f"cluster member {address}", deadline)
            stream = tls
        mine = os.urandom(16).hex()
        probe = Connection(stream, address, purpose)
        probe.send(Hello(me, purpose, mine))
        answer = _recv(stream, address, HANDSHAKE_BYTES, deadline)
        unproven = f"cluster member {address} did not prove it knows the cluster secret"
        if not isinstance(answer, Challenge):
            raise PeerError(unproven)
        expected = _proof(keys.secret, "accepting", mine, answer.nonce, answer.name, purpose)
        if not hmac.compare_digest(answer.proof, expected):
            raise PeerError(unproven)
        probe.send(Proof(_proof(keys.secret, "connecting", answer.nonce, mine, me, purpose)))
        ready = _recv(stream, address, HANDSHAKE_BYTES, deadline)
        if not isinstance(ready, Welcome):
            why = ready.why if isinstance(ready, Refused) else "no reason given"
            msg = f"cluster member {address} refused this node: {why}"
            raise PeerError(msg)
        return _established(stream, answer.name, purpose)
    except BaseException:
        sock.close()
        raise


def _established(sock: Stream, peer: str, purpose: str) -> Connection:
    """An authenticated connection: reads wait as long as they must (the caller bounds them where
    it needs to), but a send to a peer that stopped reading fails after `SEND_SECONDS` instead of
    blocking its caller (and the locks it holds) for good."""
    sock.settimeout(None)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", SEND_SECONDS, 0))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    return Connection(sock, peer, purpose)


class PeerServer:
    """Accepts members' connections on `host:port`; `serve(connection)` runs in a thread of its
    own per authenticated connection and owns it. A client must finish the handshakes (TLS when
    `secret` has its contexts, then the secret's) within `handshake_seconds`. `refused_tls`:
    connections refused because they did not complete TLS."""

    def __init__(
        self,
        host: str,
        port: int,
        me: str,
        secret: bytes | ClusterKeys,
        serve: Callable[[Connection], None],
        handshake_seconds: float = HANDSHAKE_SECONDS,
    ) -> None:
        keys = keys_of(secret)
        self.me = me
        self._secret = keys.secret
        self._tls = keys.server
        self._serve = serve
        self._handshake_seconds = handshake_seconds
        self._listener = socket.create_server((host, port), reuse_port=False)
        self.port = self._listener.getsockname()[1]
        self._handshakes = threading.BoundedSemaphore(MAX_HANDSHAKES)
        self._stopped = False
        self._thread = threading.Thread(target=self._accept_loop, name="cluster-accept", daemon=True)
        self.refused_tls = 0
        self._refusals = Throttle(REFUSALS_LOG_SECONDS)
        self._count_lock = threading.Lock()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped = True
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()

    def _accept_loop(self) -> None:
        while not self._stopped:
            try:
                sock, address = self._listener.accept()
            except OSError:
                if self._stopped:
                    return
                continue
            if not self._handshakes.acquire(blocking=False):
                sock.close()
                continue
            threading.Thread(
                target=self._welcome, args=(sock, f"{address[0]}:{address[1]}"), daemon=True
            ).start()

    def _welcome(self, sock: socket.socket, address: str) -> None:
        deadline = time.monotonic() + self._handshake_seconds  # both handshakes, not each read
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            stream = self._secure(sock, address, deadline)
            connection = None if stream is None else self._handshake(stream, address, deadline)
        except PeerError as exc:
            log.warning("cluster connection from %s refused: %s", address, exc)
            sock.close()
            return
        except BaseException:
            sock.close()
            raise
        finally:
            self._handshakes.release()
        if connection is None:
            sock.close()
            return
        try:
            self._serve(connection)
        except PeerTLSError as exc:
            log.warning(
                "cluster connection from %s (%s) failed: %s", connection.peer, connection.purpose, exc
            )
        except (PeerClosed, PeerReset) as exc:
            log.debug("cluster connection from %s (%s) ended: %s", connection.peer, connection.purpose, exc)
        except Exception:
            log.exception("cluster connection from %s (%s) failed", connection.peer, connection.purpose)
        finally:
            connection.close()

    def _secure(self, sock: socket.socket, address: str, deadline: float) -> Stream | None:
        """`sock` itself without TLS; with it, its TLS stream once the client completed the
        handshake with a certificate from the cluster CA, or None: refused and counted."""
        if self._tls is None:
            return sock
        tls = TLSStream(sock, self._tls, server_side=True)
        try:
            tls.handshake("the client", deadline)
        except PeerTLSError as exc:
            with self._count_lock:
                self.refused_tls += 1
                total = self.refused_tls
            if self._refusals.allow()[0]:
                log.warning(
                    "cluster connection from %s refused: %s (a member speaks TLS with a certificate from "
                    "the cluster CA; %d refused so far, logged at most once a minute)",
                    address, exc, total,
                )  # fmt: skip
            return None
        return tls

    def _handshake(self, sock: Stream, address: str, deadline: float) -> Connection:
        hello = _expect(
            _recv(sock, address, HANDSHAKE_BYTES, deadline), Hello, address, "did not start with hello"
        )
        mine = os.urandom(16).hex()
        probe = Connection(sock, address, hello.purpose)
        proof = _proof(self._secret, "accepting", hello.nonce, mine, self.me, hello.purpose)
        probe.send(Challenge(self.me, mine, proof))
        answer = _recv(sock, address, HANDSHAKE_BYTES, deadline)
        expected = _proof(self._secret, "connecting", mine, hello.nonce, hello.name, hello.purpose)
        if not isinstance(answer, Proof) or not hmac.compare_digest(answer.proof, expected):
            probe.send(Refused("wrong cluster secret"))
            msg = f"{hello.name or 'a client'} did not prove it knows the cluster secret"
            raise PeerError(msg)
        probe.send(Welcome())
        return _established(sock, hello.name, hello.purpose)
