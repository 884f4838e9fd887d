"""The HTTP adapter against a local http.server: batches, auth, retry, rejection, no redirects."""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from adapters.output import AdapterConfigError, HttpAdapter, RecordError, build_adapter
from adapters.output.base import Origin
from engine.events import Event
from engine.types import AttrType
from formatters import build_formatter

FAST = {"retry_initial_ms": 10, "retry_max_ms": 50, "timeout_s": 2}


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Server:
    url: str
    requests: list[Received] = field(default_factory=list)
    # decides the status for each request; default 200
    respond: Callable[[Received], int] = lambda request: 200

    def bodies(self) -> list[Any]:
        return [json.loads(r.body) for r in self.requests if self.respond(r) < 300]


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            request = Received(self.command, self.path, dict(self.headers), self.rfile.read(length))
            status = state.respond(request)
            state.requests.append(request)
            self.send_response(status)
            if 300 <= status < 400:
                self.send_header("Location", "http://127.0.0.1:1/elsewhere")
            body = b"bad record" if status == 400 else b"ok"
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_PUT = do_POST

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/events"
    yield state
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


@pytest.fixture
def adapters() -> Iterator[list[HttpAdapter]]:
    made: list[HttpAdapter] = []
    yield made
    for a in made:
        a.stop(timeout=1)


def make(made: list[HttpAdapter], config: dict[str, Any]) -> HttpAdapter:
    out = build_adapter("http", "hook", {**FAST, **config})
    assert isinstance(out, HttpAdapter)
    made.append(out)
    out.start()
    return out


def test_batches_of_json_records_are_posted_as_a_json_array(
    server: Server, adapters: list[HttpAdapter]
) -> None:
    fmt = build_formatter("json", [("sumOrderId", AttrType.LONG), ("customerName", AttrType.STRING)])
    out = make(adapters, {"url": server.url, "batch_events": 2})
    out.publish(fmt.format([Event(1, (1, "Tom")), Event(2, (2, "John")), Event(3, (3, "Ratha"))]))
    assert out.flush(timeout=5)
    assert server.bodies() == [
        [{"sumOrderId": 1, "customerName": "Tom"}, {"sumOrderId": 2, "customerName": "John"}],
        [{"sumOrderId": 3, "customerName": "Ratha"}],
    ]
    request = server.requests[0]
    assert (request.method, request.path, request.headers["Content-Type"]) == (
        "POST",
        "/events",
        "application/json",
    )


def test_dict_rows_and_wso2_events_are_encoded(server: Server, adapters: list[HttpAdapter]) -> None:
    wso2 = build_formatter(
        "wso2event", [("meta_no", AttrType.STRING), ("n", AttrType.INT)], {"stream_name": "S"}
    )
    out = make(adapters, {"url": server.url})
    out.publish([{"a": 1}, *wso2.format([Event(5, ("x", 2))])])
    assert out.flush(timeout=5)
    assert server.bodies() == [
        [
            {"a": 1},
            {
                "stream_name": "S",
                "stream_version": "1.0.0",
                "timestamp": 5,
                "meta": ["x"],
                "correlation": [],
                "payload": [2],
                "arbitrary": {},
            },
        ]
    ]


def test_basic_auth_and_extra_headers_are_sent(server: Server, adapters: list[HttpAdapter]) -> None:
    out = make(
        adapters,
        {
            "url": server.url,
            "username": "admin",
            "password": "s3cret",
            "headers": {"X-Plan": "pizza"},
            "method": "PUT",
        },
    )
    out.publish(["{}"])
    assert out.flush(timeout=5)
    headers = server.requests[0].headers
    assert headers["Authorization"] == "Basic YWRtaW46czNjcmV0"
    assert headers["X-Plan"] == "pizza"
    assert server.requests[0].method == "PUT"


def test_server_errors_are_retried_with_backoff_until_delivered(
    server: Server, adapters: list[HttpAdapter]
) -> None:
    statuses = iter([503, 503, 429])
    server.respond = lambda request: next(statuses, 200)
    out = make(adapters, {"url": server.url})
    out.publish(['{"n":1}', '{"n":2}'])
    assert out.flush(timeout=5)
    assert len(server.requests) == 4
    assert json.loads(server.requests[-1].body) == [{"n": 1}, {"n": 2}]
    s = out.stats
    assert (s.written, s.errors, s.dropped) == (2, 3, 0)


