"""`Screen`: which requests are refused from their head alone, and the body budget."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from app.http.screen import Refusal, Screen


@dataclass
class Head:
    command: str = "POST"
    path: str = "/events/orders:1.0.0"
    headers: dict[str, str] = field(default_factory=lambda: {"AUTHORIZATION": "Basic eDp5"})
    content_length: int = 0
    chunked: bool = False
    held: int = 0


def locked(seconds: float | None) -> Screen:
    return Screen(1000, lambda address: seconds if address == "10.0.0.9" else None)


def test_a_post_to_events_without_authorization_is_refused_with_a_challenge() -> None:
    refusal = Screen(1000).head(Head(headers={}), "10.0.0.1")
    assert refusal is not None and refusal.status == 401
    assert dict(refusal.headers)["WWW-Authenticate"].startswith("Basic ")


def test_a_locked_out_address_is_refused_with_retry_after_but_health_is_not() -> None:
    refusal = locked(2.2).head(Head(), "10.0.0.9")
    assert refusal is not None and refusal.status == 429 and dict(refusal.headers)["Retry-After"] == "3"
    assert locked(2.2).head(Head(command="GET", path="/health", headers={}), "10.0.0.9") is None
    assert locked(2.2).head(Head(), "10.0.0.1") is None


def test_bodies_are_held_until_done_and_past_the_budget_refused() -> None:
    screen = Screen(1000)
    first, second = Head(content_length=600), Head(content_length=600)
    assert screen.head(first, "a") is None and screen.budget.held == 600
    refusal = screen.head(second, "b")
    assert refusal is not None and refusal.status == 503 and dict(refusal.headers)["Retry-After"] == "1"
    screen.done(first)
    screen.done(first)  # twice gives back once
    assert screen.budget.held == 0
    assert screen.head(second, "b") is None and screen.budget.held == 600


def test_a_chunked_body_is_charged_as_it_arrives() -> None:
    screen = Screen(1000)
    body = Head(chunked=True)
    assert screen.head(body, "a") is None and screen.budget.held == 0
    assert screen.more(body, 900) is None
    refusal = screen.more(body, 200)
    assert refusal is not None and refusal.status == 503
    assert body.held == 900


def test_a_refusal_is_a_json_reply_that_closes() -> None:
    reply = Refusal(429, "slow down", (("Retry-After", "5"),)).reply()
    head, body = reply.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 429 Too Many Requests"
    assert {"Retry-After: 5", "Connection: close", "Content-Type: application/json"} <= set(lines)
    assert f"Content-Length: {len(body)}" in lines
    assert json.loads(body) == {"error": "slow down"}


def test_the_probes_are_never_refused_to_a_locked_out_address() -> None:
    for path in ("/livez", "/readyz"):
        assert locked(2.2).head(Head(command="GET", path=path, headers={}), "10.0.0.9") is None
    refusal = locked(2.2).head(Head(command="GET", path="/metrics", headers={}), "10.0.0.9")
    assert refusal is not None and refusal.status == 429
