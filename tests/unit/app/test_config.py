"""`app.config`: the `[http]` limits and `[adapters]` defaults load from the file and the environment and are checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.auth import login_throttle
from app.config import load
from app.node.node import http_limits
from app.node.outputs import with_defaults
from app.registry import OutputAdapter
from engine.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", ["console", "http", "login", "adapters", "spark"])
def test_shipped_config_documents_every_key_of_the_section(name: str) -> None:
    shipped = load(REPO / "conf" / "cepheus.toml", env={})
    assert getattr(shipped, name) == getattr(load(env={}), name)
    text = (REPO / "conf" / "cepheus.toml").read_text(encoding="utf-8")
    section = text.split(f"[{name}]", 1)[1].split("\n[", 1)[0]
    keys = {
        line.split("=")[0].strip()
        for line in section.splitlines()
        if "=" in line and not line.startswith("#")
    }
    assert keys == set(type(getattr(shipped, name)).__dataclass_fields__)


def test_the_login_check_wait_reaches_the_throttle_of_the_node() -> None:
    cfg = load(env={"CEPHEUS__LOGIN__CHECK_WAIT_SECONDS": "0.25"})
    assert login_throttle(cfg.login).settings.check_wait_seconds == 0.25


def test_http_inflight_bytes_reach_the_port_and_must_hold_one_request() -> None:
    cfg = load(env={}, overrides={"http": {"max_inflight_bytes": 5_000_000, "max_request_bytes": 1_000_000}})
    assert http_limits(cfg).max_inflight_bytes == 5_000_000
    with pytest.raises(ConfigError, match=r"^http.max_inflight_bytes \(1000\) must be at least"):
        load(env={}, overrides={"http": {"max_inflight_bytes": 1000}})


def test_http_limits_from_the_environment() -> None:
    cfg = load(
        env={
            "CEPHEUS__HTTP__MAX_CONNECTIONS_PER_ADDRESS": "3",
            "CEPHEUS__HTTP__HEADER_TIMEOUT_SECONDS": "2.5",
        }
    )
    assert (cfg.http.max_connections_per_address, cfg.http.header_timeout_seconds) == (3, 2.5)


@pytest.mark.parametrize("key", ["threads", "max_json_depth", "idle_timeout_seconds", "max_connections"])
def test_http_limit_must_be_positive(key: str) -> None:
    with pytest.raises(ConfigError, match=f"^http.{key} must be positive$"):
        load(env={}, overrides={"http": {key: 0}})


def test_a_cluster_needs_a_secret_and_on_several_hosts_an_advertised_address() -> None:
    secret = "s" * 16
    with pytest.raises(ConfigError, match="cluster.secret must be set"):
        load(None, env={}, overrides={"cluster": {"wka": ["127.0.0.1:4000"]}})
    with pytest.raises(ConfigError, match="cluster.advertise must say where"):
        load(
            None, env={}, overrides={"cluster": {"wka": ["10.0.0.1:4000", "10.0.0.2:4000"], "secret": secret}}
        )
    cfg = load(
        None,
        env={},
        overrides={"cluster": {"wka": ["10.0.0.1:4000"], "advertise": "10.0.0.2:4000", "secret": secret}},
    )
    assert cfg.cluster_address == "10.0.0.2:4000"
    local = load(None, env={}, overrides={"cluster": {"wka": ["127.0.0.1:4000"], "secret": secret}})
    assert local.cluster_address == "127.0.0.1:4000"


def test_adapters_linger_reaches_the_adapters_as_their_default_and_is_bounded() -> None:
    cfg = load(env={"CEPHEUS__ADAPTERS__LINGER_MS": "2.5"})
    entry = OutputAdapter(name="out", type="rdbms", config={"datasource": "db", "table": "t"})
    assert with_defaults(entry, cfg.adapters)["linger_ms"] == 2.5
    with pytest.raises(ConfigError, match=r"^adapters.linger_ms must be from 0 to 1000$"):
        load(env={}, overrides={"adapters": {"linger_ms": 1001}})


def test_metrics_are_public_unless_the_console_says_otherwise() -> None:
    assert load(env={}).console.metrics_public is True
    assert load(env={"CEPHEUS__CONSOLE__METRICS_PUBLIC": "false"}).console.metrics_public is False
    with pytest.raises(ConfigError, match=r"console\.metrics_public must be bool"):
        load(env={"CEPHEUS__CONSOLE__METRICS_PUBLIC": "maybe"})
