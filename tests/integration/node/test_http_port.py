"""The node's HTTP port under hostile clients, over real loopback sockets.

A `WebServer` in this process serves the node's Flask app (and a route that waits, for the
stop test) with small limits, so every deadline is reached within seconds.
"""

from __future__ import annotations

import http.client
import json
import select
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from flask import Blueprint, request

from app.auth import Credentials
from app.http.limits import Limits
from app.http.server import WebServer
from app.http.web import create_web_app
from tests.support.nodes import ADMIN_PASSWORD, get_json, node_config, running_node

pytestmark = pytest.mark.timeout(30)

SLOW_HEADERS = b"GET /health HTTP/1.1\r\nHost: cepheus\r\nUser-Agent: one-byte-a-second\r\n\r\n"


class Gate:
    """A route that holds its request until released, and one that reads the body."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.arrivals = threading.Semaphore(0)  # one per request that reached the route
        self.release = threading.Event()

    def blueprint(self) -> Blueprint:
        bp = Blueprint("gate", __name__)

        @bp.get("/wait")
        def wait() -> Any:
            self.entered.set()
            self.arrivals.release()
            self.release.wait(20)
            return {"waited": True}

        @bp.post("/echo")
        def echo() -> Any:
            return {"bytes": len(request.get_data())}

        return bp


def serve(limits: Limits, gate: Gate | None = None) -> WebServer:
    credentials = Credentials(lambda user, password: False)
    app = create_web_app([(gate or Gate()).blueprint()], lambda: {"status": "ok"}, credentials)
    server = WebServer(app, "127.0.0.1", 0, limits)
    server.start()
    return server


@pytest.fixture
def port_with() -> Iterator[Callable[..., WebServer]]:
    servers: list[WebServer] = []

    def make(gate: Gate | None = None, **limits: Any) -> WebServer:
        servers.append(serve(Limits(**limits), gate))
        return servers[-1]

    yield make
    for server in servers:
        server.stop()


def get(server: WebServer, path: str = "/health", timeout: float = 5.0) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=timeout) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def connect(server: WebServer, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((source, 0))
    sock.settimeout(10)
    sock.connect(("127.0.0.1", server.port))
    return sock


def exchange(sock: socket.socket, request: bytes) -> tuple[int, dict[str, str], Any]:
    """Send one request on `sock` and read its reply; the connection stays open if the reply allows."""
    sock.sendall(request)
    reply = http.client.HTTPResponse(sock)
    reply.begin()
    body = reply.read()
    return reply.status, dict(reply.getheaders()), json.loads(body)


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server has closed `sock` (without waiting)."""
    if not select.select([sock], [], [], 0)[0]:
        return False
    try:
        return sock.recv(4096) == b""
    except ConnectionResetError:
        return True


