"""`Admission`: per-address and per-port connection budgets, with refusals that say which limit."""

from __future__ import annotations

from adapters.thrift.admission import PER_ADDRESS_KEY, Admission, Refusal


def admission(plain: int = 4, tls: int = 2, per_address: int = 3) -> Admission:
    return Admission(
        {"plain": (plain, "thrift.max_connections"), "tls": (tls, "thrift.max_tls_connections")}, per_address
    )


def test_one_address_cannot_take_a_whole_port() -> None:
    gate = admission()
    assert [gate.admit("plain", "10.0.0.1") for _ in range(3)] == [None] * 3
    refusal = gate.admit("plain", "10.0.0.1")
    assert refusal is not None and refusal.key == "thrift.max_connections_per_address"
    assert "10.0.0.1" in refusal.reason
    assert gate.admit("plain", "10.0.0.2") is None


def test_an_ipv6_client_counts_per_slash_64() -> None:
    gate = admission()
    for i in range(3):
        assert gate.admit("plain", f"2001:db8::{i + 1}") is None
    refusal = gate.admit("plain", "2001:db8::ffff")
    assert refusal is not None and "2001:db8::/64" in refusal.reason


def test_the_per_address_budget_spans_both_ports() -> None:
    gate = admission()  # per address 3; the TLS port has room for 2
    assert [gate.admit(kind, "10.0.0.1") for kind in ("plain", "plain", "tls")] == [None] * 3
    assert gate.admit("tls", "10.0.0.1") == Refusal(
        PER_ADDRESS_KEY,
        "3 connections from 10.0.0.1 are open already (thrift.max_connections_per_address); "
        "close idle ones or raise the limit",
    )
    assert (gate.open_count("plain"), gate.open_count("tls")) == (2, 1)  # the refusal took nothing


def test_a_full_plain_port_does_not_lock_out_logins() -> None:
    gate = admission(plain=2, tls=2, per_address=10)
    gate.admit("plain", "10.0.0.1")
    gate.admit("plain", "10.0.0.2")
    refusal = gate.admit("plain", "10.0.0.3")
    assert refusal is not None and refusal.key == "thrift.max_connections"
    assert gate.admit("tls", "10.0.0.3") is None


def test_a_full_login_port_says_so() -> None:
    gate = admission(tls=1)
    gate.admit("tls", "10.0.0.1")
    refusal = gate.admit("tls", "10.0.0.2")
    assert refusal is not None and refusal.key == "thrift.max_tls_connections"
    assert gate.admit("plain", "10.0.0.2") is None


def test_released_connections_free_their_budgets() -> None:
    gate = admission(plain=1, per_address=1)
    assert gate.admit("plain", "10.0.0.1") is None
    assert gate.admit("plain", "10.0.0.1") is not None
    gate.release("plain", "10.0.0.1")
    assert gate.open_count() == 0 and gate.addresses() == 0
    assert gate.admit("plain", "10.0.0.1") is None
