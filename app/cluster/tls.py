"""TLS for the cluster channel (`app.cluster.peers`): a member's `ClusterKeys` (the shared
secret and, with `[cluster] cert_file`, `key_file` and `ca_file`, its two TLS contexts) and
`TLSStream`, TLS over a socket through memory buffers.

Why memory buffers: a connection has a reader and senders in different threads (a standby's
acknowledgements come in while its records go out), and OpenSSL forbids using one connection
from two threads at once, which CPython's `SSLSocket` does not guard. Every call into OpenSSL
is made under one lock that is never held while waiting on the network.

Host names are not checked, the chain is: see `app.cluster.peers`. Imports nothing of ours but
`app.cluster.errors` and `engine.errors`.
"""

from __future__ import annotations

import dataclasses
import socket
import ssl
import threading
import time
from typing import Protocol

from app.cluster.errors import PeerTLSError
from engine.errors import ConfigError

TLS_CHUNK = 256 * 1024  # plaintext encrypted at once: a snapshot is not held twice, nor the lock long
_RAW_CHUNK = 64 * 1024  # ciphertext read from the socket at once


@dataclasses.dataclass(frozen=True)
class ClusterKeys:
    """What a member proves itself with: the cluster's shared secret and, when the channel is
    encrypted, its TLS contexts (`tls_contexts`). `connect` and `PeerServer` take this or the
    secret alone; `ClusterSettings.keys` holds it, so every connection a member makes uses TLS
    as its settings say."""

    secret: bytes
    server: ssl.SSLContext | None = None  # accepting: requires a client certificate from the CA
    client: ssl.SSLContext | None = None  # connecting: shows this member's, verifies the server's


def cluster_keys(secret: bytes, cert_file: str = "", key_file: str = "", ca_file: str = "") -> ClusterKeys:
    """The secret, and the TLS contexts when `cert_file` is set (`[cluster]`; `app.config`
    checked that the other two are then set as well)."""
    if not cert_file:
        return ClusterKeys(secret)
    return ClusterKeys(secret, *tls_contexts(cert_file, key_file, ca_file))


