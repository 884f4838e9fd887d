"""The node's HTTP port against an attacker's cheap moves, over real loopback sockets: bodies
sent without credentials, refusals read as resets, logins that tie up the workers, and running
out of file descriptors."""

from __future__ import annotations

import base64
import http.client
import json
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from flask import Blueprint, request

from app.auth import Credentials, LoginThrottle, ThrottleSettings
from app.http.limits import Limits
from app.http.screen import address_lockout
from app.http.server import WebServer
from app.http.web import create_web_app

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[3]
BASIC = "Basic " + base64.b64encode(b"admin:pw").decode()


class Logins:
    """A password check that holds each caller until released, counting who is inside."""

    def __init__(self) -> None:
        self.inside = threading.Semaphore(0)
        self.release = threading.Event()
        self.app_calls = 0

    def verify(self, user: str, password: str) -> bool:
        self.inside.release()
        self.release.wait(30)
        return password == "pw"

    def blueprint(self) -> Blueprint:
        bp = Blueprint("echo", __name__)

        @bp.post("/echo")
        def echo() -> Any:
            self.app_calls += 1
            return {"bytes": len(request.get_data())}

        return bp


@pytest.fixture
def port_with() -> Iterator[Callable[..., tuple[WebServer, Credentials, Logins]]]:
    servers: list[WebServer] = []
    logins = Logins()

    def make(
        settings: ThrottleSettings | None = None, **limits: Any
    ) -> tuple[WebServer, Credentials, Logins]:
        credentials = Credentials(logins.verify, throttle=LoginThrottle(settings))
        app = create_web_app([logins.blueprint()], lambda: {"status": "ok"}, credentials)
        server = WebServer(app, "127.0.0.1", 0, Limits(**limits), lockout=address_lockout(credentials))
        server.start()
        servers.append(server)
        return server, credentials, logins

    yield make
    logins.release.set()
    for server in servers:
        server.stop()


def connect(port: int, source: str = "127.0.0.1", timeout: float = 10) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((source, 0))
    sock.settimeout(timeout)
    sock.connect(("127.0.0.1", port))
    return sock


def read_reply(sock: socket.socket) -> tuple[int, dict[str, str], Any]:
    reply = http.client.HTTPResponse(sock)
    reply.begin()
    return reply.status, dict(reply.getheaders()), json.loads(reply.read())


def ends(sock: socket.socket) -> bool:
    """Whether the server closes `sock` once its reply is read (within the socket's timeout)."""
    try:
        while sock.recv(65536):
            pass
        return True
    except TimeoutError:
        return False