def test_an_unreachable_server_keeps_records_buffered(adapters: list[HttpAdapter]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = make(adapters, {"url": f"http://127.0.0.1:{port}/x"})
    out.publish(["1", "2", "3"])
    deadline = time.monotonic() + 5
    while out.stats.errors < 2:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert out.stats.pending == 3 and out.stats.written == 0
    assert out.stop(timeout=0.1) is False
    assert out.stats.abandoned == 3


def test_a_client_error_rejects_only_the_bad_records(server: Server, adapters: list[HttpAdapter]) -> None:
    server.respond = lambda request: 400 if b"bad" in request.body else 200
    out = make(adapters, {"url": server.url})
    out.publish(['{"n":1}', '{"n":"bad"}', '{"n":3}'])
    assert out.flush(timeout=5)
    assert server.bodies() == [[{"n": 1}], [{"n": 3}]]
    s = out.stats
    assert (s.written, s.rejected) == (2, 1)


def test_redirects_are_not_followed(server: Server, adapters: list[HttpAdapter]) -> None:
    server.respond = lambda request: 302
    out = make(adapters, {"url": server.url})
    out.publish(["{}"])
    assert out.flush(timeout=5)
    assert len(server.requests) == 1 and out.stats.rejected == 1


def test_lines_body_for_text_records(server: Server, adapters: list[HttpAdapter]) -> None:
    out = make(adapters, {"url": server.url, "body": "lines"})
    out.publish(["Tom ordered 1", "John ordered 2"])
    assert out.flush(timeout=5)
    assert server.requests[0].body == b"Tom ordered 1\nJohn ordered 2\n"
    assert server.requests[0].headers["Content-Type"].startswith("text/plain")


def test_text_that_is_not_json_is_refused_at_publish(adapters: list[HttpAdapter]) -> None:
    out = make(adapters, {"url": "http://127.0.0.1:9/x"})
    with pytest.raises(RecordError, match="record 1 is text but not JSON"):
        out.publish(["{}", "Tom ordered 1"])
    assert out.stats.published == 0


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({}, "url"),
        ({"url": "ftp://example.org/x"}, "url"),
        ({"url": "http:///x"}, "url"),
        ({"url": "http://h/x", "method": "GET"}, "method"),
        ({"url": "http://h/x", "body": "xml"}, "body"),
        ({"url": "http://h/x", "headers": {"Bad Name": "v"}}, "headers.Bad Name"),
        ({"url": "http://h/x", "headers": {"X-A": "v\r\nInjected: 1"}}, "headers.X-A"),
        ({"url": "http://h/x", "password": "p"}, "username"),
        ({"url": "http://h/x", "timeout_s": 0}, "timeout_s"),
        ({"url": "http://h/x", "retry_initial_ms": 500, "retry_max_ms": 100}, "retry_max_ms"),
        ({"url": "http://h/x", "buffer_events": 0}, "buffer_events"),
    ],
)
def test_config_errors_name_the_key(config: dict[str, object], key: str) -> None:
    with pytest.raises(AdapterConfigError) as info:
        build_adapter("http", "hook", config)
    assert info.value.key == key


def test_every_duplicate_carries_the_key_of_its_first_delivery(
    server: Server, adapters: list[HttpAdapter]
) -> None:
    """Replies lost at random (the target took the batch and answered 503), then a second
    member's adapter (a takeover) sends the same outputs again, published in other shapes: a
    record's every delivery carries the key it was first delivered under."""
    rng = random.Random(7)
    server.respond = lambda request: 503 if rng.random() < 0.3 else 200
    fmt = build_formatter("json", [("n", AttrType.LONG)])

    def outputs(out: HttpAdapter, runs: list[tuple[int, int]], per_call: int) -> None:
        """The outputs of input-log records (position, count): `per_call` runs per publish."""
        for start in range(0, len(runs), per_call):
            chunk = runs[start : start + per_call]
            records = fmt.format([Event(1, (p * 100 + i,)) for p, count in chunk for i in range(count)])
            origins = [Origin("plan/Out/json", "log-1", p, i) for p, count in chunk for i in range(count)]
            out.publish(records, origins=origins)

    runs = [(p, rng.randrange(1, 9)) for p in range(1, 40)]
    first = make(adapters, {"url": server.url, "batch_events": 3})
    outputs(first, runs, 1)
    assert first.flush(timeout=20)
    second = make(adapters, {"url": server.url, "batch_events": 3})
    outputs(second, runs[10:], 4)  # the new notifier: from an older trim point, more at a time
    assert second.flush(timeout=20)

    keys: dict[int, str] = {}
    repeated = 0
    for request in server.requests:
        key = request.headers["Idempotency-Key"]
        assert request.headers["Cepheus-From"] == key
        for record in json.loads(request.body):
            repeated += record["n"] in keys
            assert keys.setdefault(record["n"], key) == key, f"record {record['n']} came under another key"
    assert repeated > 0 and len(keys) == sum(count for _, count in runs)
    assert all(
        keys[p * 100 + i] == f"{p}.{i - i % 3}@plan/Out/json|log-1" for p, count in runs for i in range(count)
    )
