"""The channel between cluster members: authenticated TCP connections carrying messages.

A message is a JSON header (a dict with a `"t"` type) and an optional binary body, framed as

    length of what follows (I, big-endian) | header length (I) | header (UTF-8 JSON) | body

Every connection starts with a mutual challenge-response on the cluster's shared secret
(`[cluster] secret`): the connecting side sends `hello` (its name, what the connection is for,
a nonce); the accepting side answers with its own nonce and an HMAC-SHA256 over both nonces,
its name and the purpose; the connecting side proves itself the same way. Nothing else is
read before that, frames before it are at most `HANDSHAKE_BYTES`, and it must finish within
`HANDSHAKE_SECONDS` in all: a client without the secret costs the node one short-lived socket.
The secret authenticates peers; it does not encrypt: run the cluster port on a private network.

Imports nothing of ours but its errors (`app.cluster.errors`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

from app.cluster.errors import PeerClosed, PeerError, PeerReset

log = logging.getLogger(__name__)

HANDSHAKE_BYTES = 4096
HANDSHAKE_SECONDS = 3.0
MAX_MESSAGE_BYTES = 512 * 1024 * 1024  # a snapshot travels in one message
MAX_HANDSHAKES = 16  # connections authenticating at once; more are closed at once
SEND_SECONDS = 5  # a send that cannot go on for this long fails the connection
_FRAME = struct.Struct(">II")

Header = dict[str, Any]


class Connection:
    """One authenticated connection; `send` may be called from several threads."""

    def __init__(self, sock: socket.socket, peer: str, purpose: str) -> None:
        self.sock = sock
        self.peer = peer
        self.purpose = purpose
        self._send_lock = threading.Lock()
        self._closed = False

    def send(self, header: Header, body: bytes = b"") -> None:
        data = json.dumps(header, separators=(",", ":")).encode()
        frame = _FRAME.pack(4 + len(data) + len(body), len(data)) + data
        try:
            with self._send_lock:
                self.sock.sendall(frame + body if len(body) < 65536 else frame)
                if len(body) >= 65536:
                    self.sock.sendall(body)
        except OSError as exc:
            self.close()
            msg = f"cannot send to {self.peer}: {exc.strerror or exc}"
            raise PeerError(msg) from None

    def close_with(self, header: Header) -> None:
        """Close, telling the peer `header` first if that goes out at once: never wait on a peer
        that does not read (a send stuck on it holds the send lock for up to `SEND_SECONDS`)."""
        data = json.dumps(header, separators=(",", ":")).encode()
        if self._send_lock.acquire(blocking=False):
            try:
                self.sock.send(_FRAME.pack(4 + len(data), len(data)) + data, socket.MSG_DONTWAIT)
            except OSError:
                pass
            finally:
                self._send_lock.release()
        self.close()  # a send stuck in another thread fails now

    def recv(self, limit: int = MAX_MESSAGE_BYTES, timeout: float | None = None) -> tuple[Header, bytes]:
        """The next message; `PeerError` if none came within `timeout` s (None: wait)."""
        return _recv(self.sock, self.peer, limit, None if timeout is None else time.monotonic() + timeout)

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


def _recv_exact(sock: socket.socket, n: int, peer: str, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    while n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                msg = f"{peer} sent nothing in time"
                raise PeerError(msg)
            sock.settimeout(left)
        try:
            chunk = sock.recv(min(n, 1 << 20))
        except TimeoutError:
            msg = f"{peer} sent nothing in time"
            raise PeerError(msg) from None
        except OSError as exc:
            msg = f"connection to {peer} failed: {exc.strerror or exc}"
            raise PeerReset(msg) from None
        if not chunk:
            msg = f"{peer} closed the connection"
            raise PeerClosed(msg)
        chunks.append(chunk)
        n -= len(chunk)
    if deadline is not None:
        sock.settimeout(None)
    return b"".join(chunks)


def _recv(sock: socket.socket, peer: str, limit: int, deadline: float | None = None) -> tuple[Header, bytes]:
    size, header_size = _FRAME.unpack(_recv_exact(sock, _FRAME.size, peer, deadline))
    if size > limit or header_size > size - 4:
        msg = f"{peer} sent a message of {size} bytes (at most {limit} here)"
        raise PeerError(msg)
    data = _recv_exact(sock, size - 4, peer, deadline)
    try:
        header = json.loads(data[:header_size])
    except ValueError as exc:
        msg = f"{peer} sent a message that is not ours ({exc})"
        raise PeerError(msg) from None
    if not isinstance(header, dict) or not isinstance(header.get("t"), str):
        msg = f"{peer} sent a message without a type"
        raise PeerError(msg)
    return header, data[header_size:]


def _proof(secret: bytes, role: str, first: str, second: str, name: str, purpose: str) -> str:
    text = "\x00".join((role, first, second, name, purpose)).encode("utf-8", "surrogatepass")
    return hmac.new(secret, text, hashlib.sha256).hexdigest()


def connect(address: str, me: str, purpose: str, secret: bytes, timeout: float = 2.0) -> Connection:
    """An authenticated connection to the member at `address` ("host:port") for `purpose`."""
    host, _, port = address.rpartition(":")
    try:
        sock = socket.create_connection((host, int(port)), timeout=timeout)
    except (OSError, ValueError) as exc:
        msg = f"cannot connect to cluster member {address}: {getattr(exc, 'strerror', None) or exc}"
        raise PeerError(msg) from None
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(HANDSHAKE_SECONDS)
        deadline = time.monotonic() + HANDSHAKE_SECONDS
        mine = os.urandom(16).hex()
        probe = Connection(sock, address, purpose)
        probe.send({"t": "hello", "name": me, "purpose": purpose, "nonce": mine})
        answer, _ = _recv(sock, address, HANDSHAKE_BYTES, deadline)
        theirs, peer = str(answer.get("nonce", "")), str(answer.get("name", ""))
        expected = _proof(secret, "accepting", mine, theirs, peer, purpose)
        if answer.get("t") != "challenge" or not hmac.compare_digest(str(answer.get("proof", "")), expected):
            msg = f"cluster member {address} did not prove it knows the cluster secret"
            raise PeerError(msg)
        probe.send({"t": "proof", "proof": _proof(secret, "connecting", theirs, mine, me, purpose)})
        ready, _ = _recv(sock, address, HANDSHAKE_BYTES, deadline)
        if ready.get("t") != "welcome":
            msg = f"cluster member {address} refused this node: {ready.get('why', 'no reason given')}"
            raise PeerError(msg)
        return _established(sock, peer, purpose)
    except BaseException:
        sock.close()
        raise


def _established(sock: socket.socket, peer: str, purpose: str) -> Connection:
    """An authenticated connection: reads wait as long as they must (the caller bounds them where
    it needs to), but a send to a peer that stopped reading fails after `SEND_SECONDS` instead of
    blocking its caller (and the locks it holds) for good."""
    sock.settimeout(None)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", SEND_SECONDS, 0))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    return Connection(sock, peer, purpose)


class PeerServer:
    """Accepts members' connections on `host:port`; `serve(connection)` runs in a thread of its
    own per authenticated connection and owns it."""

    def __init__(
        self, host: str, port: int, me: str, secret: bytes, serve: Callable[[Connection], None]
    ) -> None:
        self.me = me
        self._secret = secret
        self._serve = serve
        self._listener = socket.create_server((host, port), reuse_port=False)
        self.port = self._listener.getsockname()[1]
        self._handshakes = threading.BoundedSemaphore(MAX_HANDSHAKES)
        self._stopped = False
        self._thread = threading.Thread(target=self._accept_loop, name="cluster-accept", daemon=True)

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
        try:
            connection = self._handshake(sock, address)
        except PeerError as exc:
            log.warning("cluster connection from %s refused: %s", address, exc)
            sock.close()
            return
        except BaseException:
            sock.close()
            raise
        finally:
            self._handshakes.release()
        try:
            self._serve(connection)
        except (PeerClosed, PeerReset) as exc:
            log.debug("cluster connection from %s (%s) ended: %s", connection.peer, connection.purpose, exc)
        except Exception:
            log.exception("cluster connection from %s (%s) failed", connection.peer, connection.purpose)
        finally:
            connection.close()

    def _handshake(self, sock: socket.socket, address: str) -> Connection:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        deadline = time.monotonic() + HANDSHAKE_SECONDS  # for the whole handshake, not per read
        hello, _ = _recv(sock, address, HANDSHAKE_BYTES, deadline)
        if hello.get("t") != "hello":
            msg = "it did not start with hello"
            raise PeerError(msg)
        theirs, peer, purpose = (str(hello.get(k, "")) for k in ("nonce", "name", "purpose"))
        mine = os.urandom(16).hex()
        probe = Connection(sock, address, purpose)
        proof = _proof(self._secret, "accepting", theirs, mine, self.me, purpose)
        probe.send({"t": "challenge", "name": self.me, "nonce": mine, "proof": proof})
        answer, _ = _recv(sock, address, HANDSHAKE_BYTES, deadline)
        expected = _proof(self._secret, "connecting", mine, theirs, peer, purpose)
        if answer.get("t") != "proof" or not hmac.compare_digest(str(answer.get("proof", "")), expected):
            probe.send({"t": "refused", "why": "wrong cluster secret"})
            msg = f"{peer or 'a client'} did not prove it knows the cluster secret"
            raise PeerError(msg)
        probe.send({"t": "welcome"})
        return _established(sock, peer, purpose)
