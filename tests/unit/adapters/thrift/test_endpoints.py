"""Receiver and authenticator URL lists of the WSO2 publishers (§1.1, §10)."""

from __future__ import annotations

import pytest

from adapters.thrift.endpoints import Endpoint, ReceiverGroups, Url
from engine.errors import ConfigError


def test_tcp_receiver_logs_in_at_port_plus_100_over_tls() -> None:
    endpoint = Endpoint.of("tcp://h:7611")
    assert endpoint.receiver == Url("tcp", "h", 7611)
    assert endpoint.auth == Url("ssl", "h", 7711)


def test_ssl_receiver_logs_in_at_itself() -> None:
    assert Endpoint.of("ssl://h:7711").auth == Url("ssl", "h", 7711)


def test_comma_load_balances_and_pipe_fails_over() -> None:
    balanced = ReceiverGroups.parse("tcp://a:7611, tcp://b:7611").groups
    assert len(balanced) == 1 and not balanced[0].failover
    assert [str(e.receiver) for e in balanced[0].endpoints] == ["tcp://a:7611", "tcp://b:7611"]
    failover = ReceiverGroups.parse("tcp://a:7611|tcp://b:7611").groups
    assert failover[0].failover and len(failover[0].endpoints) == 2


def test_braces_make_groups_with_matching_authenticators() -> None:
    groups = ReceiverGroups.parse(
        "{tcp://a:1,tcp://b:2},{tcp://c:3|tcp://d:4}", "{ssl://a:11,ssl://b:12},{ssl://c:13|ssl://d:14}"
    ).groups
    assert [g.failover for g in groups] == [False, True]
    assert [str(e.auth) for g in groups for e in g.endpoints] == [
        "ssl://a:11",
        "ssl://b:12",
        "ssl://c:13",
        "ssl://d:14",
    ]


def test_ipv6_hosts_are_understood() -> None:
    assert Endpoint.of("tcp://[::1]:7611").auth == Url("ssl", "::1", 7711)


@pytest.mark.parametrize(
    ("receivers", "auths", "message"),
    [
        ("tcp://a:1,tcp://b:2|tcp://c:3", None, "mixes"),
        ("{tcp://a:1},{tcp://b:2}", "{ssl://a:11}", "same number and grouping"),
        ("http://a:1", None, "not a URL like"),
        ("tcp://a", None, "not a URL like"),
        ("tcp://a:1", "tcp://a:2", "must use ssl://"),
        ("", None, "empty"),
        ("{tcp://a:1}x", None, "groups must be written"),
    ],
)
def test_bad_url_lists_are_configuration_errors(receivers: str, auths: str | None, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ReceiverGroups.parse(receivers, auths)
