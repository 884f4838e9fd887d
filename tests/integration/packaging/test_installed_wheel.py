"""The wheel as an operator installs it: built, installed into a clean venv, run from an empty directory.

Proves that what the program reads at run time (Alembic migrations, the Thrift IDL) ships as
package data and is found next to the installed code, not in a checkout.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.integration.node.test_node import DOCUMENT as NODE_DOCUMENT
from tests.integration.node.test_node import PLAN
from tests.support.nodes import REPO, free_offset, get_json, wait_for

PASSWORD = "wheel-admin-pw"
NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv", "var", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis", "*.log"
)

DOCUMENT = NODE_DOCUMENT.format(db="var/out.db")  # the node test's sample, its output relative to the run

EVENTS = '["s1", "kitchen", 31.0]\n["s2", "hall", 12.0]\n["s3", "attic", 45.5]\n'


def _run(args: list[str], cwd: Path, env: Mapping[str, str], timeout: float = 120) -> str:
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{' '.join(args)} exited with {result.returncode}:\n{output}"
    return output


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _healthy(port: int, server: subprocess.Popen[bytes], log: Path) -> bool:
    if server.poll() is not None:
        msg = f"cepheus server exited with {server.returncode}:\n{log.read_text(errors='replace')}"
        raise AssertionError(msg)
    try:
        return get_json(f"http://127.0.0.1:{port}/health", 1.0)["status"] == "ok"
    except (OSError, ValueError):
        return False


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The `bin/` of a clean venv with the wheel installed, and pip's output while building the wheel."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    shutil.copytree(REPO, source, ignore=NOT_SOURCES)  # a build writes build/ and *.egg-info next to it
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(tmp / "dist"), str(source)],
        cwd=tmp,
        env=os.environ,
    )
    (wheel,) = (tmp / "dist").glob("cepheus-*.whl")
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp, env=os.environ)
    _run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", str(wheel)],
        cwd=tmp,
        env=os.environ,
    )
    return venv / "bin", built


@pytest.fixture
def site(tmp_path: Path, installed: tuple[Path, str]) -> tuple[Path, dict[str, str]]:
    """An empty working directory, and an environment in which nothing points at the checkout."""
    bin_dir, _ = installed
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CEPHEUS", "PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    site = tmp_path / "site"
    site.mkdir()
    return site, env


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_building_the_wheel_does_not_warn(installed: tuple[Path, str]) -> None:
    _, built = installed
    assert "Warning" not in built
    assert "deprecated" not in built


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_installed_node_migrates_serves_and_stores_published_events(
    site: tuple[Path, dict[str, str]], installed: tuple[Path, str]
) -> None:
    here, env = site
    cepheus = str(installed[0] / "cepheus")
    imported = _run([str(installed[0] / "python"), "-c", "import app; print(app.__file__)"], here, env)
    assert Path(imported.strip()).is_relative_to(installed[0].parent)

    assert "schema upgraded from (empty) to" in _run([cepheus, "db", "upgrade"], here, env)
    (here / "hot.siddhi").write_text(PLAN.format(threshold=30), encoding="utf-8")
    (here / "apply.toml").write_text(DOCUMENT, encoding="utf-8")
    _run([cepheus, "apply", "apply.toml"], here, env)
    (here / "temps.jsonl").write_text(EVENTS, encoding="utf-8")

    offset = free_offset()
    log = here / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            [cepheus, "server", "--port-offset", str(offset)],
            cwd=here,
            env={**env, "CEPHEUS_ADMIN_PASSWORD": PASSWORD},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for(lambda: _healthy(9763 + offset, server, log), 60, "the installed node's /health", 0.2)
        wait_for(lambda: _listening(7611 + offset) and _listening(7711 + offset), 30, "the thrift ports")
        published = _run(
            [
                cepheus,
                "publish",
                "--url",
                f"tcp://127.0.0.1:{7611 + offset}",
                "--stream",
                "temps:1.0.0",
                "--password",
                PASSWORD,
                "--ca-file",
                "var/tls/cert.pem",
                "temps.jsonl",
            ],
            here,
            env,
        )
        assert "published 3 events of temps:1.0.0" in published
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    output = log.read_text(errors="replace")
    assert server.returncode == 0, output
    assert "Traceback" not in output
    var = here / "var"
    assert stat.S_IMODE(var.stat().st_mode) == 0o700
    for private in ("cepheus.db", "out.db", "tls/key.pem"):
        assert stat.S_IMODE((var / private).stat().st_mode) == 0o600, private
    with sqlite3.connect(var / "out.db") as conn:
        assert sorted(conn.execute("SELECT room, celsius FROM alerts").fetchall()) == [
            ("attic", 45.5),
            ("kitchen", 31.0),
        ]
