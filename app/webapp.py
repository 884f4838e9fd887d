"""`create_app(config, services)`: the one Flask app of a node's HTTP port.

It serves the node's own endpoints (`/health`, the HTTP event receiver, snapshots on request:
`app.http.web`), the management console's pages at `/` (login at `/login`), its JSON API under
`/api/v1/` with its OpenAPI document, and `/metrics`, `/livez`, `/readyz`. The node serves it
in-process on its console port (`app.http.server`).

`web_tier()` is the same console without a node, for a separate web tier (`conf/gunicorn.conf.py`
runs it under gunicorn): pages and API over the registry (streams, plans, connectors, users,
tokens, the cluster's members and leases), which every node applies as it does `cepheus apply`.
What only a node has is not there: its report (plan states, counts), the simulator and tracer,
snapshots on request, restart and shutdown.
"""

from __future__ import annotations

import os
import socket
from typing import Any

import flask_login  # type: ignore[import-untyped]
from flask import Flask

from app import config as app_config
from app.auth import Credentials, login_throttle
from app.config import Config
from app.console.api import api_blueprint
from app.console.openapi import openapi_blueprint
from app.console.principal import load_session_user
from app.console.security import secure
from app.console.services import ConsoleServices
from app.console.views import views_blueprint
from app.http.web import create_web_app
from app.registry import Registry


def create_app(config: Config, services: ConsoleServices) -> Flask:
    app = create_web_app(services.blueprints, services.health, services.credentials)
    app.config["MAX_CONTENT_LENGTH"] = config.http.max_request_bytes  # also where no guard screens bodies
    secret = config.console.secret_key or services.registry.shared_secret("console.secret_key")
    secure(
        app,
        secret,
        secure_cookies=config.console.secure_cookies,
        session_minutes=config.console.session_minutes,
    )
    logins = flask_login.LoginManager(app)
    logins.session_protection = "strong"
    logins.user_loader(load_session_user(services.registry))
    app.register_blueprint(api_blueprint(services))
    app.register_blueprint(openapi_blueprint())
    app.register_blueprint(views_blueprint(services))
    return app


def web_tier(config_path: str | None = None) -> Flask:
    """The console of the registry named by `config_path` (default: `$CEPHEUS_CONFIG`, else the
    configuration `cepheus server` would read), served without a node."""
    cfg = app_config.load(config_path or os.environ.get("CEPHEUS_CONFIG") or None)
    registry = Registry(cfg.registry.url)
    registry.check_schema()
    name = f"web tier on {socket.gethostname()}"

    def report() -> dict[str, Any]:
        return {"status": "ok", "node": name, "received": {}, "emitted": {}, "plans": {}, "adapters": {}}

    credentials = Credentials(registry.verify_user, throttle=login_throttle(cfg.login))
    return create_app(cfg, ConsoleServices(registry, credentials, name, report))
