"""`cepheus server` keeps what it creates to its user: data dir 0700, files 0600, whatever the umask."""

from __future__ import annotations

import base64
import json
import os
import stat
import urllib.request
from pathlib import Path

from tests.integration.node.test_node import DOCUMENT, PLAN, rows
from tests.support.nodes import ADMIN_PASSWORD, NodeProcess, provision, wait_for


def _basic() -> str:
    return base64.b64encode(f"admin:{ADMIN_PASSWORD}".encode()).decode()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_files_the_node_creates_are_private(tmp_path: Path) -> None:
    registry_url = f"sqlite:///{tmp_path / 'registry.db'}"
    output = tmp_path / "out.db"  # made by the RDBMS adapter when it creates its table
    provision(registry_url, DOCUMENT.format(db=output), tmp_path, {"hot.siddhi": PLAN.format(threshold=30)})
    node = NodeProcess(tmp_path, registry_url)
    previous = os.umask(0o022)  # the node's process inherits it
    try:
        node.start()
    finally:
        os.umask(previous)
    try:
        request = urllib.request.Request(
            f"http://127.0.0.1:{node.console_port}/events/temps:1.0.0",
            data=json.dumps([["s1", "kitchen", 31.0]]).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Basic {_basic()}"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            assert reply.status == 200
        # reading before the adapter made the file would create it here, with this process's umask
        wait_for(lambda: output.exists() and rows(output), 20, "the event in the adapter's new SQLite file")
    finally:
        assert node.stop() == 0, node.log()
    data = tmp_path / "var"
    assert {p.relative_to(tmp_path).as_posix(): mode(p) for p in (data, data / "tls")} == {
        "var": 0o700,
        "var/tls": 0o700,
    }
    files = [data / "tls" / "cert.pem", data / "tls" / "key.pem", output, *tmp_path.glob("registry.db*")]
    assert {p.name: mode(p) for p in files} == {p.name: 0o600 for p in files}
