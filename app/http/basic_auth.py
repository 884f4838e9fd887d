"""What every endpoint of the node's HTTP port shares: basic authentication.

Error replies have one shape, `{"error": "..."}` (`adapters.http.replies.json_error`).
`login_refusal` checks the request's basic credentials with `Credentials` (throttled, logged
there) and gives the reply for a refused one: 401 without credentials or with wrong ones (the
messages differ, so a client can tell a missing header from a typo), 429 with `Retry-After`
while the address or the user is locked out, 503 with `Retry-After` when no password check
was free within `login.check_wait_seconds` (the node is busy, not the client at fault). The
client address is the socket's peer: `X-Forwarded-For` and its kin are never trusted.
"""

from __future__ import annotations

import math

from flask import Response, request

from adapters.http.replies import json_error
from app.auth import Credentials, Outcome

CHALLENGE = {"WWW-Authenticate": 'Basic realm="cepheus", charset="UTF-8"'}


def login_refusal(credentials: Credentials, via: str = "http") -> Response | None:
    """None when the request carries valid basic credentials, else the reply to send."""
    auth = request.authorization
    if auth is None or auth.type != "basic" or auth.username is None:
        return json_error(401, "user name and password required (HTTP basic)", CHALLENGE)
    address = request.environ.get("REMOTE_ADDR") or ""
    verdict = credentials.check(auth.username, auth.password or "", address, via)
    if verdict.outcome is Outcome.ACCEPTED:
        return None
    if verdict.outcome in (Outcome.THROTTLED, Outcome.BUSY):
        retry = str(max(1, math.ceil(verdict.retry_after)))
        status = 503 if verdict.outcome is Outcome.BUSY else 429
        return json_error(status, verdict.message, {"Retry-After": retry})
    return json_error(401, verdict.message or "wrong user name or password", CHALLENGE)
