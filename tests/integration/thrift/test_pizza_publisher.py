"""`scripts/pizza_shop_publisher.py --url` with WSO2's groups, against real receivers (the
sample's timeline skipped: every event is sent at once)."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

import pytest

from tests.support.nodes import REPO, free_port

from .conftest import PeerFactory

pytestmark = pytest.mark.thrift


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(REPO / "scripts"))
    sys.modules.pop("pizza_shop_publisher", None)
    module = importlib.import_module("pizza_shop_publisher")
    monkeypatch.setattr(module, "wait_until", lambda start, offset_ms: None)
    return module


def test_two_groups_one_failing_over_both_get_every_event(
    script: ModuleType, certificate: str, peers: PeerFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    (first, first_handler), (second, second_handler) = peers(), peers()
    dead = free_port()
    url = f"{{tcp://127.0.0.1:{dead}|tcp://127.0.0.1:{first.port}}},{{tcp://127.0.0.1:{second.port}}}"
    auth = (
        f"{{ssl://127.0.0.1:{dead}|ssl://127.0.0.1:{first.tls_port}}},{{ssl://127.0.0.1:{second.tls_port}}}"
    )
    code = script.main(["--url", url, "--auth-url", auth, "--password", "admin", "--ca-file", certificate])
    out = capsys.readouterr().out
    assert code == 0, out
    for handler in (first_handler, second_handler):
        assert [e.stream_id for e in handler.events] == ["orderStream:1.0.0"] * 5 + [
            "deliveryStream:1.0.0"
        ] * 5
        assert handler.events[5].meta == ("Delivery1",)
    assert f"defined orderStream:1.0.0 at tcp://127.0.0.1:{first.port}" in out
    assert f"defined deliveryStream:1.0.0 at tcp://127.0.0.1:{second.port}" in out
    assert "  deliveryStream group 2 tcp://127.0.0.1:" in out and "done: 10 events" in out


def test_a_group_down_is_reported_and_not_fatal(
    script: ModuleType, certificate: str, peers: PeerFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    alive, handler = peers()
    dead = free_port()
    url = f"{{tcp://127.0.0.1:{alive.port}}},{{tcp://127.0.0.1:{dead}}}"
    auth = f"{{ssl://127.0.0.1:{alive.tls_port}}},{{ssl://127.0.0.1:{dead}}}"
    args = [
        "--url",
        url,
        "--auth-url",
        auth,
        "--password",
        "admin",
        "--ca-file",
        certificate,
        "--wait",
        "0.1",
    ]
    code = script.main(args)
    out = capsys.readouterr().out
    assert code == 0, out
    assert len(handler.events) == 10
    assert f"  orderStream group 2 tcp://127.0.0.1:{dead}: 0 delivered, 5 pending; " in out


def test_no_receiver_is_an_error(
    script: ModuleType, certificate: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dead = free_port()
    url, auth = f"tcp://127.0.0.1:{dead}", f"ssl://127.0.0.1:{dead}"
    code = script.main(["--url", url, "--auth-url", auth, "--password", "admin", "--ca-file", certificate])
    err = capsys.readouterr().err
    assert code == 1
    assert f"error: no receiver group acknowledged 1 event: tcp://127.0.0.1:{dead}: cannot open" in err


def test_a_bad_url_is_refused_with_the_endpoint_message(
    script: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        script.main(["--url", "tcp://a:1|tcp://b:2,tcp://c:3", "--password", "admin"])
    assert (
        "receiverURL 'tcp://a:1|tcp://b:2,tcp://c:3' mixes ',' (load balance) and '|'"
        in capsys.readouterr().err
    )
