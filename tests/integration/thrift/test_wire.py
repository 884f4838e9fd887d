"""The hand-built bytes of PROTOCOL §6.3, sent over real sockets, get the exact replies."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterator

import pytest

from adapters.thrift.memory import InMemoryHandler
from adapters.thrift.server import DataBridgeServer
from adapters.thrift.sessions import Sessions
from adapters.thrift.settings import ServerSettings
from tests.unit.adapters.thrift.wire_samples import (
    CONNECT_CALL,
    CONNECT_REPLY,
    PUBLISH_CALL,
    PUBLISH_OK,
    PUBLISH_SESSION_EXPIRED,
    SESSION,
    find_stream_id_call,
    find_stream_id_not_found,
)

from .conftest import PIZZA, arrived

pytestmark = pytest.mark.thrift


@pytest.fixture
def fixed_server(settings: ServerSettings, handler: InMemoryHandler) -> Iterator[DataBridgeServer]:
    sessions = Sessions(60, new_id=lambda: SESSION)
    with DataBridgeServer(settings, handler, sessions) as server:
        yield server


def read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, f"connection closed after {len(data)} of {n} bytes"
        data += chunk
    return data


def tls_socket(port: int) -> ssl.SSLSocket:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    return context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5))


def test_connect_over_tls_then_the_249_byte_publish_in_clear(
    fixed_server: DataBridgeServer, handler: InMemoryHandler
) -> None:
    assert fixed_server.tls_port is not None
    with socket.create_connection(("127.0.0.1", fixed_server.port), timeout=5) as plain:
        plain.sendall(PUBLISH_CALL)
        assert read_exactly(plain, len(PUBLISH_SESSION_EXPIRED)) == PUBLISH_SESSION_EXPIRED
        with tls_socket(fixed_server.tls_port) as secure:
            secure.sendall(CONNECT_CALL)
            assert read_exactly(secure, len(CONNECT_REPLY)) == CONNECT_REPLY
        plain.sendall(PUBLISH_CALL)
        assert read_exactly(plain, len(PUBLISH_OK)) == PUBLISH_OK
    # the first publish was refused (session expired): only the second one's two events arrive
    assert [e.payload for e in arrived(handler, 2)] == [
        (1001, "Alice", 12.5, False),
        (1002, "Bob", 20.0, True),
    ]


def test_unknown_method_on_the_plain_port_keeps_the_socket_usable(
    fixed_server: DataBridgeServer, handler: InMemoryHandler
) -> None:
    expected = (
        b"\x80\x01\x00\x03\x00\x00\x00\x07connect\x00\x00\x00\x01"
        + b"\x0b\x00\x01\x00\x00\x00\x1eInvalid method name: 'connect'"
        + b"\x08\x00\x02\x00\x00\x00\x01"
        + b"\x00"
    )
    handler.delete_stream(PIZZA.stream_id)
    fixed_server.sessions.create("admin")
    with socket.create_connection(("127.0.0.1", fixed_server.port), timeout=5) as plain:
        plain.sendall(CONNECT_CALL)
        assert read_exactly(plain, len(expected)) == expected
        plain.sendall(find_stream_id_call(2))
        assert read_exactly(plain, len(find_stream_id_not_found(2))) == find_stream_id_not_found(2)