def post_head(path: str, length: int, *headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: cepheus", f"Content-Length: {length}", *headers, "", ""]
    return "\r\n".join(lines).encode()


# ---- 1. bodies before the login -----------------------------------------------------------------


def test_a_post_to_events_without_credentials_is_refused_before_its_body(
    port_with: Callable[..., tuple[WebServer, Credentials, Logins]],
) -> None:
    server, _, _ = port_with()
    with connect(server.port) as sock:
        sock.sendall(post_head("/events/orders:1.0.0", 15_000_000) + b"[" * 1000)  # 15 MB announced
        status, headers, body = read_reply(sock)
        assert (status, body) == (401, {"error": "user name and password required (HTTP basic)"})
        assert headers["WWW-Authenticate"].startswith("Basic ")
        assert headers["Content-Type"] == "application/json"
        assert ends(sock)
    assert server.screen.budget.held == 0


def test_a_locked_out_address_is_refused_before_its_body_and_others_are_not(
    port_with: Callable[..., tuple[WebServer, Credentials, Logins]],
) -> None:
    server, credentials, logins = port_with(ThrottleSettings(max_failures=1, lockout_seconds=30.0))
    credentials.throttle.failed(("address 127.0.0.5",))
    with connect(server.port, "127.0.0.5") as sock:
        sock.sendall(post_head("/echo", 15_000_000, f"Authorization: {BASIC}") + b"x" * 1000)
        status, headers, body = read_reply(sock)
        assert status == 429
        assert body["error"].startswith("too many failed logins (address 127.0.0.5); try again in ")
        assert 1 <= int(headers["Retry-After"]) <= 30
        assert ends(sock)
    with connect(server.port, "127.0.0.6") as sock:
        sock.sendall(post_head("/echo", 3) + b"abc")
        assert read_reply(sock)[::2] == (200, {"bytes": 3})
    assert logins.app_calls == 1


def test_bodies_past_the_inflight_budget_get_503_until_one_is_done(
    port_with: Callable[..., tuple[WebServer, Credentials, Logins]],
) -> None:
    server, _, _ = port_with(max_body_bytes=60_000, max_inflight_bytes=100_000)
    with ExitStack() as stack:
        first = stack.enter_context(connect(server.port))
        first.sendall(post_head("/echo", 60_000) + b"x" * 10)  # holds 60 000 of the 100 000
        second = stack.enter_context(connect(server.port))
        second.sendall(post_head("/echo", 60_000))
        status, headers, body = read_reply(second)
        assert status == 503 and headers["Retry-After"] == "1"
        assert "http.max_inflight_bytes" in body["error"]
        assert ends(second)
        first.sendall(b"x" * 59_990)
        assert read_reply(first)[::2] == (200, {"bytes": 60_000})
    with connect(server.port) as third:  # the first one's bytes were given back
        third.sendall(post_head("/echo", 60_000) + b"y" * 60_000)
        assert read_reply(third)[::2] == (200, {"bytes": 60_000})


# ---- 2. logins must not stall /health or each other ----------------------------------------------


def login(port: int, user: str, timeout: float = 10) -> tuple[int, dict[str, str], Any]:
    token = base64.b64encode(f"{user}:pw".encode()).decode()
    with connect(port, timeout=timeout) as sock:
        sock.sendall(
            f"GET /health/details HTTP/1.1\r\nHost: cepheus\r\nAuthorization: Basic {token}\r\n\r\n".encode()
        )
        return read_reply(sock)


def test_health_answers_while_every_worker_waits_for_a_login(
    port_with: Callable[..., tuple[WebServer, Credentials, Logins]],
) -> None:
    server, _, logins = port_with(ThrottleSettings(max_concurrent_checks=4, check_wait_seconds=30), threads=4)
    replies: list[int] = []
    waiting = [
        threading.Thread(target=lambda i=i: replies.append(login(server.port, f"user{i}", 40)[0]))
        for i in range(4)
    ]
    for thread in waiting:
        thread.start()
    for _ in waiting:  # every worker is inside a password check
        assert logins.inside.acquire(timeout=10)
    with connect(server.port, "127.0.0.9", timeout=5) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: cepheus\r\n\r\n")
        assert read_reply(sock)[::2] == (200, {"status": "ok"})
    logins.release.set()
    for thread in waiting:
        thread.join(15)
    assert replies == [200] * 4


def test_a_login_that_finds_no_free_check_fails_fast_with_503(
    port_with: Callable[..., tuple[WebServer, Credentials, Logins]],
) -> None:
    server, _, logins = port_with(ThrottleSettings(max_concurrent_checks=1, check_wait_seconds=0.2))
    holder = threading.Thread(target=login, args=(server.port, "first", 40))
    holder.start()
    assert logins.inside.acquire(timeout=10)  # the only check is taken
    status, headers, body = login(server.port, "second", timeout=10)
    assert (status, body) == (503, {"error": "too many logins at once; try again shortly"})
    assert headers["Retry-After"] == "1"
    logins.release.set()
    holder.join(15)


# ---- 3. refusals are read, not reset --------------------------------------------------------------


@pytest.mark.parametrize("where", ["at accept", "after the headers"])
def test_a_refused_client_reads_the_reply_even_with_its_body_unread(
    port_with: Callable[..., tuple[WebServer, Credentials, Logins]], where: str
) -> None:
    server, _, _ = port_with(max_connections_per_address=1)
    body = b"[" + b"1," * 100_000 + b"1]"
    with ExitStack() as stack:
        if where == "at accept":
            stack.enter_context(connect(server.port))  # the address's only connection
            head, expected = post_head("/echo", len(body)), 429
        else:
            head, expected = post_head("/events/orders:1.0.0", len(body)), 401
        for _ in range(20):
            with connect(server.port) as sock:
                sock.sendall(head + body)
                assert read_reply(sock)[0] == expected
                assert ends(sock)


# ---- 4. out of file descriptors --------------------------------------------------------------------

EMFILE_SERVER = textwrap.dedent(
    """
    import logging, os, resource, sys, time
    from app.http.limits import Limits
    from app.http.server import WebServer

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/json")])
        return [b'{"status": "ok"}']

    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(128, hard), hard))
    server = WebServer(app, "127.0.0.1", 0, Limits(threads=1))
    server.start()
    hog = []
    try:
        while True:
            hog.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
    print(server.port, flush=True)
    sys.stdin.readline()  # a client has connected: its connection waits in the backlog
    began = time.process_time()
    time.sleep(2)
    print(time.process_time() - began, flush=True)
    for fd in hog:
        os.close(fd)
    sys.stdin.readline()
    server.stop()
    """
)


def test_out_of_file_descriptors_the_port_rests_instead_of_spinning_then_resumes() -> None:
    with subprocess.Popen(
        [sys.executable, "-c", EMFILE_SERVER],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdin is not None and child.stdout is not None and child.stderr is not None
        try:
            _port_rests_then_resumes(child.stdin, child.stdout, child.stderr)
            assert child.wait(20) == 0
        finally:
            child.kill()


def _port_rests_then_resumes(stdin: Any, stdout: Any, stderr: Any) -> None:
    line = stdout.readline()
    assert line, stderr.read()
    with connect(int(line), timeout=20) as sock:
        stdin.write("connected\n")
        stdin.flush()
        cpu = float(stdout.readline())
        assert cpu < 0.5, f"the HTTP thread spun: {cpu:.2f} s of CPU in 2 s"
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: cepheus\r\n\r\n")  # served once fds are free
        assert read_reply(sock)[::2] == (200, {"status": "ok"})
    stdin.write("stop\n")
    stdin.flush()
    pauses = [line for line in stderr.read().splitlines() if "cannot accept" in line]
    assert 1 <= len(pauses) <= 4, pauses
    assert "Too many open files" in pauses[0]
