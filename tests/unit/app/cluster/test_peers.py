"""The cluster channel on real loopback sockets: both sides prove the shared secret before
anything else is read, a wrong secret or a stranger's bytes get nothing, messages arrive as
the values that were sent (header fields and a binary body), and a header of the wrong shape
is refused with a message that names what is wrong."""

from __future__ import annotations

import json
import queue
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from app.cluster.errors import PeerError
from app.cluster.peers import HANDSHAKE_BYTES, Connection, PeerServer, connect, decode, encode
from ha.messages import (
    KINDS,
    Ack,
    CarriedOutput,
    Dropped,
    Heartbeat,
    Message,
    Record,
    RelayedEvents,
    State,
    Subscribe,
)

SECRET = b"sixteen-or-more-characters"
Got = queue.Queue[tuple[str, str, Message]]


def start_server(handshake_seconds: float = 3.0) -> tuple[PeerServer, Got]:
    got: Got = queue.Queue()

    def serve(connection: Connection) -> None:
        message = connection.recv()
        got.put((connection.peer, connection.purpose, message))
        assert isinstance(message, RelayedEvents)
        connection.send(Record(len(message.body), message.body[::-1]))

    made = PeerServer("127.0.0.1", 0, "node-b", SECRET, serve, handshake_seconds=handshake_seconds)
    made.start()
    return made, got


@pytest.fixture
def server() -> Iterator[tuple[PeerServer, Got]]:
    made, got = start_server()
    yield made, got
    made.stop()


def test_members_with_the_secret_exchange_messages_with_bodies(server: tuple[PeerServer, Got]) -> None:
    made, got = server
    connection = connect(f"127.0.0.1:{made.port}", "node-a", "relay", SECRET)
    assert connection.peer == "node-b"
    body = bytes(range(256)) * 1000
    connection.send(RelayedEvents("p", "x:1", body))
    assert got.get(timeout=5) == ("node-a", "relay", RelayedEvents("p", "x:1", body))
    assert connection.recv() == Record(len(body), body[::-1])
    connection.close()


@pytest.mark.parametrize(
    "message",
    [
        Heartbeat("10.0.0.1:4000", {"a": "10.0.0.2:4000", "b": None}),
        Subscribe("p", "log-1", 17, 3, None, True),
        State("log-1", 5, 2, 1_000, (1, 2**63 - 1), 4, 3, 2, b"\x00state"),
        CarriedOutput("log-1", 5, 2, (0, 3), b"events"),
        Ack(9, True),
        Dropped("not acknowledged"),
    ],
)
def test_every_field_survives_the_wire(message: Message) -> None:
    assert decode(*encode(message), "node-a") == message


def test_each_message_type_has_its_own_tag() -> None:
    tags = [kind.TAG for kind in KINDS]
    assert len(tags) == len(set(tags))


@pytest.mark.parametrize(
    ("header", "body", "error"),
    [
        ({"t": "rec"}, b"", "node-a sent a 'rec' message without 'p'"),
        (
            {"t": "rec", "p": "5"},
            b"",
            "node-a sent a 'rec' message whose 'p' is wrong: \"5\" is not an integer",
        ),
        (
            {"t": "ack", "p": True},
            b"",
            "node-a sent a 'ack' message whose 'p' is wrong: true is not an integer",
        ),
        ({"t": "hb", "addr": "h:1", "knows": {"a": 5}}, b"", "whose 'knows' is wrong"),
        ({"t": "live"}, b"body", "node-a sent a 'live' message with a body"),
        ({"t": "echo"}, b"", "node-a sent a message of unknown type 'echo'"),
        ({"type": "rec"}, b"", "node-a sent a message without a type"),
    ],
)
def test_a_header_of_the_wrong_shape_is_refused_naming_the_field(
    header: dict[str, object], body: bytes, error: str
) -> None:
    with pytest.raises(PeerError) as raised:
        decode(json.dumps(header).encode(), body, "node-a")
    assert error in str(raised.value)


