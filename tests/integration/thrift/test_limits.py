"""What a client can cost the receiver: connections, time and memory are bounded, and a
refused client is told why (real sockets on 127.0.0.1 and 127.0.0.2)."""

from __future__ import annotations

import dataclasses
import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from adapters.thrift.bundle import encode_bundle
from adapters.thrift.bundle_codec import write_bundle
from adapters.thrift.client import DataBridgeClient
from adapters.thrift.codec import encode_string
from adapters.thrift.connection import Connection
from adapters.thrift.errors import AuthenticationFailed, RemoteApplicationError
from adapters.thrift.idl import PLAIN_SERVICE, SECURE_SERVICE, service
from adapters.thrift.memory import InMemoryHandler
from adapters.thrift.messages import encode_call
from adapters.thrift.server import DataBridgeServer
from adapters.thrift.settings import ServerSettings
from adapters.thrift.tls import client_context

from .conftest import PIZZA, arrived, pizza_events

pytestmark = pytest.mark.thrift


@contextmanager
def serving(
    settings: ServerSettings, handler: InMemoryHandler, **limits: object
) -> Iterator[DataBridgeServer]:
    with DataBridgeServer(dataclasses.replace(settings, **limits), handler) as server:  # type: ignore[arg-type]
        yield server


def client(server: DataBridgeServer, **options: object) -> DataBridgeClient:
    options.setdefault("ca_file", server.settings.data_dir + "/tls/cert.pem")
    return DataBridgeClient(
        f"tcp://127.0.0.1:{server.port}",
        f"ssl://127.0.0.1:{server.tls_port}",
        username="admin",
        password="admin",
        timeout=5.0,
        definitions=[PIZZA],
        **options,  # type: ignore[arg-type]
    )


_OPEN: list[socket.socket] = []


@pytest.fixture(autouse=True)
def close_test_sockets() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def connect_from(source: str, port: int) -> socket.socket:
    """A raw connection from `source`, closed at the end of the test if the test did not."""
    sock = socket.socket()
    _OPEN.append(sock)
    sock.bind((source, 0))
    sock.settimeout(5)
    sock.connect(("127.0.0.1", port))
    return sock


def closed_within(sock: socket.socket, seconds: float) -> float:
    """Seconds until the server closed `sock` (reading whatever it sent); fails past `seconds`."""
    start = time.monotonic()
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        pass
    return time.monotonic() - start


def wait_until(predicate: object, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)
    assert predicate()  # type: ignore[operator]


def find_stream(port: int, source: str = "127.0.0.1") -> None:
    """One call on a fresh plain connection from `source` (an unknown session: `se`)."""
    conn = Connection("127.0.0.1", port, service(PLAIN_SERVICE), timeout=5)
    conn.open()
    try:
        conn.call("findStreamId", sessionId="nope", streamName="x", streamVersion="1")
    finally:
        conn.close()


def test_a_client_beyond_max_connections_is_told_why(
    settings: ServerSettings, handler: InMemoryHandler, caplog: pytest.LogCaptureFixture
) -> None:
    with serving(settings, handler, max_connections=2, max_connections_per_address=100) as server:
        held = [connect_from("127.0.0.1", server.port) for _ in range(2)]
        wait_until(lambda: server.connection_count == 2)
        with pytest.raises(RemoteApplicationError, match=r"refused.*thrift\.max_connections"):
            find_stream(server.port)
        assert any("refused" in r.getMessage() and "127.0.0.1" in r.getMessage() for r in caplog.records)
        for sock in held:
            sock.close()


def test_one_address_cannot_take_the_port_from_others(
    settings: ServerSettings, handler: InMemoryHandler
) -> None:
    with serving(settings, handler, max_connections_per_address=3) as server:
        held = [connect_from("127.0.0.2", server.port) for _ in range(3)]
        wait_until(lambda: server.connection_count == 3)
        refused = connect_from("127.0.0.2", server.port)
        refused.sendall(b"\x00")
        assert b"max_connections_per_address" in refused.recv(4096)
        publisher = client(server)  # from 127.0.0.1
        publisher.connect()
        publisher.publish(pizza_events(5))
        assert arrived(handler, 5) == pizza_events(5)
        publisher.close()
        for sock in held + [refused]:
            sock.close()


