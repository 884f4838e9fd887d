"""`cepheus snapshot take|restore` against the snapshot endpoints served on 127.0.0.1: what is
printed, and `error: ...` with exit 1 for every refusal."""

from __future__ import annotations

import socket
import threading
import urllib.error
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from werkzeug.serving import make_server

from app.cli import main
from tests.support.nodes import free_port
from tests.unit.app.node.test_snapshot_requests import PASSWORD, Node


class Served:
    def __init__(self, node: Node) -> None:
        self.node = node
        self.server = make_server("127.0.0.1", 0, node.app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def run(self, *args: str, password: str = PASSWORD, url: str | None = None) -> Result:
        return CliRunner().invoke(
            main,
            ["snapshot", *args, "--url", url or self.url],
            env={"CEPHEUS_PASSWORD": password},
        )

    def close(self) -> None:
        self.server.shutdown()
        self.thread.join(5)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    node = Node(tmp_path)
    s = Served(node)
    yield s
    s.close()
    node.manager.close()
    node.manager.registry.close()


def test_take_prints_the_new_snapshot_and_its_size(served: Served) -> None:
    served.node.send(1, 2)
    result = served.run("take", "sums")
    assert result.exit_code == 0, result.output
    [meta] = served.node.store.list("sums")
    assert result.stdout == f"snapshot {meta.id} of plan sums taken: {meta.size:,} bytes\n"


def test_restore_prints_what_went_where(served: Served) -> None:
    served.node.send(1, 2)
    served.run("take", "sums")
    [meta] = served.node.store.list("sums")
    served.node.send(10)
    result = served.run("restore", "sums", str(meta.id))
    assert result.exit_code == 0, result.output
    assert result.stdout == f"plan sums restored from snapshot {meta.id}: 2 parts kept\n"


def test_a_refusal_is_the_nodes_message_and_exit_1(served: Served) -> None:
    for args, message in (
        (("take", "nope"), "error: plan 'nope' is not deployed on this node"),
        (("restore", "sums", "99"), "error: plan 'sums' has no snapshot 99"),
    ):
        result = served.run(*args)
        assert result.exit_code == 1
        assert result.stderr.startswith(message)
    wrong = served.run("take", "sums", password="not-the-password")
    assert (wrong.exit_code, wrong.stderr) == (1, "error: wrong user name or password\n")


def test_a_node_that_does_not_answer_is_named_by_its_url(served: Served) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = served.run("take", "sums", url=url)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: cannot reach the node at {url} (Connection refused)")


def test_without_a_password_it_says_how_to_give_one(served: Served) -> None:
    result = CliRunner().invoke(
        main, ["snapshot", "take", "sums", "--url", served.url], env={"CEPHEUS_PASSWORD": None}
    )
    assert result.exit_code == 2
    assert "--password or CEPHEUS_PASSWORD" in result.stderr


def test_a_node_that_does_not_reply_in_time_says_so(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("app.commands.node_client.TIMEOUT_SECONDS", 0.2)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        result = served.run("take", "sums", url=url)
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and "timed out" in result.stderr
    assert "None" not in result.stderr


def test_a_connect_timeout_names_the_url_and_the_reason(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreachable(*_args: object, **_kwargs: object) -> None:
        raise urllib.error.URLError(TimeoutError("timed out"))

    monkeypatch.setattr("urllib.request.urlopen", unreachable)
    result = served.run("take", "sums", url="http://10.255.255.1:9763")
    assert (result.exit_code, result.stderr.splitlines()[0]) == (
        1,
        "error: cannot reach the node at http://10.255.255.1:9763 (timed out); "
        "is `cepheus server` running there? (--url)",
    )