def test_a_wrong_secret_is_refused_on_both_sides(server: tuple[PeerServer, Got]) -> None:
    made, got = server
    with pytest.raises(PeerError, match="did not prove it knows the cluster secret"):
        connect(f"127.0.0.1:{made.port}", "node-x", "relay", b"another-secret-of-sixteen")
    connection = connect(f"127.0.0.1:{made.port}", "node-a", "relay", SECRET)  # served after the stranger
    connection.send(RelayedEvents("p", "x:2", b"ok"))
    assert got.get(timeout=5)[0] == "node-a"  # the first thing that reached the node is this member's
    connection.close()


def test_a_stranger_that_sends_garbage_or_too_much_is_cut_off(server: tuple[PeerServer, Got]) -> None:
    made, got = server
    with socket.create_connection(("127.0.0.1", made.port)) as raw:
        raw.sendall(struct.pack(">II", HANDSHAKE_BYTES * 100, 10) + b"x" * 100)  # a huge frame before login
        assert closed_without_answer(raw)
    with socket.create_connection(("127.0.0.1", made.port)) as raw:
        raw.sendall(b"GET / HTTP/1.1\r\n\r\n")
        assert closed_without_answer(raw)
    assert got.empty()


def closed_without_answer(raw: socket.socket, within: float = 5.0) -> bool:
    """Whether the node closes the connection without a byte for us (it must within `within` s:
    a test deadline, not a measured duration)."""
    raw.settimeout(within)
    try:
        return raw.recv(100) == b""
    except ConnectionResetError:  # closed with our bytes unread
        return True


def test_a_silent_client_is_dropped_once_the_handshake_is_due() -> None:
    made, _ = start_server(handshake_seconds=0.2)
    try:
        with socket.create_connection(("127.0.0.1", made.port)) as raw:
            assert closed_without_answer(raw)
    finally:
        made.stop()


def test_a_client_trickling_bytes_is_cut_off_when_the_whole_handshake_is_due() -> None:
    """One byte every 50 ms would keep a per-read timeout of 0.3 s happy for ever; the whole
    handshake's deadline cuts it off."""
    made, got = start_server(handshake_seconds=0.3)
    cut_off = threading.Event()
    try:
        with socket.create_connection(("127.0.0.1", made.port)) as raw:
            raw.sendall(struct.pack(">II", 200, 150))
            try:
                for _ in range(200):  # 10 s of trickling at most
                    raw.sendall(b"x")
                    time.sleep(0.05)
            except OSError:
                cut_off.set()
            assert cut_off.is_set()  # the node closed the connection: our sends fail
    finally:
        made.stop()
    assert got.empty()


def test_closing_with_a_last_word_never_waits_on_a_peer_that_does_not_read() -> None:
    """A standby that stopped reading (a black-holed network) must not hold up the notifier
    dropping it: `close_with` does not wait for the send lock a stuck send holds, and the
    stuck send fails once the connection is closed."""
    mine, theirs = socket.socketpair()
    mine.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    connection = Connection(mine, "node-b", "subscribe")
    failed: queue.Queue[BaseException | None] = queue.Queue()
    sending = threading.Event()

    def stuck() -> None:
        try:
            sending.set()
            connection.send(Record(1, b"x" * (8 << 20)))  # far more than the buffers hold
            failed.put(None)
        except PeerError as exc:
            failed.put(exc)

    sender = threading.Thread(target=stuck, daemon=True)
    sender.start()
    sending.wait(2)
    while not connection._send_lock.locked():  # the sender is blocked on the full buffer, holding it
        time.sleep(0.01)
    closer = threading.Thread(target=connection.close_with, args=(Dropped("not acknowledged"),), daemon=True)
    closer.start()
    closer.join(5)  # without the non-blocking lock it would wait for ever: the sender never returns
    assert not closer.is_alive()
    assert isinstance(failed.get(timeout=5), PeerError)
    assert connection.closed
    theirs.close()
