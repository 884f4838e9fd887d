"""`cepheus publish` against a node in this process, over real Thrift sockets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import main
from app.node import Node
from tests.integration.node.test_node import DOCUMENT, PLAN, rows
from tests.support.nodes import ADMIN_PASSWORD, node_config, provision, running_node, toml_config

DEFINITION = (
    "{'name':'temps','version':'1.0.0','metaData':[{'name':'sensor','type':'STRING'}],"
    "'payloadData':[{'name':'room','type':'STRING'},{'name':'celsius','type':'DOUBLE'}]}"
)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[tuple[Node, Path, Path]]:
    registry_url = f"sqlite:///{tmp_path / 'registry.db'}"
    db = tmp_path / "out.db"
    provision(registry_url, DOCUMENT.format(db=db), tmp_path, {"hot.siddhi": PLAN.format(threshold=30)})
    config = tmp_path / "node.toml"
    config.write_text(toml_config({"registry": {"url": registry_url}}), encoding="utf-8")
    with running_node(node_config(tmp_path, registry_url)) as node:
        yield node, db, config


def certificate(node: Node) -> str:
    return str(node.config.data_dir / "tls" / "cert.pem")


def publish(
    node: Node, *args: str, password: str = ADMIN_PASSWORD, trust: tuple[str, ...] | None = None
) -> tuple[int, str]:
    """`cepheus publish` to the node, trusting its certificate unless `trust` says otherwise."""
    assert node.thrift is not None
    trust = ("--ca-file", certificate(node)) if trust is None else trust
    result = CliRunner().invoke(
        main,
        [
            "publish",
            "--url",
            f"tcp://127.0.0.1:{node.thrift.port}",
            "--auth-url",
            f"ssl://127.0.0.1:{node.thrift.tls_port}",
            "--password",
            password,
            *trust,
            *args,
        ],
    )
    return result.exit_code, result.output


def test_jsonl_with_the_definition_from_the_registry(env: tuple[Node, Path, Path], tmp_path: Path) -> None:
    node, db, config = env
    events = tmp_path / "temps.jsonl"
    events.write_text(
        '["s1", "kitchen", 31.0]\n'
        '{"data": {"meta_sensor": "s2", "room": "hall", "celsius": 12}}\n'
        '{"stream": "other", "data": [1]}\n'
        '{"stream": "temps", "timestamp": 5, "data": ["s3", "attic", 45.5]}\n'
        '{"time": 60000}\n',
        encoding="utf-8",
    )
    code, output = publish(node, "--stream", "temps:1.0.0", "--config", str(config), str(events))
    assert code == 0, output
    assert "published 3 events of temps:1.0.0 from temps.jsonl" in output
    assert node.outputs.flush(10)
    assert rows(db) == [("attic", 45.5), ("kitchen", 31.0)]


def test_csv_with_a_definition_file(env: tuple[Node, Path, Path], tmp_path: Path) -> None:
    node, db, _ = env
    definition = tmp_path / "temps.json"
    definition.write_text(DEFINITION, encoding="utf-8")
    events = tmp_path / "temps.csv"
    events.write_text("meta_sensor,room,celsius\ns1,oven,220\ns2,fridge,4\n", encoding="utf-8")
    code, output = publish(node, "--stream", "temps:1.0.0", "--definition", str(definition), str(events))
    assert code == 0, output
    assert node.outputs.flush(10)
    assert rows(db) == [("oven", 220.0)]


def test_a_bad_line_stops_before_anything_is_sent(env: tuple[Node, Path, Path], tmp_path: Path) -> None:
    node, db, config = env
    events = tmp_path / "bad.jsonl"
    events.write_text('["s1", "kitchen", 31.0]\n["s1", "kitchen", "warm"]\n', encoding="utf-8")
    code, output = publish(node, "--stream", "temps:1.0.0", "--config", str(config), str(events))
    assert code == 1
    assert f"{events}:2: attribute 'celsius': expected double, got string 'warm'" in output
    assert node.ingress.stats().received == {}
    assert "Traceback" not in output


def test_unknown_stream_and_missing_password(env: tuple[Node, Path, Path], tmp_path: Path) -> None:
    node, _, config = env
    events = tmp_path / "e.jsonl"
    events.write_text("[1]\n", encoding="utf-8")
    code, output = publish(node, "--stream", "nope:1.0.0", "--config", str(config), str(events))
    assert (
        code == 1
        and "stream nope:1.0.0 is not in the registry; give its definition with --definition" in output
    )
    result = CliRunner().invoke(
        main,
        ["publish", "--url", "tcp://127.0.0.1:1", "--stream", "x", str(events)],
        env={"CEPHEUS_PASSWORD": None},
    )
    assert result.exit_code == 2 and "--password or CEPHEUS_PASSWORD" in result.output


def test_wrong_password_is_a_message(env: tuple[Node, Path, Path], tmp_path: Path) -> None:
    node, _, config = env
    events = tmp_path / "e.jsonl"
    events.write_text('["s1", "kitchen", 31.0]\n', encoding="utf-8")
    assert node.thrift is not None
    code, output = publish(
        node, "--stream", "temps:1.0.0", "--config", str(config), str(events), password="wrong-password"
    )
    assert code == 1
    assert f"error: no receiver group acknowledged 1 event: tcp://127.0.0.1:{node.thrift.port}: " in output
    assert output.endswith("; 0 events were sent\n")


def test_an_untrusted_certificate_is_refused_unless_trusted_or_insecure(
    env: tuple[Node, Path, Path], tmp_path: Path
) -> None:
    node, db, config = env
    assert node.thrift is not None
    events = tmp_path / "e.jsonl"
    events.write_text('["s1", "kitchen", 31.0]\n', encoding="utf-8")
    args = ("--stream", "temps:1.0.0", "--config", str(config), str(events))

    code, output = publish(node, *args, trust=())
    assert code == 1
    assert output.endswith(
        f"error: no receiver group acknowledged 1 event: tcp://127.0.0.1:{node.thrift.port}: "
        f"the TLS certificate of 127.0.0.1:{node.thrift.tls_port} is not trusted: self-signed certificate; "
        "trust it with --ca-file FILE (for a Cepheus node: its var/tls/cert.pem) or skip the check with --insecure; "
        "0 events were sent\n"
    )
    assert node.ingress.stats().received == {}

    code, output = publish(node, *args)
    assert code == 0, output
    assert "published 1 event of temps:1.0.0 from e.jsonl" in output

    code, output = publish(node, *args, trust=("--insecure",))
    assert code == 0, output
    assert output.startswith("warning: not verifying the server's TLS certificate (--insecure)\n")
    assert node.outputs.flush(10)
    assert rows(db) == [("kitchen", 31.0), ("kitchen", 31.0)]
