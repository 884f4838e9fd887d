"""The cluster channel over mutual TLS, on real loopback sockets with certificates made here: members
with certificates from the cluster CA exchange messages (a reader and a sender in two threads on one
connection too); a client that skips TLS, or shows no certificate from the CA, is refused and
counted while the server goes on serving; a record altered or injected on the way fails the
connection with nothing decoded from it; and a half-set `[cluster]` TLS section is a
configuration error naming what is missing."""

from __future__ import annotations

import logging
import os
import queue
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.cluster.errors import PeerError, PeerTLSError
from app.cluster.peers import Connection, PeerServer, connect, encode
from app.cluster.tls import ClusterKeys, cluster_keys, tls_contexts
from app.config import load
from engine.errors import ConfigError
from ha.messages import Ack, Message, Record, RelayedEvents
from tests.support.certs import ClusterCA, Member

SECRET = b"sixteen-or-more-characters"
Got = queue.Queue[Message | BaseException]


@dataclass(frozen=True)
class Certs:
    a: Member  # the cluster CA's
    b: Member
    stranger: Member  # another CA's


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    directory = tmp_path_factory.mktemp("certs")
    cluster = ClusterCA(directory)
    return Certs(
        cluster.member("node-a"), cluster.member("node-b"), ClusterCA(directory, "other").member("x")
    )


def keys(member: Member, ca_file: Path | None = None) -> ClusterKeys:
    return cluster_keys(SECRET, str(member.cert_file), str(member.key_file), str(ca_file or member.ca_file))


def start_server(
    secret: bytes | ClusterKeys,
    serve: Callable[[Connection], None] | None = None,
    handshake_seconds: float = 3.0,
) -> tuple[PeerServer, Got]:
    """A member whose connections put every message they bring (or the error that ended them) in
    `got` and answer a `RelayedEvents` with a `Record` of its body reversed."""
    got: Got = queue.Queue()

    def echo(connection: Connection) -> None:
        try:
            while True:
                message = connection.recv()
                got.put(message)
                if isinstance(message, RelayedEvents):
                    connection.send(Record(len(message.body), message.body[::-1]))
        except PeerError as exc:
            got.put(exc)
            raise

    made = PeerServer("127.0.0.1", 0, "node-b", secret, serve or echo, handshake_seconds=handshake_seconds)
    made.start()
    return made, got


@pytest.fixture
def server(certs: Certs) -> Iterator[tuple[PeerServer, Got]]:
    made, got = start_server(keys(certs.b))
    yield made, got
    made.stop()


def refused(made: PeerServer, count: int, within: float = 5.0) -> bool:
    """Whether the server has counted `count` refusals (its threads do that; a test deadline)."""
    deadline = time.monotonic() + within
    while made.refused_tls < count and time.monotonic() < deadline:
        time.sleep(0.01)
    return made.refused_tls == count


def exchanged(made: PeerServer, got: Got, client: ClusterKeys, body: bytes = b"ok") -> bool:
    connection = connect(f"127.0.0.1:{made.port}", "node-a", "relay", client)
    try:
        connection.send(RelayedEvents("p", "x:1", body))
        return got.get(timeout=5) == RelayedEvents("p", "x:1", body) and connection.recv(timeout=5) == Record(
            len(body), body[::-1]
        )
    finally:
        connection.close()


# ---- members with the cluster CA's certificates --------------------------------------------


def test_members_with_the_cluster_cas_certificates_exchange_messages_over_tls(
    server: tuple[PeerServer, Got], certs: Certs
) -> None:
    made, got = server
    connection = connect(f"127.0.0.1:{made.port}", "node-a", "relay", keys(certs.a))
    assert not isinstance(connection.sock, socket.socket)  # its TLS stream
    assert connection.peer == "node-b"
    body = os.urandom(3 << 20)  # many TLS records, more than one write chunk
    connection.send(RelayedEvents("p", "x:1", body))
    assert got.get(timeout=10) == RelayedEvents("p", "x:1", body)
    assert connection.recv(timeout=10) == Record(len(body), body[::-1])
    connection.close()
    assert made.refused_tls == 0


def test_a_reader_and_a_sender_in_two_threads_share_one_tls_connection(certs: Certs) -> None:
    """A notifier sends records to a standby from one thread while another reads its acks (OpenSSL
    must never be entered from both at once): every record and every ack arrives, in order."""
    records = 3000
    acks: queue.Queue[int] = queue.Queue()

    def notifier(connection: Connection) -> None:
        def send_all() -> None:
            for position in range(1, records + 1):
                connection.send(Record(position, os.urandom(512)))

        sender = threading.Thread(target=send_all, daemon=True)
        sender.start()
        while True:
            message = connection.recv(timeout=20)
            assert isinstance(message, Ack)
            acks.put(message.position)
            if message.position == records:
                break
        sender.join(20)

    made, _ = start_server(keys(certs.b), serve=notifier)
    try:
        connection = connect(f"127.0.0.1:{made.port}", "node-a", "subscribe", keys(certs.a))
        received = []
        for _ in range(records):
            message = connection.recv(timeout=20)
            assert isinstance(message, Record)
            received.append(message.position)
            connection.send(Ack(message.position, True))
        assert received == list(range(1, records + 1))
        assert [acks.get(timeout=20) for _ in range(records)] == received
        connection.close()
    finally:
        made.stop()


