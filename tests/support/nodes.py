"""Real Cepheus nodes for tests: in this process (`running_node`) or as `cepheus server` processes
(`NodeProcess`), on free ports of 127.0.0.1."""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from app import config as app_config
from app.config import Config
from app.declarative import apply_file
from app.node import Node
from app.registry import Registry

ADMIN_PASSWORD = "test-admin-pw"
REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_GIVEN_OFFSETS: set[int] = set()


def free_offset(bases: tuple[int, ...] = (9763, 7611, 7711, 4000)) -> int:
    """A port offset under which every WSO2 base port is free on 127.0.0.1 (each offset once).
    Tried in a random order: test runs in other processes look for offsets at the same time,
    and a node binds its ports a while after its offset was found free."""
    offsets = list(range(200, 2000, 7))
    random.shuffle(offsets)
    for offset in offsets:
        if offset in _GIVEN_OFFSETS:
            continue
        try:
            with ExitStack() as stack:
                for base in bases:
                    s = stack.enter_context(socket.socket())
                    s.bind(("127.0.0.1", base + offset))
            _GIVEN_OFFSETS.add(offset)
            return offset
        except OSError:
            continue
    msg = "no free port offset"
    raise RuntimeError(msg)


def node_sections(tmp: Path, registry_url: str) -> dict[str, dict[str, Any]]:
    """Configuration for a test node: its own data dir, free ports, a fast registry poll."""
    return {
        "node": {"data_dir": str(tmp / "var"), "id": f"test-{tmp.name}"},
        "registry": {"url": registry_url, "poll_seconds": 0.2},
        "console": {"host": "127.0.0.1", "port": free_port()},
        "thrift": {"host": "127.0.0.1", "port": free_port(), "tls_port": free_port()},
        "adapters": {"retry_initial_ms": 50, "retry_max_ms": 500, "stop_timeout_seconds": 10.0},
    }


def node_config(tmp: Path, registry_url: str, **overrides: Mapping[str, Any]) -> Config:
    sections = node_sections(tmp, registry_url)
    for name, values in overrides.items():
        sections.setdefault(name, {}).update(values)
    return app_config.load(None, env={}, overrides=sections)


def provision(registry_url: str, document: str, tmp: Path, files: Mapping[str, str] | None = None) -> None:
    """Apply a declarative TOML document (and files it refers to, such as plans) to the registry."""
    for name, text in (files or {}).items():
        (tmp / name).write_text(text, encoding="utf-8")
    path = tmp / "apply.toml"
    path.write_text(document, encoding="utf-8")
    with Registry(registry_url) as registry:
        registry.migrate()
        apply_file(registry, path)


@contextmanager
def running_node(config: Config) -> Iterator[Node]:
    node = Node(config, admin_password=ADMIN_PASSWORD)
    node.start()
    try:
        yield node
    finally:
        node.stop()


def get_json(url: str, timeout: float = 5.0, password: str | None = None) -> Any:
    """GET `url` as JSON; with `password`, logged in as admin (HTTP basic)."""
    request = urllib.request.Request(url)
    if password is not None:
        token = base64.b64encode(f"admin:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    with urllib.request.urlopen(request, timeout=timeout) as reply:  # noqa: S310 - test URL
        return json.loads(reply.read())


def wait_for(
    condition: Any,
    timeout: float,
    what: str,
    interval: float = 0.05,
    message: Callable[[], object] | None = None,
) -> Any:
    """`condition()` once it is true; on timeout, an assertion naming `what` and, with `message`,
    what `message()` says at that moment (not when the wait began)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            msg = f"timed out after {timeout} s waiting for {what}"
            if message is not None:
                msg += f": {message()}"
            raise AssertionError(msg)
        time.sleep(interval)


def toml_config(sections: Mapping[str, Mapping[str, Any]]) -> str:
    lines = []
    for name, values in sections.items():
        lines.append(f"[{name}]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in values.items()]
    return "\n".join(lines) + "\n"


class NodeProcess:
    """`cepheus server` in a process of its own, on WSO2's ports plus a free offset (so the TLS
    port is the plain one + 100, as Gen-1 clients expect); its log goes to `<tmp>/server.log`."""

    def __init__(
        self, tmp: Path, registry_url: str, host: str = "127.0.0.1", prefix: Sequence[str] = ()
    ) -> None:
        """`host`: the address it serves on; `prefix`: what its command runs under (`ip netns
        exec NS` for a host of its own: `tests.support.hosts`)."""
        self.tmp = tmp
        self.host = host
        self.prefix = list(prefix)
        self.offset = free_offset()
        self.sections = node_sections(tmp, registry_url)
        self.sections["node"]["port_offset"] = self.offset
        for section in ("console", "thrift"):
            self.sections[section] = {"host": host}
        self.config_path = tmp / "cepheus.toml"
        self.config_path.write_text(toml_config(self.sections), encoding="utf-8")
        self.log_path = tmp / "server.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def console_port(self) -> int:
        return 9763 + self.offset

    @property
    def thrift_port(self) -> int:
        return 7611 + self.offset

    @property
    def tls_port(self) -> int:
        return 7711 + self.offset

    @property
    def cluster_port(self) -> int:
        return 4000 + self.offset

    @property
    def certificate(self) -> Path:
        return self.tmp / "var" / "tls" / "cert.pem"

    def cli(self, *args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run `cepheus ARGS --config <this node's config>`; fails the test on a non-zero exit."""
        result = subprocess.run(
            [sys.executable, "-m", "app.cli", *args, "--config", str(self.config_path)],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=120,
            env={**os.environ, **(env or {})},
        )
        if result.returncode != 0:
            msg = f"cepheus {' '.join(args)} exited with {result.returncode}:\n{result.stdout}{result.stderr}"
            raise AssertionError(msg)
        return result

    def start(
        self, timeout: float = 30.0, env: Mapping[str, str] | None = None, args: Sequence[str] = ()
    ) -> None:
        """Start the server; `env` adds variables to its environment (`${VAR}` in the registry),
        `args` options to `cepheus server`."""
        env = {**os.environ, "CEPHEUS_ADMIN_PASSWORD": ADMIN_PASSWORD, **(env or {})}
        with self.log_path.open("ab") as log:  # a restart adds to the log of the runs before
            self.process = subprocess.Popen(
                [
                    *self.prefix,
                    sys.executable,
                    "-m",
                    "app.cli",
                    "server",
                    "--config",
                    str(self.config_path),
                    *args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=REPO,
            )
        wait_for(self._healthy, timeout, f"node {self.tmp.name} to answer /health\n{self.log()}", 0.2)

    def _healthy(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            msg = f"cepheus server exited with {self.process.returncode}:\n{self.log()}"
            raise AssertionError(msg)
        try:
            return bool(get_json(f"http://{self.host}:{self.console_port}/health", 1.0)["status"] == "ok")
        except (OSError, urllib.error.URLError, ValueError):
            return False

    def health(self) -> Any:
        """The node's detailed health report (plans, adapters, counts)."""
        return get_json(f"http://{self.host}:{self.console_port}/health/details", password=ADMIN_PASSWORD)

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM, then wait; returns the exit code."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise

    def kill(self) -> None:
        """SIGKILL, as a crash: no snapshot, no flush, nothing of a graceful stop."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def peak_memory_mib(self) -> float:
        """The server's peak resident memory (VmHWM) so far, in MiB; NaN when it is not running."""
        if self.process is None or self.process.poll() is not None:
            return float("nan")
        for line in Path(f"/proc/{self.process.pid}/status").read_text(encoding="utf-8").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""
