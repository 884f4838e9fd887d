"""Notifier leases in the registry on SQLite, MariaDB and PostgreSQL: one holder at a time,
decided by the database's clock, an epoch that grows with each new holder, no revision moved."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from app.registry import Registry
from app.registry.leases import RegistryLeases
from ha.ports import LogPosition
from tests.support.databases import isolated_database


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


def test_a_confirmation_after_its_holder_released_the_lease_starts_no_term(registry: Registry) -> None:
    """A notifier hands the plan over (it releases the lease) while a bundle it sequenced still
    waits for its term to be confirmed: that renewal, arriving after the release, must not
    grant it the lease again (it stepped down and would leave the lease unused until it
    expired, the plan without a notifier); nor may it grant a lease that expired."""
    leases = RegistryLeases(registry)
    leases.acquire("pizza", "node-a", ttl_ms=60_000)
    assert leases.release("pizza", "node-a")
    late = leases.acquire("pizza", "node-a", ttl_ms=60_000, require=LogPosition(1, 5))
    assert late.ttl_ms == 0 and late.epoch == 1 and late.required is None
    taken = leases.acquire("pizza", "node-b", ttl_ms=60_000)
    assert (taken.holder, taken.epoch) == ("node-b", 2)
    confirmed = leases.acquire("pizza", "node-b", ttl_ms=60_000, require=LogPosition(2, 3))
    assert (confirmed.holder, confirmed.epoch, confirmed.required) == ("node-b", 2, LogPosition(2, 3))


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


def test_only_a_node_holding_what_the_lease_requires_is_granted_it(registry: Registry) -> None:
    """The holder raises the requirement before it acknowledges a record some member may lack;
    after it dies, a member lacking the record is refused (take-over and expiry alike) and one
    holding it is granted the lease."""
    leases = RegistryLeases(registry)
    assert leases.acquire("pizza", "node-a", ttl_ms=60_000).required is None
    raised = leases.acquire("pizza", "node-a", ttl_ms=60_000, require=LogPosition(1, 40))
    assert raised.required == LogPosition(1, 40)
    lower = leases.acquire("pizza", "node-a", ttl_ms=60_000, require=LogPosition(1, 30))
    assert lower.required == LogPosition(1, 40)  # never lowered
    assert leases.acquire("pizza", "node-a", ttl_ms=60_000).required == LogPosition(1, 40)
    refused = leases.take_over("pizza", "node-c", 60_000, "node-a", 1, held=LogPosition(1, 39))
    assert (refused.holder, refused.epoch) == ("node-a", 1)
    other_term = leases.take_over("pizza", "node-c", 60_000, "node-a", 1, held=LogPosition(0, 900))
    assert other_term.holder == "node-a"  # positions of another term's log count for nothing
    assert leases.take_over("pizza", "node-c", 60_000, "node-a", 1).holder == "node-a"  # holds nothing
    taken = leases.take_over("pizza", "node-b", 60_000, "node-a", 1, held=LogPosition(1, 40))
    assert (taken.holder, taken.epoch, taken.required) == ("node-b", 2, LogPosition(1, 40))


def test_an_expired_lease_goes_only_to_a_node_holding_what_it_requires(registry: Registry) -> None:
    leases = RegistryLeases(registry)
    leases.acquire("pizza", "node-a", ttl_ms=200)
    leases.acquire("pizza", "node-a", ttl_ms=200, require=LogPosition(3, 7))
    time.sleep(0.4)
    assert leases.acquire("pizza", "node-b", ttl_ms=60_000, held=LogPosition(3, 6)).holder == "node-a"
    assert leases.acquire("pizza", "node-b", ttl_ms=60_000, held=LogPosition(2, 70)).holder == "node-a"
    taken = leases.acquire("pizza", "node-b", ttl_ms=60_000, held=LogPosition(4, 1))  # a later term's log
    assert (taken.holder, taken.epoch) == ("node-b", 2)


def test_a_requirement_of_a_later_term_replaces_a_higher_position_of_an_earlier_one(
    registry: Registry,
) -> None:
    """MySQL assigns an UPDATE's columns left to right: the position must not be compared with
    the term just written."""
    leases = RegistryLeases(registry)
    leases.acquire("pizza", "node-a", ttl_ms=60_000, require=LogPosition(2, 500))  # a grant: no effect
    assert leases.acquire(
        "pizza", "node-a", ttl_ms=60_000, require=LogPosition(2, 500)
    ).required == LogPosition(2, 500)
    raised = leases.acquire("pizza", "node-a", ttl_ms=60_000, require=LogPosition(3, 10))
    assert raised.required == LogPosition(3, 10)
    assert leases.all()[0].required == LogPosition(3, 10)
    others = leases.acquire("pizza", "node-b", ttl_ms=60_000, require=LogPosition(9, 9))
    assert others.required == LogPosition(3, 10)  # only the holder's renewal raises it


def test_an_operator_may_drop_what_an_expired_lease_requires(registry: Registry) -> None:
    leases = RegistryLeases(registry)
    leases.acquire("pizza", "node-a", ttl_ms=300)
    leases.acquire("pizza", "node-a", ttl_ms=300, require=LogPosition(2, 9))
    assert leases.accept_loss("pizza") is None  # its holder still notifies
    time.sleep(0.5)
    assert leases.acquire("pizza", "node-b", ttl_ms=60_000, held=LogPosition(2, 8)).holder == "node-a"
    assert leases.accept_loss("pizza") == LogPosition(2, 9)
    assert leases.accept_loss("pizza") is None  # nothing left to drop
    taken = leases.acquire("pizza", "node-b", ttl_ms=60_000, held=LogPosition(2, 8))
    assert (taken.holder, taken.epoch, taken.required) == ("node-b", 2, None)
    assert leases.accept_loss("never") is None


@pytest.fixture(params=["mysql", "postgres"])
def server_registry_url(request: pytest.FixtureRequest) -> Iterator[str]:
    with isolated_database(request.getfixturevalue(f"{request.param}_url")) as url:
        registry = Registry(url)
        registry.migrate()
        registry.close()
        yield url


def test_a_node_frozen_in_the_middle_of_a_lease_request_blocks_no_other_node(
    server_registry_url: str,
) -> None:
    """A holder frozen (SIGSTOP, a paused VM) right after its renewal's UPDATE, before it read
    the row back, must not hold the lease's row lock: once the lease expires another node gets
    it at once. (SQLite serialises writers instead: a frozen writer holds the file's lock.)"""
    frozen = threading.Event()
    thaw = threading.Event()
    registry = Registry(server_registry_url)
    other = Registry(server_registry_url)  # the frozen node's own connections

    def freeze_after_update(conn: object, cursor: object, statement: str, *_: object) -> None:
        if statement.lstrip().upper().startswith("UPDATE") and not frozen.is_set():
            frozen.set()
            thaw.wait(10)

    renewing = threading.Thread(
        target=RegistryLeases(other).acquire, args=("pizza", "node-a", 300), daemon=True
    )
    try:
        RegistryLeases(other).acquire("pizza", "node-a", ttl_ms=300)
        sa.event.listen(other.engine, "after_cursor_execute", freeze_after_update)
        renewing.start()
        assert frozen.wait(5)
        time.sleep(0.4)  # the renewed lease runs out while its holder is still frozen
        started = time.monotonic()
        taken = RegistryLeases(registry).acquire("pizza", "node-b", ttl_ms=300)
        waited = time.monotonic() - started
        assert (taken.holder, taken.epoch) == ("node-b", 2)
        assert waited < 1.0, f"node-b waited {waited:.1f} s for the frozen node's row lock"
    finally:
        thaw.set()
        if renewing.ident is not None:
            renewing.join(5)  # its last read, before the database goes
        other.close()
        registry.close()
