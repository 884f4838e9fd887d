"""The node's Flask app: JSON for every error, basic-auth replies, `/health` and its details."""

from __future__ import annotations

import base64
import logging
import threading
from typing import Any, cast

import pytest
from flask import Blueprint, Flask
from flask.testing import FlaskClient

from adapters.http.receiver import Streams, events_blueprint
from app.auth import Credentials, LoginThrottle, ThrottleSettings
from app.http.basic_auth import login_refusal
from app.http.web import create_web_app
from app.node.catalog import StreamCatalog
from app.node.ingress import Ingress
from app.registry import Attribute, StreamDefinition

REPORT = {"status": "ok", "node": "n1", "plans": {"hot": {"state": "running"}}, "adapters": {"t": {}}}


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


ADMIN = basic("admin", "pw")


def make_app(report: dict[str, Any] | None = None, max_failures: int = 5) -> Flask:
    catalog = StreamCatalog(cast(Any, None))
    catalog.replace([StreamDefinition("temps", payload=(Attribute("celsius", "DOUBLE"),))])
    credentials = Credentials(
        lambda user, password: (user, password) == ("admin", "pw"),
        throttle=LoginThrottle(ThrottleSettings(max_failures=max_failures, lockout_seconds=30.0)),
    )
    broken = Blueprint("broken", __name__)

    @broken.get("/broken")
    def fail() -> Any:
        raise RuntimeError("secret internals")

    @broken.get("/folder/")
    def folder() -> Any:
        return {"folder": True}

    events = events_blueprint(
        Streams(catalog.get, Ingress().publish_rows),
        lambda: login_refusal(credentials),
        max_request_bytes=1000,
        max_json_depth=5,
    )
    return create_web_app([events, broken], lambda: report or REPORT, credentials)


@pytest.fixture
def client() -> FlaskClient:
    return make_app().test_client()


def test_unknown_path_is_a_json_404(client: FlaskClient) -> None:
    reply = client.get("/nowhere")
    assert (reply.status_code, reply.json) == (404, {"error": "no such resource: GET /nowhere"})


def test_a_missing_trailing_slash_still_redirects(client: FlaskClient) -> None:
    reply = client.get("/folder")
    assert (reply.status_code, reply.headers["Location"]) == (308, "http://localhost/folder/")


def test_wrong_method_is_a_json_405_naming_it(client: FlaskClient) -> None:
    reply = client.get("/events/temps:1.0.0")
    assert (reply.status_code, reply.json) == (405, {"error": "GET is not allowed on /events/temps:1.0.0"})
    assert "POST" in reply.headers["Allow"].split(", ")


def test_body_over_the_limit_is_a_json_413(client: FlaskClient) -> None:
    reply = client.post("/events/temps:1.0.0", data=b"[" + b"1," * 600 + b"1]", headers=ADMIN)
    assert reply.status_code == 413
    assert reply.json == {"error": "the request has 1203 bytes; the limit is 1000"}


def test_unexpected_exception_is_a_json_500_logged_once_with_traceback(
    client: FlaskClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR):
        reply = client.get("/broken")
    assert (reply.status_code, reply.json) == (
        500,
        {"error": "internal error; the node's log has the details"},
    )
    assert "secret" not in reply.get_data(as_text=True)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert errors[0].getMessage() == "http GET /broken failed"
    assert errors[0].exc_info is not None and "secret internals" in str(errors[0].exc_info[1])


def test_json_nested_deeper_than_the_limit_is_a_400_before_parsing(client: FlaskClient) -> None:
    reply = client.post("/events/temps:1.0.0", data=b"[" * 6 + b"]" * 6, headers=ADMIN)
    assert reply.status_code == 400
    assert reply.json == {
        "error": "the body nests arrays and objects 6 deep; the limit is 5 (http.max_json_depth)"
    }


def test_json_within_the_depth_limit_is_accepted(client: FlaskClient) -> None:
    reply = client.post("/events/temps:1.0.0", json=[{"data": [21.5]}, [22.0]], headers=ADMIN)
    assert (reply.status_code, reply.json) == (200, {"accepted": 2})


def test_missing_credentials_ask_for_them(client: FlaskClient) -> None:
    reply = client.post("/events/temps:1.0.0", json=[[1.0]])
    assert (reply.status_code, reply.json) == (401, {"error": "user name and password required (HTTP basic)"})
    assert reply.headers["WWW-Authenticate"].startswith("Basic ")


def test_wrong_password_says_so(client: FlaskClient) -> None:
    reply = client.post("/events/temps:1.0.0", json=[[1.0]], headers=basic("admin", "guess"))
    assert (reply.status_code, reply.json) == (401, {"error": "wrong user name or password"})


def test_repeated_failures_are_throttled_with_retry_after() -> None:
    client = make_app(max_failures=2).test_client()
    for _ in range(2):
        assert client.post("/events/temps:1.0.0", json=[], headers=basic("admin", "guess")).status_code == 401
    reply = client.post("/events/temps:1.0.0", json=[], headers=ADMIN)  # even the right password waits
    assert reply.status_code == 429
    assert reply.json == {"error": "too many failed logins (address 127.0.0.1); try again in 30 s"}
    assert reply.headers["Retry-After"] == "30"


def test_a_login_that_finds_no_free_check_is_a_503_with_retry_after() -> None:
    inside, release = threading.Event(), threading.Event()

    def verify(user: str, password: str) -> bool:
        inside.set()
        return release.wait(30)

    settings = ThrottleSettings(max_concurrent_checks=1, check_wait_seconds=0.01)
    credentials = Credentials(verify, throttle=LoginThrottle(settings))
    app = create_web_app([], lambda: REPORT, credentials)
    holder = threading.Thread(
        target=app.test_client().get, args=("/health/details",), kwargs={"headers": ADMIN}
    )
    holder.start()
    try:
        assert inside.wait(10)  # the only check is taken
        reply = app.test_client().get("/health/details", headers=basic("other", "pw"))
    finally:
        release.set()
        holder.join(10)
    assert (reply.status_code, reply.json) == (503, {"error": "too many logins at once; try again shortly"})
    assert reply.headers["Retry-After"] == "1"


def test_forwarded_for_header_is_not_the_client_address() -> None:
    client = make_app(max_failures=1).test_client()
    spoofed = {**basic("admin", "guess"), "X-Forwarded-For": "10.9.9.9"}
    assert client.post("/events/temps:1.0.0", json=[], headers=spoofed).status_code == 401
    reply = client.post("/events/temps:1.0.0", json=[], headers={**ADMIN, "X-Forwarded-For": "10.1.1.1"})
    assert reply.json == {"error": "too many failed logins (address 127.0.0.1); try again in 30 s"}


def test_health_without_login_is_only_the_status(client: FlaskClient) -> None:
    reply = client.get("/health")
    assert (reply.status_code, reply.json) == (200, {"status": "ok"})


def test_health_of_a_stopping_node_is_503_unavailable() -> None:
    reply = make_app({"status": "stopping", "plans": {}}).test_client().get("/health")
    assert (reply.status_code, reply.json) == (503, {"status": "unavailable"})


def test_health_details_need_a_login(client: FlaskClient) -> None:
    assert client.get("/health/details").status_code == 401
    assert client.get("/health/details", headers=basic("admin", "guess")).status_code == 401
    reply = client.get("/health/details", headers=ADMIN)
    assert (reply.status_code, reply.json) == (200, REPORT)
