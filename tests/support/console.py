"""Calls to a test node's console API (`/api/v1/`), as admin by basic credentials or with a token."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any

from tests.support.nodes import ADMIN_PASSWORD, NodeProcess


def api(
    node: NodeProcess, method: str, path: str, body: Any = None, token: str | None = None
) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"http://{node.host}:{node.console_port}/api/v1{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    if token is None:
        request.add_header(
            "Authorization", "Basic " + base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()
        )
    else:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:  # noqa: S310 - test URL
            raw = reply.read()
            return reply.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def plan_state(node: NodeProcess, plan: str) -> str | None:
    state = node.health()["plans"].get(plan)
    return None if state is None else str(state["state"])