def wait_closed(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        while data := sock.recv(4096):
            assert not data.startswith(b"HTTP/1.1 2"), data
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_slow_clients_are_dropped_at_the_header_deadline_and_hold_no_worker(
    port_with: Callable[..., WebServer],
) -> None:
    server = port_with(threads=2, header_timeout=3.0)
    threads_before = threading.active_count()
    with ExitStack() as stack:
        slow = [stack.enter_context(connect(server)) for _ in range(8)]
        for sock in slow:
            sock.sendall(SLOW_HEADERS[:1])
        assert get(server) == (200, {"status": "ok"})  # both workers are free for it
        assert not any(closed_by_server(sock) for sock in slow)  # ... while the slow ones are connected
        assert threading.active_count() == threads_before
        sent, dropped = 1, set[int]()
        while len(dropped) < len(slow) and sent < 15:  # one byte a second, as a slow-loris client sends
            time.sleep(1)
            for i, sock in enumerate(slow):
                if i in dropped or closed_by_server(sock):
                    dropped.add(i)
                    continue
                try:
                    sock.sendall(SLOW_HEADERS[sent : sent + 1])
                except OSError:
                    dropped.add(i)
            sent += 1
        assert dropped == set(range(len(slow)))
        assert sent < len(SLOW_HEADERS)  # none came near to finishing its headers


def test_a_body_that_does_not_arrive_is_dropped_at_its_deadline(port_with: Callable[..., WebServer]) -> None:
    server = port_with(body_timeout=1.0)
    with connect(server) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: cepheus\r\nContent-Length: 100\r\n\r\n{")
        assert wait_closed(sock, 8)


def test_an_idle_keep_alive_connection_is_closed(port_with: Callable[..., WebServer]) -> None:
    server = port_with(idle_timeout=1.0)
    with connect(server) as sock:
        status, _, body = exchange(sock, b"GET /health HTTP/1.1\r\nHost: cepheus\r\n\r\n")
        assert (status, body) == (200, {"status": "ok"})
        assert wait_closed(sock, 8)


def test_connections_past_the_per_address_limit_are_refused_while_another_address_gets_in(
    port_with: Callable[..., WebServer],
) -> None:
    server = port_with(max_connections_per_address=3)
    request = b"GET /health HTTP/1.1\r\nHost: cepheus\r\n\r\n"
    with ExitStack() as stack:
        admitted = [stack.enter_context(connect(server)) for _ in range(3)]
        for sock in admitted:
            assert exchange(sock, request)[0] == 200  # each is open and counted
        with connect(server) as extra:
            reply = http.client.HTTPResponse(extra)
            reply.begin()
            assert reply.status == 429
            assert json.loads(reply.read()) == {
                "error": "too many open connections from 127.0.0.1 (the limit is 3); close some and retry"
            }
            assert wait_closed(extra, 5)
        with connect(server, source="127.0.0.2") as other:
            assert exchange(other, request)[0] == 200
        admitted.pop().close()
        deadline = time.monotonic() + 5
        while server.guard.open_from("127.0.0.1") > 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        with connect(server) as again:
            assert exchange(again, request)[0] == 200


def test_past_max_connections_a_silent_connection_makes_room_for_a_new_one(
    port_with: Callable[..., WebServer],
) -> None:
    server = port_with(max_connections=4, header_timeout=30.0)
    with ExitStack() as stack:
        silent = [stack.enter_context(connect(server)) for _ in range(4)]
        deadline = time.monotonic() + 5
        while server.guard.open_from("127.0.0.1") < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert get(server) == (200, {"status": "ok"})  # long before the header deadline
        assert wait_closed(silent[0], 5)  # the one waiting longest made room
        assert not any(closed_by_server(sock) for sock in silent[1:])


def test_past_max_connections_with_every_connection_busy_a_new_one_gets_503(
    port_with: Callable[..., WebServer],
) -> None:
    gate = Gate()
    server = port_with(gate, max_connections=2, threads=2)
    replies: list[tuple[int, Any]] = []
    waiting = [threading.Thread(target=lambda: replies.append(get(server, "/wait", 20))) for _ in range(2)]
    try:
        for thread in waiting:
            thread.start()
        assert gate.arrivals.acquire(timeout=10) and gate.arrivals.acquire(timeout=10)  # both in service
        assert get(server) == (503, {"error": "every connection of the node is busy; retry shortly"})
    finally:
        gate.release.set()
        for thread in waiting:
            thread.join(10)
    assert replies == [(200, {"waited": True})] * 2


def test_many_half_sent_requests_do_not_add_threads(port_with: Callable[..., WebServer]) -> None:
    server = port_with(threads=4, max_connections_per_address=500)
    threads_before = threading.active_count()
    with ExitStack() as stack:
        for i in range(150):
            sock = stack.enter_context(connect(server))
            if i % 2:
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: ceph")
            else:
                sock.sendall(b"POST /health HTTP/1.1\r\nHost: cepheus\r\nContent-Length: 1000\r\n\r\n[1, ")
        assert get(server) == (200, {"status": "ok"})  # accepted after all of them
        assert threading.active_count() == threads_before


@pytest.mark.parametrize(
    ("request_bytes", "status", "error"),
    [
        (
            b"POST /events/t:1 HTTP/1.1\r\nHost: c\r\nContent-Length: 2000\r\n\r\n",
            413,
            "the request body exceeds 1000 bytes (http.max_request_bytes)",
        ),
        (
            b"GET / HTTP/1.1\r\nHost: c\r\nX-Big: " + b"x" * 3000 + b"\r\n\r\n",
            431,
            "the request headers exceed 2048 bytes (http.max_header_bytes)",
        ),
        (b"G(T / HTTP/1.1\r\nHost: c\r\n\r\n", 400, "Bad Request: Start line is invalid"),
        (b"GET /nowhere HTTP/1.1\r\nHost: c\r\n\r\n", 404, "no such resource: GET /nowhere"),
    ],
)
def test_errors_over_the_wire_are_json(
    port_with: Callable[..., WebServer], request_bytes: bytes, status: int, error: str
) -> None:
    server = port_with(max_body_bytes=1000, max_header_bytes=2048)
    with connect(server) as sock:
        got_status, headers, body = exchange(sock, request_bytes)
    assert (got_status, body) == (status, {"error": error})
    assert headers["Content-Type"] == "application/json"


def test_stop_lets_a_request_in_progress_finish_and_refuses_new_connections() -> None:
    gate = Gate()
    server = serve(Limits(), gate)
    replies: list[tuple[int, Any]] = []
    request = threading.Thread(target=lambda: replies.append(get(server, "/wait", timeout=20)))
    request.start()
    assert gate.entered.wait(10)
    stopping = threading.Thread(target=server.stop)
    stopping.start()
    deadline = time.monotonic() + 10
    refused = False
    while not refused and time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
            time.sleep(0.05)
        except (
            ConnectionRefusedError,
            ConnectionResetError,
        ):  # reset: caught in the closing listener's backlog
            refused = True
    assert refused
    assert stopping.is_alive()  # waiting for the request in progress
    gate.release.set()
    request.join(10)
    stopping.join(15)
    assert replies == [(200, {"waited": True})]
    assert not stopping.is_alive()


def test_a_node_serves_its_port_with_the_configured_limits_and_login(tmp_path: Path) -> None:
    config = node_config(
        tmp_path,
        f"sqlite:///{tmp_path / 'registry.db'}",
        http={"max_connections_per_address": 2},
        thrift={"enabled": False},
    )
    with running_node(config) as node:
        assert node.web is not None
        base = f"http://127.0.0.1:{node.web.port}"
        assert get_json(f"{base}/health") == {"status": "ok"}
        details = get_json(f"{base}/health/details", password=ADMIN_PASSWORD)
        assert details["status"] == "ok" and "plans" in details and "adapters" in details
        with pytest.raises(urllib.error.HTTPError) as refused:
            get_json(f"{base}/health/details", password="wrong")
        assert (refused.value.code, json.loads(refused.value.read())) == (
            401,
            {"error": "wrong user name or password"},
        )
        refused.value.close()
        assert node.web.limits.max_connections_per_address == 2
