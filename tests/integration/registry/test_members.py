"""Cluster members' own rows, drains and pins in the registry on SQLite, MariaDB and PostgreSQL."""

from __future__ import annotations

import pytest

from app.registry import Registry
from app.registry.members import RegistryMembers


def test_a_member_reports_itself_and_an_operators_drain_survives_its_reports(registry: Registry) -> None:
    members = RegistryMembers(registry)
    assert members.list() == []
    assert not members.drain("node-a")  # never reported: nothing to drain
    assert members.report("node-a", "10.0.0.1:4000", {"node-a": "alive", "node-b": "suspected"}) is False
    members.report("node-b", "10.0.0.2:4000", {"node-b": "alive"})
    assert members.drain("node-a")
    assert members.report("node-a", "10.0.0.9:4000", {"node-a": "alive"}) is True  # the mark stays
    listed = {m.node: m for m in members.list()}
    assert set(listed) == {"node-a", "node-b"}
    a = listed["node-a"]
    assert (a.address, a.draining, a.view) == ("10.0.0.9:4000", True, {"node-a": "alive"})
    assert 0 <= a.age_ms < 60_000
    assert members.draining() == {"node-a"}
    assert members.drain("node-a", False) and members.draining() == set()


def test_pins_are_set_moved_and_removed(registry: Registry) -> None:
    members = RegistryMembers(registry)
    members.pin("pizza", "node-a")
    members.pin("pizza", "node-b")
    members.pin("rooms", "node-a")
    assert members.pins() == {"pizza": "node-b", "rooms": "node-a"}
    assert members.unpin("pizza") and not members.unpin("pizza")
    assert members.pins() == {"rooms": "node-a"}


@pytest.mark.parametrize("draining", [True, False])
def test_members_move_no_registry_revision(registry: Registry, draining: bool) -> None:
    before = registry.revision()
    members = RegistryMembers(registry)
    members.report("node-a", "h:1", {})
    members.drain("node-a", draining)
    members.pin("p", "node-a")
    assert registry.revision() == before
