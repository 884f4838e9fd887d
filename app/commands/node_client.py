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
    """The node refused the request or could not be reached; the message says which and why."""


def post_json(base_url: str, path: str, user: str, password: str) -> Any:
    """POST to `base_url` + `path` with no body; the JSON of a 2xx reply."""
    if not base_url.startswith(("http://", "https://")):
        msg = f"--url {base_url}: give the node's HTTP address, e.g. http://127.0.0.1:9763"
        raise NodeRefused(msg)
    url = base_url.rstrip("/") + path
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    request = urllib.request.Request(url, method="POST", headers={"Authorization": f"Basic {token}"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as reply:  # noqa: S310 - http(s) checked
            return json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        raise NodeRefused(_refusal(exc)) from None
    except urllib.error.URLError as exc:
        reason = (exc.reason.strerror if isinstance(exc.reason, OSError) else None) or exc.reason
        msg = f"cannot reach the node at {base_url} ({reason}); is `cepheus server` running there? (--url)"
        raise NodeRefused(msg) from None
    except (OSError, ValueError) as exc:
        msg = f"{url}: {exc}"
        raise NodeRefused(msg) from None


def _refusal(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read())
    except (OSError, ValueError):
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return str(body["error"])
    return f"{exc.url}: HTTP {exc.code} {exc.reason}"
