"""`post_json`: a POST to a running node's HTTP port, for the commands that act on a live node.

Basic authentication; the node's reply is JSON. Any refusal raises `NodeRefused` with a
message for the user: the node's own `{"error": ...}` message, or, when the node cannot be
reached, which URL and why. Standard library only (`urllib`).
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

from engine.errors import CEPError

TIMEOUT_SECONDS = 60.0  # a restore compiles the plan and loads the state before it answers


class NodeRefused(CEPError):
    """The node refused the request or could not be reached; the message says which and why,
    `reply` is the node's JSON refusal, if it sent one."""

    def __init__(self, message: str, reply: Any = None) -> None:
        self.reply = reply
        super().__init__(message)


def post_json(base_url: str, path: str, user: str, password: str, body: Any = None) -> Any:
    """POST to `base_url` + `path` (with `body` as JSON, if given); the JSON of a 2xx reply."""
    if not base_url.startswith(("http://", "https://")):
        msg = f"--url {base_url}: give the node's HTTP address, e.g. http://127.0.0.1:9763"
        raise NodeRefused(msg)
    url = base_url.rstrip("/") + path
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    headers = {"Authorization": f"Basic {token}"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as reply:  # noqa: S310 - http(s) checked
            return json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        reply = _reply(exc)
        raise NodeRefused(_refusal(exc, reply), reply) from None
    except urllib.error.URLError as exc:
        reason = (exc.reason.strerror if isinstance(exc.reason, OSError) else None) or exc.reason
        msg = f"cannot reach the node at {base_url} ({reason}); is `cepheus server` running there? (--url)"
        raise NodeRefused(msg) from None
    except (OSError, ValueError) as exc:
        msg = f"{url}: {exc}"
        raise NodeRefused(msg) from None


def _reply(exc: urllib.error.HTTPError) -> Any:
    try:
        return json.loads(exc.read())
    except (OSError, ValueError):
        return None


def _refusal(exc: urllib.error.HTTPError, body: Any) -> str:
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return str(body["error"])
    return f"{exc.url}: HTTP {exc.code} {exc.reason}"