# ---- refused and counted -------------------------------------------------------------------


def test_a_plain_client_is_refused_counted_and_logged_once_and_the_server_goes_on(
    server: tuple[PeerServer, Got], certs: Certs, caplog: pytest.LogCaptureFixture
) -> None:
    made, got = server
    caplog.set_level(logging.WARNING, logger="app.cluster.peers")
    with pytest.raises(PeerError):
        connect(f"127.0.0.1:{made.port}", "node-x", "relay", SECRET, handshake_seconds=2)  # no TLS
    assert refused(made, 1)
    with socket.create_connection(("127.0.0.1", made.port)) as raw:  # a plain frame, forged
        header, body = encode(Record(1, b"forged"))
        raw.sendall(struct.pack(">II", 4 + len(header) + len(body), len(header)) + header + body)
        raw.settimeout(5)
        try:
            assert raw.recv(4096)[:1] in (b"", b"\x15")  # closed, or a TLS alert: nothing of ours
        except ConnectionResetError:
            pass
    assert refused(made, 2)
    with socket.create_connection(("127.0.0.1", made.port)):  # silence costs the handshake time at most
        pass
    assert refused(made, 3)
    lines = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(lines) == 1, lines  # not one line per attempt
    assert "cluster connection from 127.0.0.1:" in lines[0]
    assert got.empty()  # nothing reached the member's serve
    assert exchanged(made, got, keys(certs.a))  # and members are served as before
    assert made.refused_tls == 3


def test_a_client_that_never_speaks_is_cut_off_when_the_handshake_is_due(certs: Certs) -> None:
    made, _ = start_server(keys(certs.b), handshake_seconds=0.3)
    try:
        with socket.create_connection(("127.0.0.1", made.port)) as raw:
            raw.settimeout(5)
            started = time.monotonic()
            assert raw.recv(100) == b""
            assert time.monotonic() - started < 4  # the handshake's deadline, not the test's
        assert refused(made, 1)
    finally:
        made.stop()


@pytest.mark.parametrize("client", ["a certificate from another CA", "no certificate"])
def test_a_client_without_a_certificate_from_the_cluster_ca_is_refused(
    server: tuple[PeerServer, Got], certs: Certs, client: str
) -> None:
    made, got = server
    if client == "no certificate":
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.load_verify_locations(certs.a.ca_file)  # it trusts the server all the same
        stranger = ClusterKeys(SECRET, None, context)
    else:
        stranger = keys(certs.stranger, ca_file=certs.a.ca_file)
    with pytest.raises(PeerError):
        connect(f"127.0.0.1:{made.port}", "node-x", "relay", stranger)
    assert refused(made, 1)
    assert got.empty()
    assert exchanged(made, got, keys(certs.a))


def test_a_server_without_a_certificate_from_the_cluster_ca_is_not_trusted(certs: Certs) -> None:
    made, got = start_server(keys(certs.stranger, ca_file=certs.a.ca_file))  # it would trust us
    try:
        with pytest.raises(PeerTLSError, match="certificate verify failed"):
            connect(f"127.0.0.1:{made.port}", "node-a", "relay", keys(certs.a))
        assert refused(made, 1)  # our alert ends its handshake too
        assert got.empty()
    finally:
        made.stop()


def test_a_tls_client_gets_nothing_from_a_plain_server(certs: Certs) -> None:
    made, got = start_server(SECRET)
    try:
        with pytest.raises(PeerTLSError):
            connect(f"127.0.0.1:{made.port}", "node-a", "relay", keys(certs.a))
        assert got.empty()
    finally:
        made.stop()


# ---- a man in the middle -------------------------------------------------------------------


class Relay:
    """A TCP relay between one client and `target` that can tamper with the next chunk it
    forwards in one direction, once armed: flip one of its bytes, or put bytes before it."""

    def __init__(self, target: int) -> None:
        self._target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._armed: dict[str, Callable[[bytes], bytes]] = {}
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, direction: str, tamper: Callable[[bytes], bytes]) -> None:
        with self._lock:
            self._armed[direction] = tamper

    def _accept(self) -> None:
        client, _ = self._listener.accept()
        server = socket.create_connection(("127.0.0.1", self._target))
        self._sockets += [client, server]
        threading.Thread(target=self._pump, args=(client, server, "to server"), daemon=True).start()
        threading.Thread(target=self._pump, args=(server, client, "to client"), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, direction: str) -> None:
        try:
            while chunk := source.recv(65536):
                with self._lock:
                    tamper = self._armed.pop(direction, None)
                sink.sendall(tamper(chunk) if tamper else chunk)
        except OSError:
            pass
        finally:
            try:
                sink.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def close(self) -> None:
        self._listener.close()
        for sock in self._sockets:
            sock.close()