def test_a_flooded_plain_port_does_not_stop_logins_and_a_full_login_port_says_so(
    settings: ServerSettings, handler: InMemoryHandler
) -> None:
    with serving(settings, handler, max_connections=2, max_tls_connections=1) as server:
        assert server.tls_port is not None
        held = [connect_from(f"127.0.0.{i}", server.port) for i in (2, 3)]
        wait_until(lambda: server.admission.open_count("plain") == 2)
        auth = Connection(
            "127.0.0.1",
            server.tls_port,
            service(SECURE_SERVICE),
            tls=client_context(server.settings.data_dir + "/tls/cert.pem"),
            timeout=5,
        )
        assert auth.call("connect", userName="admin", password="admin")
        auth.close()
        wait_until(lambda: server.admission.open_count("tls") == 0)
        squatter = connect_from("127.0.0.4", server.tls_port)
        wait_until(lambda: server.admission.open_count("tls") == 1)
        with pytest.raises(RemoteApplicationError, match=r"thrift\.max_tls_connections"):
            auth.call("connect", userName="admin", password="admin")
        for sock in held + [squatter]:
            sock.close()


def test_a_connection_that_does_not_log_in_is_closed(
    settings: ServerSettings, handler: InMemoryHandler, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="adapters.thrift")
    with serving(settings, handler, login_timeout_seconds=0.5) as server:
        assert server.tls_port is not None
        idle = connect_from("127.0.0.1", server.port)
        idle_tls = connect_from("127.0.0.1", server.tls_port)
        trickle = connect_from("127.0.0.1", server.port)
        trickle.sendall(b"\x80")
        assert closed_within(idle, 3) < 2.5
        assert closed_within(trickle, 3) < 2.5
        assert closed_within(idle_tls, 3) < 2.5
        wait_until(lambda: server.connection_count == 0)
        assert any("thrift.login_timeout_seconds" in r.getMessage() for r in caplog.records)


def test_a_logged_in_client_sending_a_byte_at_a_time_is_closed(
    settings: ServerSettings, handler: InMemoryHandler
) -> None:
    with serving(settings, handler, message_timeout_seconds=1.0) as server:
        publisher = client(server)
        session = publisher.connect()
        bundle = write_bundle(encode_bundle(session, pizza_events(1), publisher._definitions.get))
        call = encode_call(service(PLAIN_SERVICE).methods["publish"], 1, {"eventBundle": bundle})
        slow = connect_from("127.0.0.1", server.port)
        start = time.monotonic()
        closed = False
        for byte in call:
            try:
                slow.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.1)
            if time.monotonic() - start > 4:
                break
        assert closed or closed_within(slow, 1) < 1
        assert time.monotonic() - start < 3
        assert handler.events == []
        publisher.close()


def test_an_idle_logged_in_connection_is_closed_and_the_client_reconnects(
    settings: ServerSettings, handler: InMemoryHandler
) -> None:
    with serving(settings, handler, idle_timeout_seconds=0.3) as server:
        publisher = client(server)
        publisher.connect()
        publisher.publish(pizza_events(2))
        wait_until(lambda: server.connection_count == 0)
        publisher.publish(pizza_events(3, start=2))  # noticed the closed connection; nothing lost
        assert arrived(handler, 5) == pizza_events(5)
        publisher.close()


def test_before_login_only_small_messages_are_read(
    settings: ServerSettings, handler: InMemoryHandler, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="adapters.thrift")
    with serving(settings, handler, max_login_message_bytes=4096) as server:
        publish = b"\x80\x01\x00\x01\x00\x00\x00\x07publish\x00\x00\x00\x01\x0c\x00\x01"
        forged = publish + b"\x0b\x00\x01" + encode_string("forged-session") + b"\x0b\x00\x09"
        attacker = connect_from("127.0.0.1", server.port)
        attacker.sendall(forged + encode_string("x" * 100_000)[:4])
        try:
            attacker.sendall(b"x" * 100_000)
        except OSError:
            pass
        assert closed_within(attacker, 3) < 3
        assert any("max_login_message_bytes" in r.getMessage() for r in caplog.records)
        # a logged-in client's first bundle on a fresh connection may be large: its session comes first
        publisher = client(server, bundle_size=500)
        publisher.connect()
        publisher.publish(pizza_events(500))
        assert arrived(handler, 500) == pizza_events(500)  # and nothing of the forged bundle
        publisher.close()
        wait_until(lambda: server.budget.held == 0)


def test_unfinished_messages_of_all_connections_stay_within_the_budget(
    settings: ServerSettings, handler: InMemoryHandler
) -> None:
    with serving(settings, handler, max_login_message_bytes=64 * 1024, max_inflight_bytes=100_000) as server:
        publish = b"\x80\x01\x00\x01\x00\x00\x00\x07publish\x00\x00\x00\x01\x0c\x00\x01"
        partial = publish + b"\x0b\x00\x09" + encode_string("y" * 60_000)[:30_000]
        senders = []
        for i in range(6):
            sock = connect_from(f"127.0.0.{i + 2}", server.port)
            sock.sendall(partial)
            senders.append(sock)
        wait_until(lambda: server.budget.held >= 60_000)
        time.sleep(0.2)  # give the other readers time to read, if they (wrongly) could
        assert 60_000 <= server.budget.held <= 100_000  # reads stop at the budget, far from all 6
        for sock in senders:
            sock.close()
        wait_until(lambda: server.connection_count == 0)
        assert server.budget.held == 0


