"""The Flask app of the node's HTTP port: its blueprints, `/health`, and JSON for every error.

`create_web_app` assembles the blueprints (the HTTP event receiver; the management console
adds its own) and `/health`. Every error the app answers is `{"error": "..."}`, never an HTML
page: a 404, 405 or 413 keeps its status and says what was wrong; an unexpected exception is
our bug, logged once with its traceback, and the client gets a 500 without internals.

`/health` is for load balancers and needs no login: `{"status": "ok"}`, or 503
`{"status": "unavailable"}`. `/health/details` needs basic authentication and gives the
node's report (plans, adapters, counts). The app is served by `app.http.server`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from flask import Blueprint, Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException

from adapters.http.replies import json_error
from app.auth import Credentials
from app.http.basic_auth import login_refusal

log = logging.getLogger(__name__)

_MESSAGES = {
    404: "no such resource: {method} {path}",
    405: "{method} is not allowed on {path}",
    413: "the request is larger than the limit",
}


def _http_error(exc: HTTPException) -> Response:
    status = exc.code or 500  # Flask hands routing redirects back without error handlers
    template = _MESSAGES.get(status)
    message = (
        template.format(method=request.method, path=request.path)
        if template
        else (exc.description or exc.name)
    )
    headers = {k: v for k, v in exc.get_headers() if k.lower() not in ("content-type", "content-length")}
    return json_error(status, message, headers)


def _unexpected(exc: Exception) -> Response:
    log.error("http %s %s failed", request.method, request.path, exc_info=exc)
    return json_error(500, "internal error; the node's log has the details")


def create_web_app(
    blueprints: Iterable[Blueprint],
    health: Callable[[], dict[str, Any]],
    credentials: Credentials,
) -> Flask:
    """`health` gives the node's report; its `"status"` is `"ok"` when the node serves."""
    app = Flask("cepheus")
    for bp in blueprints:
        app.register_blueprint(bp)
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected)

    @app.get("/health")
    def health_check() -> Any:
        if health().get("status") == "ok":
            return jsonify(status="ok")
        return jsonify(status="unavailable"), 503

    @app.get("/health/details")
    def health_details() -> Any:
        refusal = login_refusal(credentials)
        if refusal is not None:
            return refusal
        report = health()
        return jsonify(report), 200 if report.get("status") == "ok" else 503

    return app
