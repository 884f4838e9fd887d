"""The console as a separate web tier: gunicorn with `conf/gunicorn.conf.py` serves the same app
without a node, on the registry of `$CEPHEUS_CONFIG` (PostgreSQL here); a change made there is in
the registry, from where the nodes deploy it."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from app.registry import Registry
from tests.support.databases import isolated_database
from tests.support.nodes import REPO, free_port, toml_config, wait_for

pytestmark = [pytest.mark.slow]

PASSWORD = "web-tier-password"
GUNICORN = Path(os.environ.get("VIRTUAL_ENV", REPO / ".venv")) / "bin" / "gunicorn"


def call(base: str, method: str, path: str, body: Any = None) -> tuple[int, Any, Any]:
    request = urllib.request.Request(
        base + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            "Authorization": "Basic " + base64.b64encode(f"admin:{PASSWORD}".encode()).decode(),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:  # noqa: S310 - test URL
            raw = reply.read()
            return (
                reply.status,
                reply.headers,
                json.loads(raw) if raw and reply.headers.get_content_type() == "application/json" else raw,
            )
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, json.loads(exc.read() or b"null")
    except OSError:
        return 0, None, None


def test_gunicorn_serves_the_console_of_the_registry(tmp_path: Path, postgres_url: str) -> None:
    with isolated_database(postgres_url, "cep_web") as url:
        registry = Registry(url)
        registry.migrate()
        registry.ensure_admin(PASSWORD)
        config = tmp_path / "cepheus.toml"
        config.write_text(
            toml_config({"registry": {"url": url}, "http": {"max_request_bytes": 4096}}), encoding="utf-8"
        )
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        process = subprocess.Popen(
            [str(GUNICORN), "-c", "conf/gunicorn.conf.py"],
            cwd=REPO,
            env={**os.environ, "CEPHEUS_CONFIG": str(config), "CEPHEUS_WEB_BIND": f"127.0.0.1:{port}"},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for(lambda: call(base, "GET", "/api/v1/")[0] == 200, 30, "gunicorn to answer")
            status, _, body = call(base, "GET", "/api/v1/")
            assert body["user"]["name"] == "admin" and body["node"].startswith("web tier")
            stream = {"name": "orders", "version": "1.0.0", "payload": [{"name": "n", "type": "INT"}]}
            assert call(base, "POST", "/api/v1/streams", stream)[0] == 201
            assert registry.get_stream("orders:1.0.0") is not None  # in the registry, for the nodes
            status, headers, _ = call(base, "GET", "/login")
            assert status == 200 and "frame-ancestors 'none'" in headers["Content-Security-Policy"]
            assert call(base, "POST", "/api/v1/server/restart", {"confirm": True})[0] == 503  # no node here
            assert call(base, "POST", "/api/v1/streams", "x" * 10_000)[0] == 413  # [http] max_request_bytes
        finally:
            process.send_signal(signal.SIGTERM)
            output = process.communicate(timeout=30)[0].decode(errors="replace")
            registry.close()
        assert "Traceback" not in output, output
