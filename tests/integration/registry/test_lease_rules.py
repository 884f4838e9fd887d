"""The registry's SQL lease store follows `ha.lease_table.LeaseTable`, the rules the simulator
runs: the same random requests (acquire with and without a log and a requirement, many
renewals at once, take over, release) get the same answers on SQLite, MariaDB and PostgreSQL as in the table.

Leases last a minute here, so none expires by the clock during a run and the two clocks never
need to agree: a lease ends by `release`, which ends it at the store's "now" on both sides."""

from __future__ import annotations

import random

import pytest

from app.registry import Registry
from app.registry.leases import RegistryLeases
from ha.lease_table import LeaseTable
from ha.ports import Lease, LogPosition

TTL = 60_000
NODES = ("a", "b", "c")
PLANS = ("p", "q", "r")


def log(rng: random.Random) -> LogPosition | None:
    return None if rng.random() < 0.15 else LogPosition(rng.randint(0, 3), rng.randint(0, 6))


def shown(lease: Lease | None) -> tuple[object, ...] | None:
    """A lease as both stores must answer it: its time left only as held or not."""
    return (
        None if lease is None else (lease.plan, lease.holder, lease.epoch, lease.ttl_ms > 0, lease.required)
    )


@pytest.mark.parametrize("seed", range(6))
def test_the_sql_store_answers_every_request_as_the_rules_do(registry: Registry, seed: int) -> None:
    rng = random.Random(seed)
    sql, table = RegistryLeases(registry), LeaseTable()
    now = 1_000_000  # the table's clock: it moves only past what a released lease needs
    for step in range(120):
        plan, node = rng.choice(PLANS), rng.choice(NODES)
        kind = rng.choice(
            (
                "acquire",
                "acquire",
                "renew",
                "renew_many",
                "take_over",
                "release",
                "release_all",
                "current",
                "all",
            )
        )
        if kind == "acquire":
            held = log(rng)
            got, want = sql.acquire(plan, node, TTL, held), table.acquire(plan, node, TTL, now, held)
        elif kind == "renew":
            require = log(rng)
            got = sql.acquire(plan, node, TTL, require=require)
            want = table.acquire(plan, node, TTL, now, require=require)
        elif kind == "renew_many":
            plans = rng.sample(PLANS, rng.randint(0, len(PLANS)))
            got_all, want_all = sql.renew(plans, node, TTL), table.renew(plans, node, TTL, now)
            assert {p: shown(x) for p, x in got_all.items()} == {p: shown(x) for p, x in want_all.items()}, (
                f"step {step}: renew {plans} by {node}"
            )
            continue
        elif kind == "take_over":
            current = table.current(plan, now)
            dead, epoch = (current.holder, current.epoch) if current and rng.random() < 0.7 else ("c", 1)
            held = log(rng)
            got = sql.take_over(plan, node, TTL, dead, epoch, held)
            want = table.take_over(plan, node, TTL, now, dead, epoch, held)
        elif kind == "release":
            got_released, want_released = sql.release(plan, node), table.release(plan, node, now)
            assert got_released == want_released, f"step {step}: release {plan} by {node}"
            now += 1  # the released lease has expired by the next request, on both sides
            continue
        elif kind == "release_all":
            assert sql.release_all(node) == table.release_all(node, now), (
                f"step {step}: release_all by {node}"
            )
            now += 1
            continue
        elif kind == "all":
            assert [shown(x) for x in sql.all()] == [shown(x) for x in table.all(now)], f"step {step}: all"
            continue
        else:
            got, want = sql.current(plan), table.current(plan, now)
        assert shown(got) == shown(want), f"step {step}: {kind} {plan} by {node}"
