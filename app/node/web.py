"""The node's HTTP side on the console port: the Flask app and the thread that serves it.

`create_web_app` assembles the blueprints (the HTTP event receiver, `/health`); the
management console adds its own. `WebServer` runs it on Werkzeug's threaded server and stops
it cleanly.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from flask import Blueprint, Flask, jsonify
from werkzeug.serving import BaseWSGIServer, make_server

log = logging.getLogger(__name__)


def create_web_app(blueprints: Iterable[Blueprint], health: Callable[[], dict[str, Any]]) -> Flask:
    app = Flask("cepheus")
    for bp in blueprints:
        app.register_blueprint(bp)

    @app.get("/health")
    def health_check() -> Any:
        report = health()
        return jsonify(report), 200 if report.get("status") == "ok" else 503

    return app


class WebServer:
    def __init__(self, app: Flask, host: str, port: int) -> None:
        self._server: BaseWSGIServer = make_server(host, port, app, threaded=True)
        # stop() waits for requests in progress: an accepted request is never cut off
        self._server.daemon_threads = False  # type: ignore[attr-defined]
        self._server.block_on_close = True  # type: ignore[attr-defined]
        self.port = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, name="http", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
