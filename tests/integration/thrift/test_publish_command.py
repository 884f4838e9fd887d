"""`cepheus publish --url` with WSO2's groups, fail-over and load balancing, against real receivers."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from adapters.thrift.server import DataBridgeServer
from app.cli import main
from tests.support.nodes import free_port

from .conftest import PIZZA, PeerFactory

pytestmark = pytest.mark.thrift


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """The pizza stream's definition and 30 of its events."""
    definition = tmp_path / "pizza.json"
    definition.write_text(PIZZA.to_json(), encoding="utf-8")
    events = tmp_path / "orders.jsonl"
    events.write_text("".join(f'[{i}, "customer{i}", 1.5, true]\n' for i in range(30)), encoding="utf-8")
    return definition, events


def urls(*servers: DataBridgeServer | None) -> tuple[list[str], list[str]]:
    """Receiver and authenticator URLs; a port nobody listens on for None."""
    receivers, auths = [], []
    for server in servers:
        port, tls_port = (free_port(),) * 2 if server is None else (server.port, server.tls_port)
        receivers.append(f"tcp://127.0.0.1:{port}")
        auths.append(f"ssl://127.0.0.1:{tls_port}")
    return receivers, auths


def publish(
    files: tuple[Path, Path], certificate: str, url: str, auth_url: str, *args: str
) -> tuple[int, str]:
    definition, events = files
    result = CliRunner().invoke(
        main,
        [
            "publish",
            "--url",
            url,
            "--auth-url",
            auth_url,
            "--password",
            "admin",
            "--ca-file",
            certificate,
            "--stream",
            PIZZA.stream_id,
            "--definition",
            str(definition),
            "--bundle-size",
            "10",
            *args,
            str(events),
        ],
    )
    return result.exit_code, result.output


def test_fail_over_to_the_second_receiver(
    files: tuple[Path, Path], certificate: str, peers: PeerFactory
) -> None:
    alive, handler = peers()
    receivers, auths = urls(None, alive)
    code, output = publish(files, certificate, "|".join(receivers), "|".join(auths))
    assert code == 0, output
    assert [e.payload[0] for e in handler.events if e.payload] == list(range(30))
    assert handler.definition(PIZZA.stream_id) is not None
    assert f"published 30 events of pizzaOrder:1.0.0 from orders.jsonl to {'|'.join(receivers)}" in output
    assert f"  group 1 {'|'.join(receivers)}: 30 delivered ({receivers[0]} 0, {receivers[1]} 30); " in output
    assert f"{receivers[0]} down: cannot open a TLS connection" in output


def test_load_balancing_over_two_receivers(
    files: tuple[Path, Path], certificate: str, peers: PeerFactory
) -> None:
    (first, first_handler), (second, second_handler) = peers(), peers()
    receivers, auths = urls(first, second)
    code, output = publish(files, certificate, ",".join(receivers), ",".join(auths))
    assert code == 0, output
    assert len(first_handler.events) == 20 and len(second_handler.events) == 10
    assert f"30 delivered ({receivers[0]} 20, {receivers[1]} 10)" in output


def test_a_group_down_is_reported_and_not_fatal(
    files: tuple[Path, Path], certificate: str, peers: PeerFactory
) -> None:
    alive, handler = peers()
    receivers, auths = urls(alive, None)
    code, output = publish(
        files,
        certificate,
        ",".join(f"{{{r}}}" for r in receivers),
        ",".join(f"{{{a}}}" for a in auths),
        "--wait",
        "0.2",
    )
    assert code == 0, output
    assert len(handler.events) == 30
    assert f"warning: publisher pizzaOrder:1.0.0#2: {receivers[1]} unavailable (cannot open" in output
    assert f"  group 1 {receivers[0]}: 30 delivered\n" in output
    assert f"  group 2 {receivers[1]}: 0 delivered, 30 pending; {receivers[1]} down: cannot open" in output
    assert "error" not in output


def test_every_group_down_fails_with_each_receiver_named(files: tuple[Path, Path], certificate: str) -> None:
    receivers, auths = urls(None, None)
    code, output = publish(
        files, certificate, ",".join(f"{{{r}}}" for r in receivers), ",".join(f"{{{a}}}" for a in auths)
    )
    assert code == 1
    last = output.splitlines()[-1]
    assert last.startswith("error: no receiver group acknowledged 10 events: ")
    assert f"{receivers[0]}: cannot open" in last and f"{receivers[1]}: cannot open" in last
    assert last.endswith("; 0 events were sent")
    assert "published" not in output and "Traceback" not in output
