"""`client_key`: IPv4 per address, IPv6 per /64, mapped addresses as IPv4."""

from __future__ import annotations

from adapters.addresses import client_key


def test_ipv4_addresses_are_clients_of_their_own() -> None:
    assert client_key("10.0.0.1") != client_key("10.0.0.2")
    assert client_key("10.0.0.1") == "10.0.0.1"


def test_ipv6_addresses_of_one_slash_64_are_one_client() -> None:
    assert client_key("2001:db8:1:2::1") == client_key("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")


def test_ipv4_mapped_and_odd_addresses() -> None:
    assert client_key("::ffff:10.0.0.1") == "10.0.0.1"
    assert client_key("fe80::1%eth0") == "fe80::/64"
    assert client_key("not an address") == "not an address"