def flip(chunk: bytes) -> bytes:
    """One bit of one byte inside the first record's ciphertext (past its 5-byte header)."""
    return chunk[:20] + bytes([chunk[20] ^ 0x01]) + chunk[21:]


def plain_frame(chunk: bytes) -> bytes:
    """A cluster message in clear, put before what the client sent."""
    header, body = encode(Record(7, b"forged"))
    return struct.pack(">II", 4 + len(header) + len(body), len(header)) + header + body + chunk


def forged_record(chunk: bytes) -> bytes:
    """A TLS application-data record, well formed but made without the connection's keys."""
    payload = os.urandom(64)
    return b"\x17\x03\x03" + struct.pack(">H", len(payload)) + payload + chunk


@pytest.mark.parametrize(
    ("direction", "tamper"),
    [
        ("to server", flip),
        ("to client", flip),
        ("to server", plain_frame),
        ("to server", forged_record),
    ],
    ids=["a flipped bit to the server", "a flipped bit to the client", "a plain frame", "a forged record"],
)
def test_a_record_altered_or_injected_on_the_way_fails_the_connection_with_nothing_decoded(
    server: tuple[PeerServer, Got], certs: Certs, direction: str, tamper: Callable[[bytes], bytes]
) -> None:
    made, got = server
    relay = Relay(made.port)
    try:
        connection = connect(f"127.0.0.1:{relay.port}", "node-a", "relay", keys(certs.a))  # untouched
        relay.arm(direction, tamper)
        body = os.urandom(100_000)
        connection.send(RelayedEvents("p", "x:1", body))
        if direction == "to server":
            failure = got.get(timeout=10)
            assert isinstance(failure, PeerTLSError), failure
        else:
            assert got.get(timeout=10) == RelayedEvents("p", "x:1", body)  # it arrived intact
            with pytest.raises(PeerTLSError):
                connection.recv(timeout=10)  # the answer did not
        time.sleep(0.2)
        assert got.empty()  # nothing decoded from the altered stream, nothing after it
        connection.close()
        if direction == "to client":
            assert isinstance(got.get(timeout=5), PeerError)  # the server's end of it ended
    finally:
        relay.close()
    assert made.refused_tls == 0  # the handshakes were whole: this is not a refusal
    assert exchanged(made, got, keys(certs.a))


# ---- configuration -------------------------------------------------------------------------


def test_a_half_set_tls_section_is_an_error_naming_what_is_missing(certs: Certs) -> None:
    cluster = {"wka": ["127.0.0.1:4000"], "secret": SECRET.decode()}
    whole = certs.a.section()
    cases = [
        ({"cert_file": whole["cert_file"]}, "cluster.key_file must be set when cluster.cert_file is"),
        (
            {"cert_file": whole["cert_file"], "key_file": whole["key_file"]},
            "cluster.ca_file must be set when cluster.cert_file is",
        ),
        ({"ca_file": whole["ca_file"]}, "cluster.cert_file must be set when cluster.ca_file is"),
        (
            {"key_file": whole["key_file"], "ca_file": whole["ca_file"]},
            "cluster.cert_file must be set when cluster.key_file and cluster.ca_file is",
        ),
    ]
    for given, error in cases:
        with pytest.raises(ConfigError, match=error):
            load(None, env={}, overrides={"cluster": {**cluster, **given}})
    cfg = load(None, env={}, overrides={"cluster": {**cluster, **whole}})
    assert (cfg.cluster.cert_file, cfg.cluster.key_file, cfg.cluster.ca_file) == (
        whole["cert_file"],
        whole["key_file"],
        whole["ca_file"],
    )
    env = {f"CEPHEUS__CLUSTER__{key.upper()}": value for key, value in whole.items()}
    assert load(None, env=env).cluster.ca_file == whole["ca_file"]


def test_files_that_do_not_load_are_an_error_naming_the_option(certs: Certs, tmp_path: Path) -> None:
    a, b = certs.a, certs.b
    with pytest.raises(ConfigError, match="cluster.cert_file .*missing.pem.* cannot load"):
        tls_contexts(str(tmp_path / "missing.pem"), str(a.key_file), str(a.ca_file))
    with pytest.raises(
        ConfigError, match="cluster.key_file .* cannot load this member's certificate and key"
    ):
        tls_contexts(str(a.cert_file), str(b.key_file), str(a.ca_file))  # another member's key
    not_pem = tmp_path / "ca.pem"
    not_pem.write_text("not a certificate\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="cluster.ca_file .* cannot load the cluster CA's certificate"):
        tls_contexts(str(a.cert_file), str(a.key_file), str(not_pem))
    assert cluster_keys(SECRET) == ClusterKeys(SECRET)  # no cert_file: no TLS
