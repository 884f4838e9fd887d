"""`Connection`: one client socket to a Data Bridge service, making sequential calls.

Owns the client's transport: a plain or TLS socket with a timeout, the per-connection seqid
(from 1, +1 per call, §2), and turning socket failures into `TransportError`. After a
transport or protocol failure, or a TApplicationException (after which the Java clients
discard the connection too), the connection is closed; the next call reopens it. A
connection the server closed while it was idle (receivers close idle connections) is noticed
before the next call is sent and reopened, so nothing is sent into a dead socket. Not
thread-safe: Java clients never pipeline, and neither does this.
"""

from __future__ import annotations

import select
import socket
import ssl
from collections.abc import Callable

from adapters.thrift.codec import Reader
from adapters.thrift.errors import (
    ConnectionClosed,
    RemoteApplicationError,
    ThriftProtocolError,
    TransportError,
    UntrustedCertificate,
)
from adapters.thrift.idl import Service
from adapters.thrift.messages import encode_call, read_reply

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class Connection:
    def __init__(
        self,
        host: str,
        port: int,
        service: Service,
        *,
        tls: ssl.SSLContext | None = None,
        timeout: float = 30.0,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self.host, self.port = host, port
        self._service = service
        self._tls = tls
        self._timeout = timeout
        self._limit = max_message_bytes
        self._sock: socket.socket | None = None
        self._reader: Reader | None = None
        self._seqid = 0

    @property
    def is_open(self) -> bool:
        return self._sock is not None

    def open(self) -> None:
        if self._sock is not None:
            return
        kind = "TLS" if self._tls else "TCP"
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self._timeout)
        except OSError as exc:
            msg = f"cannot open a {kind} connection to {self.host}:{self.port}: {exc}"
            raise TransportError(msg) from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls is not None:
                sock = self._tls.wrap_socket(sock, server_hostname=self.host)
        except ssl.SSLCertVerificationError as exc:
            sock.close()
            msg = f"the TLS certificate of {self.host}:{self.port} is not trusted: {exc.verify_message}"
            raise UntrustedCertificate(msg) from exc
        except (OSError, ssl.SSLError) as exc:
            sock.close()
            msg = f"cannot open a {kind} connection to {self.host}:{self.port}: {exc}"
            raise TransportError(msg) from exc
        self._sock = sock
        self._reader = Reader(sock.recv, self._limit)
        self._seqid = 0

    def close(self) -> None:
        sock, self._sock, self._reader = self._sock, None, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def call(self, name: str, **args: str | None) -> str | bool | None:
        """Call `name` with string arguments; return the success value or raise its error."""
        method = self._service.methods[name]
        return self._exchange(name, lambda seqid: encode_call(method, seqid, dict(args)))

    def publish(self, bundle: bytes) -> None:
        """Call `publish` with a bundle struct as written by `write_bundle`."""
        method = self._service.methods["publish"]
        self._exchange("publish", lambda seqid: encode_call(method, seqid, {"eventBundle": bundle}))

    def _exchange(self, name: str, encode: Callable[[int], bytes]) -> str | bool | None:
        if self._sock is not None and _closed_by_peer(self._sock):
            self.close()
        self.open()
        assert self._sock is not None and self._reader is not None
        self._seqid = self._seqid + 1 if self._seqid < 0x7FFFFFFF else 1
        request = encode(self._seqid)
        try:
            self._sock.sendall(request)
            return read_reply(self._reader, self._service.methods[name], self._seqid)
        except (ConnectionClosed, OSError) as exc:
            self.close()
            msg = f"{name} to {self.host}:{self.port} failed: {exc}"
            raise TransportError(msg) from exc
        except (ThriftProtocolError, RemoteApplicationError):
            self.close()
            raise


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether an idle connection has been closed by the server: between calls nothing may
    arrive, so a readable socket means end of file (or a server that broke the protocol)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)
