"""Notifier leases in the registry on SQLite, MariaDB and PostgreSQL: one holder at a time,
decided by the database's clock, an epoch that grows with each new holder, no revision moved."""

from __future__ import annotations

import threading
import time

from app.registry import Registry
from app.registry.leases import RegistryLeases


def test_the_first_node_gets_the_lease_and_the_second_waits_for_it_to_expire(registry: Registry) -> None:
    leases = RegistryLeases(registry)
    first = leases.acquire("pizza", "node-a", ttl_ms=400)
    assert (first.holder, first.epoch) == ("node-a", 1)
    assert 0 < first.ttl_ms <= 400
    refused = leases.acquire("pizza", "node-b", ttl_ms=400)
    assert (refused.holder, refused.epoch) == ("node-a", 1)  # still node-a's: nothing changed
    renewed = leases.acquire("pizza", "node-a", ttl_ms=400)
    assert (renewed.holder, renewed.epoch) == ("node-a", 1)  # a renewal keeps the epoch
    time.sleep(0.6)
    assert leases.current("pizza").ttl_ms == 0  # type: ignore[union-attr]
    taken = leases.acquire("pizza", "node-b", ttl_ms=400)
    assert (taken.holder, taken.epoch) == ("node-b", 2)
    late = leases.acquire("pizza", "node-a", ttl_ms=400)
    assert (late.holder, late.epoch) == ("node-b", 2)  # node-a woke up too late


def test_a_released_lease_goes_to_the_next_node_at_once_with_a_new_epoch(registry: Registry) -> None:
    leases = RegistryLeases(registry)
    leases.acquire("pizza", "node-a", ttl_ms=60_000)
    assert not leases.release("pizza", "node-b")  # not its lease
    assert leases.release("pizza", "node-a")
    taken = leases.acquire("pizza", "node-b", ttl_ms=60_000)
    assert (taken.holder, taken.epoch) == ("node-b", 2)
    assert leases.current("nothing") is None


def test_nodes_racing_for_a_lease_get_one_holder(registry: Registry) -> None:
    leases = RegistryLeases(registry)
    answers: list[tuple[str, int]] = []
    go = threading.Barrier(6)

    def ask(node: str) -> None:
        go.wait()
        lease = leases.acquire("race", node, ttl_ms=60_000)
        answers.append((lease.holder, lease.epoch))

    threads = [threading.Thread(target=ask, args=(f"node-{n}",)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(answers)) == 1  # every node was told the same holder
    holder, epoch = answers[0]
    assert epoch == 1 and holder.startswith("node-")


def test_leases_move_no_registry_revision(registry: Registry) -> None:
    leases = RegistryLeases(registry)
    before = registry.revision()
    leases.acquire("pizza", "node-a", ttl_ms=1000)
    leases.release("pizza", "node-a")
    assert registry.revision() == before


def test_a_dead_holders_lease_is_taken_over_before_it_expires_once_with_a_new_epoch(
    registry: Registry,
) -> None:
    leases = RegistryLeases(registry)
    leases.acquire("pizza", "node-a", ttl_ms=60_000)
    taken = leases.take_over("pizza", "node-b", 60_000, dead="node-a", epoch=1)
    assert (taken.holder, taken.epoch) == ("node-b", 2)
    again = leases.take_over("pizza", "node-c", 60_000, dead="node-a", epoch=1)  # a stale claim
    assert (again.holder, again.epoch) == ("node-b", 2)
    renewed = leases.acquire("pizza", "node-b", ttl_ms=60_000)
    assert (renewed.holder, renewed.epoch) == ("node-b", 2)
    assert leases.acquire("pizza", "node-a", ttl_ms=60_000).holder == "node-b"  # it came back: too late
    fresh = leases.take_over("never", "node-b", 60_000, dead="node-a", epoch=1)
    assert (fresh.holder, fresh.epoch) == ("node-b", 1)


def test_a_lease_granted_again_to_its_holder_after_it_expired_has_a_new_epoch(registry: Registry) -> None:
    leases = RegistryLeases(registry)
    assert leases.acquire("pizza", "node-a", ttl_ms=200).epoch == 1
    time.sleep(0.4)
    again = leases.acquire("pizza", "node-a", ttl_ms=60_000)
    assert (again.holder, again.epoch) == ("node-a", 2)  # a new term, not a renewal
    assert leases.acquire("pizza", "node-a", ttl_ms=60_000).epoch == 2
