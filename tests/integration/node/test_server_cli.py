"""`cepheus server` as operators start it: the port offset, and refusals with a message, never a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa

from app.registry import Registry
from app.registry.schema import VERSION_TABLE
from tests.support.nodes import REPO, NodeProcess, free_offset, get_json, toml_config, wait_for


def server(config: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "server", "--config", str(config), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
    )


def test_port_offset_option_moves_every_port(tmp_path: Path) -> None:
    node = NodeProcess(tmp_path, f"sqlite:///{tmp_path / 'registry.db'}")
    offset = free_offset()
    node.sections["node"].pop("port_offset")
    node.config_path.write_text(toml_config(node.sections), encoding="utf-8")
    node.offset = offset  # what --port-offset will make of the WSO2 base ports
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app.cli",
            "server",
            "--config",
            str(node.config_path),
            "--port-offset",
            str(offset),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=REPO,
        text=True,
    )
    node.process = process  # type: ignore[assignment]
    try:
        health = wait_for(lambda: _health(9763 + offset), 30, "the node on the offset console port", 0.2)
        assert health["status"] == "ok"
        for port in (7611 + offset, 7711 + offset):
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                pass
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=60)
    assert process.returncode == 0, out
    assert f"thrift receiver listening on 127.0.0.1:{7611 + offset}" in out


def _health(port: int) -> dict[str, object] | None:
    try:
        return dict(get_json(f"http://127.0.0.1:{port}/health", 1.0))
    except OSError:
        return None


def test_unknown_config_key_is_named(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[thrift]\nprot = 7611\n", encoding="utf-8")
    result = server(config)
    assert result.returncode == 1
    assert "unknown key thrift.prot" in result.stderr
    assert "Traceback" not in result.stderr


def test_newer_registry_schema_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    with Registry(url) as registry:
        registry.migrate()
        with registry.engine.begin() as conn:
            conn.execute(sa.text(f"UPDATE {VERSION_TABLE} SET version_num = '0099_from_the_future'"))
    node = NodeProcess(tmp_path, url)
    result = server(node.config_path)
    assert result.returncode == 1
    assert "schema version 0099_from_the_future, newer than this version of Cepheus knows" in result.stderr
    assert "Traceback" not in result.stderr
    with Registry(url) as registry:
        assert registry.schema_version() == "0099_from_the_future"  # untouched


def test_a_port_in_use_is_a_message_and_nothing_stays_running(tmp_path: Path) -> None:
    node = NodeProcess(tmp_path, f"sqlite:///{tmp_path / 'registry.db'}")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", node.thrift_port))
        taken.listen()
        result = server(node.config_path)
    assert result.returncode == 1
    assert f"thrift receiver cannot listen on 127.0.0.1:{node.thrift_port}" in result.stderr
    assert "change thrift.port / thrift.tls_port (or the port offset)" in result.stderr
    assert "Traceback" not in result.stderr
