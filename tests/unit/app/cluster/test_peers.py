"""The cluster channel on real loopback sockets: both sides prove the shared secret before
anything else is read, a wrong secret or a stranger's bytes get nothing, and messages carry a
JSON header and a binary body."""

from __future__ import annotations

import queue
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from app.cluster.errors import PeerError
from app.cluster.peers import HANDSHAKE_BYTES, Connection, PeerServer, connect

SECRET = b"sixteen-or-more-characters"


@pytest.fixture
def server() -> Iterator[tuple[PeerServer, queue.Queue[tuple[str, str, dict[str, object], bytes]]]]:
    got: queue.Queue[tuple[str, str, dict[str, object], bytes]] = queue.Queue()

    def serve(connection: Connection) -> None:
        header, body = connection.recv()
        got.put((connection.peer, connection.purpose, header, body))
        connection.send({"t": "echo", "n": len(body)}, body[::-1])

    made = PeerServer("127.0.0.1", 0, "node-b", SECRET, serve)
    made.start()
    yield made, got
    made.stop()


def test_members_with_the_secret_exchange_headers_and_bodies(server: tuple[PeerServer, queue.Queue]) -> None:  # type: ignore[type-arg]
    made, got = server
    connection = connect(f"127.0.0.1:{made.port}", "node-a", "relay", SECRET)
    assert connection.peer == "node-b"
    body = bytes(range(256)) * 1000
    connection.send({"t": "events", "plan": "p"}, body)
    assert got.get(timeout=5) == ("node-a", "relay", {"t": "events", "plan": "p"}, body)
    header, answer = connection.recv()
    assert header == {"t": "echo", "n": len(body)} and answer == body[::-1]
    connection.close()


def test_a_wrong_secret_is_refused_on_both_sides(server: tuple[PeerServer, queue.Queue]) -> None:  # type: ignore[type-arg]
    made, got = server
    with pytest.raises(PeerError, match="did not prove it knows the cluster secret"):
        connect(f"127.0.0.1:{made.port}", "node-x", "relay", b"another-secret-of-sixteen")
    time.sleep(0.2)
    assert got.empty()  # nothing of the stranger reached the node


def test_a_stranger_that_sends_garbage_or_too_much_is_cut_off(server: tuple[PeerServer, queue.Queue]) -> None:  # type: ignore[type-arg]
    made, got = server
    with socket.create_connection(("127.0.0.1", made.port)) as raw:
        raw.sendall(struct.pack(">II", HANDSHAKE_BYTES * 100, 10) + b"x" * 100)  # a huge frame before login
        assert closed_without_answer(raw)
    with socket.create_connection(("127.0.0.1", made.port)) as raw:
        raw.sendall(b"GET / HTTP/1.1\r\n\r\n")
        assert closed_without_answer(raw)
    assert got.empty()


def closed_without_answer(raw: socket.socket) -> bool:
    raw.settimeout(5)
    try:
        return raw.recv(100) == b""
    except ConnectionResetError:  # closed with our bytes unread
        return True


def test_a_silent_client_is_dropped_after_the_handshake_timeout(
    server: tuple[PeerServer, queue.Queue],
) -> None:  # type: ignore[type-arg]
    made, _ = server
    with socket.create_connection(("127.0.0.1", made.port)) as raw:
        raw.settimeout(10)
        started = time.monotonic()
        assert raw.recv(100) == b""
        assert 2.0 < time.monotonic() - started < 8.0


def test_a_client_trickling_bytes_is_cut_off_when_the_whole_handshake_is_due(
    server: tuple[PeerServer, queue.Queue],  # type: ignore[type-arg]
) -> None:
    made, _ = server
    with socket.create_connection(("127.0.0.1", made.port)) as raw:
        started = time.monotonic()
        raw.sendall(struct.pack(">II", 200, 150))
        try:
            for _ in range(20):  # one byte every half second would keep a per-read timeout happy
                raw.sendall(b"x")
                time.sleep(0.5)
        except OSError:
            pass
        assert closed_without_answer(raw)
        assert time.monotonic() - started < 6.0


def test_closing_with_a_last_word_never_waits_on_a_peer_that_does_not_read() -> None:
    """A standby that stopped reading (a black-holed network) must not hold up the notifier
    dropping it: the send stuck on it fails, and the drop returns at once."""
    mine, theirs = socket.socketpair()
    mine.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    connection = Connection(mine, "node-b", "subscribe")
    failed: queue.Queue[BaseException | None] = queue.Queue()

    def stuck() -> None:
        try:
            connection.send({"t": "rec"}, b"x" * (8 << 20))  # far more than the buffers hold
            failed.put(None)
        except PeerError as exc:
            failed.put(exc)

    sender = threading.Thread(target=stuck, daemon=True)
    sender.start()
    time.sleep(0.3)  # the sender is blocked on the full buffer, holding the send lock
    started = time.monotonic()
    connection.close_with({"t": "dropped", "why": "not acknowledged"})
    assert time.monotonic() - started < 0.5
    assert isinstance(failed.get(timeout=2), PeerError)
    assert connection.closed
    theirs.close()
