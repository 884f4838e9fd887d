"""A console app over a real SQLite registry (`create_app` as the node builds it), with users of
both roles and clients for a bearer token, a session and no credentials."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from app.auth import Credentials, LoginThrottle, ThrottleSettings
from app.config import Config, Console
from app.console.services import ConsoleServices
from app.registry import Registry
from app.webapp import create_app

ADMIN_PASSWORD = "admin-password"
VIEWER_PASSWORD = "viewer-password"


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@dataclass
class Console_:
    app: Flask
    registry: Registry
    admin_token: str
    viewer_token: str
    requests: list[tuple[str, Any]] = field(default_factory=list)  # what the node was asked to do

    def client(self) -> FlaskClient:
        return self.app.test_client()

    def admin(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"}

    def viewer(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.viewer_token}"}

    def session(self, user: str = "admin", password: str = ADMIN_PASSWORD) -> tuple[FlaskClient, str]:
        """A client logged in through the login form, and its CSRF token."""
        client = self.client()
        token = csrf_of(client.get("/login").get_data(as_text=True))
        reply = client.post("/login", data={"username": user, "password": password, "csrf_token": token})
        assert reply.status_code == 302, reply.get_data(as_text=True)
        return client, csrf_of(client.get("/").get_data(as_text=True))


def csrf_of(page: str) -> str:
    match = re.search(r'name="csrf-token" content="([^"]+)"', page)
    assert match, page[:500]
    return match.group(1)


@pytest.fixture
def console(tmp_path: Path) -> Iterator[Console_]:
    with console_of(tmp_path) as built:
        yield built


@contextmanager
def console_of(tmp_path: Path, **services: Any) -> Iterator[Console_]:
    """The console app, its `ConsoleServices` given `services` besides the defaults."""
    registry = Registry(f"sqlite:///{tmp_path / 'registry.db'}")
    registry.migrate()
    registry.ensure_admin(ADMIN_PASSWORD)
    registry.put_user("victor", VIEWER_PASSWORD, "viewer")
    _, admin_token = registry.create_token("admin", "tests")
    _, viewer_token = registry.create_token("victor", "tests")
    credentials = Credentials(
        registry.verify_user,
        throttle=LoginThrottle(ThrottleSettings(max_failures=3, lockout_seconds=30, max_lockout_seconds=60)),
    )
    holder: list[Console_] = []

    def send(stream_id: str, body: Any) -> int:
        holder[0].requests.append(("events", (stream_id, body)))
        if stream_id != "in:1.0.0":
            msg = f"stream {stream_id} is not defined"
            raise LookupError(msg)
        return len(body)

    services = ConsoleServices(
        registry=registry,
        credentials=credentials,
        node_id="node-t",
        health=lambda: {"status": "ok", "node": "node-t", "received": 0, "plans": {}, "adapters": {}},
        send_events=send,
        restart=lambda: holder[0].requests.append(("restart", None)),
        shutdown=lambda: holder[0].requests.append(("shutdown", None)),
        **services,
    )
    app = create_app(Config(console=Console(secure_cookies=False)), services)
    app.config["TESTING"] = True
    holder.append(Console_(app, registry, admin_token, viewer_token))
    try:
        yield holder[0]
    finally:
        registry.close()