def tls_contexts(cert_file: str, key_file: str, ca_file: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """This member's contexts (accepting, connecting): each shows `cert_file` and requires the
    other side's certificate signed by `ca_file`; TLS 1.2 at least. `ConfigError` naming the
    option if a file does not load."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.check_hostname = False  # the chain, not the name: see the module docstring
    server.num_tickets = 0  # no resumption: every connection shows its certificate again
    for context in (server, client):
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.verify_mode = ssl.CERT_REQUIRED
        try:
            context.load_cert_chain(cert_file, key_file)
        except (OSError, ssl.SSLError) as exc:
            msg = (
                f"cluster.cert_file {cert_file} / cluster.key_file {key_file}: cannot load this "
                f"member's certificate and key ({why(exc)})"
            )
            raise ConfigError(msg) from None
        try:
            context.load_verify_locations(ca_file)
        except (OSError, ssl.SSLError) as exc:
            msg = f"cluster.ca_file {ca_file}: cannot load the cluster CA's certificate ({why(exc)})"
            raise ConfigError(msg) from None
    return server, client


def keys_of(secret: bytes | ClusterKeys) -> ClusterKeys:
    return secret if isinstance(secret, ClusterKeys) else ClusterKeys(secret)


def why(exc: OSError) -> str:
    """What failed, in words: "certificate verify failed: unable to get local issuer certificate",
    "tlsv1 alert unknown ca", "wrong version number"."""
    if isinstance(exc, ssl.SSLCertVerificationError) and exc.verify_message:
        return f"certificate verify failed: {exc.verify_message}"
    reason = getattr(exc, "reason", None)
    if isinstance(reason, str):
        return reason.lower().replace("_", " ")
    return str(exc.strerror or exc)


class Stream(Protocol):
    """What a connection reads and writes: its socket, or `TLSStream` over it."""

    def recv(self, bufsize: int, /) -> bytes: ...
    def sendall(self, data: bytes, /) -> None: ...
    def send(self, data: bytes, flags: int, /) -> int: ...
    def settimeout(self, value: float | None, /) -> None: ...
    def setsockopt(self, level: int, optname: int, value: int | bytes, /) -> None: ...
    def shutdown(self, how: int, /) -> None: ...
    def close(self) -> None: ...


class TLSStream:
    """TLS over `raw`, through memory buffers. A connection has a reader and senders in
    different threads (a standby's acknowledgements come in while its records go out), and
    OpenSSL forbids using one connection from two threads at once: every call into it is made
    under `_lock`, which is never held while waiting on the network."""

    def __init__(self, raw: socket.socket, context: ssl.SSLContext, server_side: bool) -> None:
        self.raw = raw
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_side=server_side)
        self._lock = threading.Lock()  # every call into OpenSSL
        self._write_lock = threading.Lock()  # held from encrypting to sent: records leave in order

    def handshake(self, peer: str, deadline: float) -> None:
        """The TLS handshake, by `deadline` (monotonic s); `PeerTLSError` if it fails."""
        try:
            while True:
                try:
                    with self._lock:
                        self._tls.do_handshake()
                    self._flush()
                    return
                except ssl.SSLWantReadError:
                    self._flush()
                except ssl.SSLError:
                    try:
                        self._flush()  # the alert tells the other side why
                    except OSError:
                        pass
                    raise
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                self.raw.settimeout(left)
                data = self.raw.recv(_RAW_CHUNK)
                if not data:
                    msg = f"{peer} closed the connection during the TLS handshake"
                    raise PeerTLSError(msg)
                with self._lock:
                    self._incoming.write(data)
        except TimeoutError:
            msg = f"{peer} did not complete a TLS handshake in time"
            raise PeerTLSError(msg) from None
        except OSError as exc:  # ssl.SSLError too
            msg = f"TLS handshake with {peer} failed: {why(exc)}"
            raise PeerTLSError(msg) from None

    def recv(self, bufsize: int, /) -> bytes:
        """Up to `bufsize` bytes of plaintext (b"": the connection ended); `ssl.SSLError` for a
        record that fails its check."""
        while True:
            parts: list[bytes] = []
            got, ended = 0, False
            with self._lock:
                try:
                    while got < bufsize:  # what has arrived, not one record (16 KiB) a call
                        part = self._tls.read(bufsize - got)
                        if not part:
                            break
                        parts.append(part)
                        got += len(part)
                except ssl.SSLWantReadError:
                    pass
                except ssl.SSLZeroReturnError:  # the peer ended TLS in order
                    ended = True
                answers = self._outgoing.pending  # reading may call for an answer (a key update)
            if answers and self._write_lock.acquire(blocking=False):  # else it leaves with that send
                try:
                    self._flush_locked()
                finally:
                    self._write_lock.release()
            if parts or ended:
                return b"".join(parts)
            data = self.raw.recv(_RAW_CHUNK)
            if not data:
                return b""
            with self._lock:
                self._incoming.write(data)

    def sendall(self, data: bytes, /) -> None:
        view = memoryview(data)
        with self._write_lock:
            for start in range(0, len(view), TLS_CHUNK):
                with self._lock:
                    self._tls.write(view[start : start + TLS_CHUNK])
                    out = self._outgoing.read()
                self.raw.sendall(out)

    def send(self, data: bytes, flags: int, /) -> int:
        """All of `data` as one write (0: a send is under way); `flags` for the socket."""
        if not self._write_lock.acquire(blocking=False):
            return 0
        try:
            with self._lock:
                self._tls.write(data)
                out = self._outgoing.read()
            self.raw.send(out, flags)
            return len(data)
        finally:
            self._write_lock.release()

    def _flush(self) -> None:
        with self._write_lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        with self._lock:
            out = self._outgoing.read()
        if out:
            self.raw.sendall(out)

    def settimeout(self, value: float | None, /) -> None:
        self.raw.settimeout(value)

    def setsockopt(self, level: int, optname: int, value: int | bytes, /) -> None:
        self.raw.setsockopt(level, optname, value)

    def shutdown(self, how: int, /) -> None:
        self.raw.shutdown(how)

    def close(self) -> None:
        self.raw.close()


# ---- connections ---------------------------------------------------------------------------