def test_a_wrong_password_is_refused_with_the_handlers_message(
    settings: ServerSettings, handler: InMemoryHandler
) -> None:
    with serving(settings, handler) as server:
        guesser = client(server)
        guesser._password = "wrong"
        with pytest.raises(AuthenticationFailed, match="wrong userName or password"):
            guesser.connect()


def test_a_message_after_a_long_idle_gets_its_whole_time(
    settings: ServerSettings, handler: InMemoryHandler
) -> None:
    with serving(settings, handler, message_timeout_seconds=0.5, idle_timeout_seconds=10) as server:
        publisher = client(server)
        session = publisher.connect()
        publisher.publish(pizza_events(1))
        raw = connect_from("127.0.0.1", server.port)
        method = service(PLAIN_SERVICE).methods["publish"]
        first = encode_call(
            method,
            1,
            {
                "eventBundle": write_bundle(
                    encode_bundle(session, pizza_events(1, 1), publisher._definitions.get)
                )
            },
        )
        raw.sendall(first)
        assert raw.recv(4096)  # trusted now
        time.sleep(1.0)  # idle longer than a message may take, well within the idle timeout
        second = encode_call(
            method,
            2,
            {
                "eventBundle": write_bundle(
                    encode_bundle(session, pizza_events(1, 2), publisher._definitions.get)
                )
            },
        )
        raw.sendall(second[:10])
        time.sleep(0.1)
        raw.sendall(second[10:])
        assert raw.recv(4096)
        assert arrived(handler, 3) == pizza_events(3)
        publisher.close()


def test_a_session_in_any_call_lifts_the_login_limits(
    settings: ServerSettings, handler: InMemoryHandler
) -> None:
    with serving(settings, handler, max_login_message_bytes=4096) as server:
        publisher = client(server)
        publisher.connect()
        fields = ",".join(f"{{'name':'a{i}','type':'STRING'}}" for i in range(400))
        big = "{'name':'wide','version':'1.0.0','payloadData':[" + fields + "]}"
        assert len(big) > 4096
        assert publisher.define_stream(big) == "wide:1.0.0"  # defineStream on a fresh connection
        publisher.close()


def test_a_connection_without_a_thread_costs_only_itself(
    settings: ServerSettings, handler: InMemoryHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    import adapters.thrift.server as server_module

    class NoThread(threading.Thread):
        failures = 1

        def start(self) -> None:
            if self.name.startswith("thrift-(") and NoThread.failures:
                NoThread.failures -= 1
                raise RuntimeError("can't start new thread")
            super().start()

    with serving(settings, handler) as server:
        monkeypatch.setattr(server_module.threading, "Thread", NoThread)
        doomed = connect_from("127.0.0.1", server.port)
        assert closed_within(doomed, 3) < 3
        assert server.admission.open_count() == 0
        publisher = client(server)
        publisher.connect()
        publisher.publish(pizza_events(2))
        assert arrived(handler, 2) == pizza_events(2)
        publisher.close()


def test_one_address_over_its_limit_on_the_login_port_is_closed_without_a_handshake(
    settings: ServerSettings, handler: InMemoryHandler
) -> None:
    with serving(settings, handler, max_connections_per_address=1) as server:
        assert server.tls_port is not None
        held = connect_from("127.0.0.5", server.tls_port)
        wait_until(lambda: server.admission.open_count("tls") == 1)
        extra = connect_from("127.0.0.5", server.tls_port)
        assert closed_within(extra, 3) < 1  # not held open waiting for a TLS handshake
        held.close()


def test_accept_errors_pause_the_listener_instead_of_spinning(
    settings: ServerSettings, handler: InMemoryHandler, caplog: pytest.LogCaptureFixture
) -> None:
    class Exhausted:
        calls = 0

        def accept(self) -> tuple[socket.socket, object]:
            Exhausted.calls += 1
            raise OSError(24, "Too many open files")

    server = DataBridgeServer(dataclasses.replace(settings, tls_port=None), handler)
    loop = threading.Thread(target=server._accept_loop, args=(Exhausted(), server._plain, False), daemon=True)
    loop.start()
    time.sleep(1.5)
    server._stopping.set()
    loop.join(3)
    assert 1 <= Exhausted.calls <= 3
    assert sum("Too many open files" in r.getMessage() for r in caplog.records) == 1
