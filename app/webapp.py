"""`create_app(config, services)`: the one Flask app of a node's HTTP port.

It serves the node's own endpoints (`/health`, the HTTP event receiver, snapshots on request:
`app.node.web`), the management console's pages at `/` (login at `/login`), its JSON API under
`/api/v1/` with its OpenAPI document, and `/metrics`, `/livez`, `/readyz`. The node serves it
in-process on its console port (`app.node.http_server`); `conf/gunicorn.conf.py` shows how to
serve the same app from a separate web tier.
"""

from __future__ import annotations

import flask_login  # type: ignore[import-untyped]
from flask import Flask

from app.config import Config
from app.console.api import api_blueprint
from app.console.openapi import openapi_blueprint
from app.console.principal import load_session_user
from app.console.security import secure
from app.console.services import ConsoleServices
from app.console.views import views_blueprint
from app.node.web import create_web_app


def create_app(config: Config, services: ConsoleServices) -> Flask:
    app = create_web_app(services.blueprints, services.health, services.credentials)
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
