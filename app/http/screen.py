"""What the node's HTTP port decides from a request's head alone, before reading its body.

waitress would buffer a whole body (up to `http.max_request_bytes`, in temp files past
512 KB) before the app could refuse it, so a client without credentials could make the
node hold gigabytes. Once the request line and headers are complete, `Screen.head` answers:

- nothing for the probes, `GET /health`, `/livez` and `/readyz` (load balancers, no login);
- 429 with `Retry-After` while the client's address is locked out by the login throttle;
- 401 for `POST /events/...` without an `Authorization` header;
- 503 with `Retry-After` when the body would take the bytes of request bodies held
  node-wide past `max_inflight_bytes` (`BodyBudget`); a body of known length is reserved
  whole, a chunked one is charged as it arrives (`Screen.more`), and both are given back
  when their request is done (`Screen.done`).

A refused request is answered and closed without reading its body (`app.http.drain`).
Owns `Refusal`, `BodyBudget`, `Screen`; imports `app.auth` only for `address_lockout`.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from app.auth import Credentials

log = logging.getLogger(__name__)

Lockout = Callable[[str], float | None]  # a client address -> seconds its lockout has left, or None

CHALLENGE = ("WWW-Authenticate", 'Basic realm="cepheus", charset="UTF-8"')
_REASONS = {401: "Unauthorized", 429: "Too Many Requests", 503: "Service Unavailable"}


@dataclass(frozen=True)
class Refusal:
    """A reply given instead of serving a request: `{"error": message}`, then the connection closes."""

    status: int
    message: str
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def reason(self) -> str:
        return _REASONS.get(self.status, "Error")

    def reply(self) -> bytes:
        body = json.dumps({"error": self.message}).encode()
        head = [f"HTTP/1.1 {self.status} {self.reason}", "Content-Type: application/json"]
        head += [f"{name}: {value}" for name, value in self.headers]
        head += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
        return "\r\n".join(head).encode("latin-1") + body


def retry_after(seconds: float) -> tuple[str, str]:
    return ("Retry-After", str(max(1, math.ceil(seconds))))


class RequestHead(Protocol):
    """What the screen reads of waitress's parsed request (and sets: `held`)."""

    command: str
    path: str
    headers: Mapping[str, str]  # upper case, "-" as "_"
    content_length: int
    chunked: bool
    held: int  # bytes of the body budget this request holds


class BodyBudget:
    """The bytes of request bodies the node holds at once, received or reserved. Thread-safe."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._held = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        with self._lock:
            return self._held

    def take(self, n: int) -> bool:
        """Hold `n` more bytes, or say no: the budget has not that much left."""
        with self._lock:
            if self._held + n > self.limit:
                return False
            self._held += n
            return True

    def give(self, n: int) -> None:
        with self._lock:
            self._held -= n


PROBES = ("/health", "/livez", "/readyz")  # cheap, no login: never locked out, never queued behind logins


def is_health(request: RequestHead) -> bool:
    return request.command in ("GET", "HEAD") and request.path in PROBES


def address_lockout(credentials: Credentials) -> Lockout:
    def lockout(address: str) -> float | None:
        key = f"address {address}"
        locked = credentials.throttle.locked((key,))
        if locked is None:
            return None
        if credentials.throttle.refused_since_lockout(key) == 1:  # once per lockout, as `Credentials`
            log.warning(
                "http request from %s refused before its body: the address is locked out for %.1f s "
                "after repeated failed logins",
                address,
                locked[1],
            )
        return locked[1]

    return lockout


class Screen:
    def __init__(self, max_inflight_bytes: int, lockout: Lockout | None = None) -> None:
        self.budget = BodyBudget(max_inflight_bytes)
        self._lockout = lockout

    def head(self, request: RequestHead, address: str) -> Refusal | None:
        """The refusal of a request whose headers just arrived, else None (its body's bytes then held)."""
        if is_health(request):
            return None
        left = self._lockout(address) if self._lockout is not None else None
        if left is not None:
            return Refusal(
                429,
                f"too many failed logins (address {address}); try again in {max(1, round(left))} s",
                (retry_after(left),),
            )
        if request.command == "POST" and request.path.startswith("/events/"):
            if "AUTHORIZATION" not in request.headers:
                return Refusal(401, "user name and password required (HTTP basic)", (CHALLENGE,))
        if not request.chunked and request.content_length > 0:
            return self.more(request, request.content_length)
        return None

    def more(self, request: RequestHead, n: int) -> Refusal | None:
        """Hold `n` more bytes of `request`'s body, or its refusal: the node holds too many."""
        if n <= 0 or self.budget.take(n):
            request.held += n
            return None
        return Refusal(
            503,
            "the node holds as many bytes of request bodies as it may "
            f"({self.budget.limit}, http.max_inflight_bytes); retry shortly",
            (retry_after(1),),
        )

    def done(self, request: RequestHead) -> None:
        held, request.held = request.held, 0
        if held:
            self.budget.give(held)
