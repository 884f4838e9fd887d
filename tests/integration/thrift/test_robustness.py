"""Hostile or odd peers cost at most their own connection (§1 liveness probes, §8)."""

from __future__ import annotations

import logging
import socket
import ssl
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.thrift.client import DataBridgeClient
from adapters.thrift.errors import RemoteApplicationError, TransportError
from adapters.thrift.memory import InMemoryHandler
from adapters.thrift.server import DataBridgeServer
from adapters.thrift.settings import ServerSettings
from engine.errors import AdapterError

from .conftest import PIZZA, ClientFactory, arrived, pizza_events

pytestmark = pytest.mark.thrift

PUBLISH_HEADER = b"\x80\x01\x00\x01\x00\x00\x00\x07publish\x00\x00\x00\x01\x0c\x00\x01"


@pytest.fixture
def quiet_server(caplog: pytest.LogCaptureFixture, server: DataBridgeServer) -> Iterator[DataBridgeServer]:
    """The server, failing the test if it logs a warning, an error or a traceback."""
    caplog.set_level(logging.DEBUG, logger="adapters.thrift")
    yield server
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert loud == []


def exchange(port: int, data: bytes, timeout: float = 5.0) -> bytes:
    """Send `data`, half-close, and return everything the server answers before closing."""
    received = b""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            while chunk := sock.recv(65536):
                received += chunk
        except TimeoutError:
            raise
        except OSError:
            pass  # the server already closed, with our bytes unread: that is its answer
    return received


def still_serves(make_client: ClientFactory, handler: InMemoryHandler) -> None:
    """A client publishes 3 events: they arrive, and nothing else did (the hostile bytes before)."""
    assert handler.events == []
    client = make_client(definitions=[PIZZA])
    client.connect()
    client.publish(pizza_events(3))
    assert arrived(handler, 3) == pizza_events(3)
    client.close()


def wait_for_no_connections(server: DataBridgeServer) -> None:
    deadline = time.monotonic() + 5
    while server.connection_count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.connection_count == 0


def test_empty_tcp_connection_is_a_normal_close(
    quiet_server: DataBridgeServer, make_client: ClientFactory, handler: InMemoryHandler
) -> None:
    for port in (quiet_server.port, quiet_server.tls_port):
        assert port is not None
        socket.create_connection(("127.0.0.1", port)).close()
    still_serves(make_client, handler)


def test_abandoned_tls_handshake_is_a_normal_close(
    quiet_server: DataBridgeServer, make_client: ClientFactory, handler: InMemoryHandler
) -> None:
    assert quiet_server.tls_port is not None
    exchange(quiet_server.tls_port, b"\x16\x03\x01\x00\xa5\x01\x00")
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", quiet_server.tls_port)) as raw:
        context.wrap_socket(raw).close()
    still_serves(make_client, handler)
    wait_for_no_connections(quiet_server)


def test_huge_declared_length_closes_only_that_connection(
    server: DataBridgeServer, make_client: ClientFactory, handler: InMemoryHandler
) -> None:
    huge_string = PUBLISH_HEADER + b"\x0b\x00\x01\x7f\xff\xff\xff"
    huge_list = PUBLISH_HEADER + b"\x0f\x00\x07\x0b\x7f\xff\xff\xff"
    huge_name = b"\x80\x01\x00\x01\x7f\xff\xff\xf0"
    for data in (huge_string, huge_list, huge_name):
        start = time.monotonic()
        answer = exchange(server.port, data)
        assert time.monotonic() - start < 2
        assert b"publish" in answer or answer == b""
    still_serves(make_client, handler)


def test_malformed_frames_close_the_connection(
    server: DataBridgeServer, make_client: ClientFactory, handler: InMemoryHandler
) -> None:
    bad_version = b"\x80\x02\x00\x01\x00\x00\x00\x07publish\x00\x00\x00\x01\x00"
    framed = (19).to_bytes(4, "big") + b"\x80\x01\x00\x01\x00\x00\x00\x07publish\x00\x00\x00\x01\x00"
    truncated = PUBLISH_HEADER + b"\x0b\x00\x01\x00\x00\x00\x24c0ffee"
    for data in (bad_version, framed, truncated, b"GET / HTTP/1.1\r\n\r\n"):
        exchange(server.port, data)
    still_serves(make_client, handler)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(
        st.binary(max_size=300),
        st.binary(max_size=300).map(lambda tail: PUBLISH_HEADER + tail),
        st.binary(max_size=300).map(lambda tail: b"\x00\x00\x00\x07connect\x01\x00\x00\x00\x01" + tail),
    )
)
def test_random_bytes_never_break_the_server(
    caplog: pytest.LogCaptureFixture, server: DataBridgeServer, data: bytes
) -> None:
    exchange(server.port, data)
    assert server.tls_port is not None
    exchange(server.tls_port, data)
    assert [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info] == []


def test_server_still_serves_after_random_bytes(
    server: DataBridgeServer, make_client: ClientFactory, handler: InMemoryHandler
) -> None:
    for seed in range(20):
        exchange(server.port, bytes((seed * 37 + i * 11) % 256 for i in range(200)))
    still_serves(make_client, handler)
    wait_for_no_connections(server)


def test_stop_closes_idle_connections_promptly(settings: ServerSettings, handler: InMemoryHandler) -> None:
    server = DataBridgeServer(settings, handler)
    server.start()
    idle = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(5)]
    time.sleep(0.1)
    start = time.monotonic()
    server.stop()
    assert time.monotonic() - start < 2
    assert server.connection_count == 0
    for sock in idle:
        sock.close()


def test_message_over_max_message_bytes_is_refused_and_the_server_carries_on(
    settings: ServerSettings, handler: InMemoryHandler, make_client: ClientFactory, certificate: str
) -> None:
    small = ServerSettings(**{**settings.__dict__, "max_message_bytes": 4096})
    with DataBridgeServer(small, handler) as server:
        client = DataBridgeClient(
            f"tcp://127.0.0.1:{server.port}",
            f"ssl://127.0.0.1:{server.tls_port}",
            username="admin",
            password="admin",
            ca_file=certificate,
            bundle_size=1000,
            definitions=[PIZZA],
        )
        client.connect()
        with pytest.raises((RemoteApplicationError, TransportError)):
            client.publish(pizza_events(1000))
        client.bundle_size = 10
        client.publish(pizza_events(10))
        assert arrived(handler, 10) == pizza_events(10)  # nothing of the refused message
        client.close()


def test_a_port_in_use_is_reported_with_the_setting_to_change(
    server: DataBridgeServer, settings: ServerSettings, handler: InMemoryHandler
) -> None:
    clash = ServerSettings(**{**settings.__dict__, "port": server.port})
    with pytest.raises(AdapterError, match="thrift.port"):
        DataBridgeServer(clash, handler).start()
