"""`RegistryLeases`: the `LeaseStore` port of `ha.ports` on the registry database.

One row per plan in `cep_leases`: holder, epoch, and when the lease expires in milliseconds on
the *database's* clock (`expires_ms`), so the nodes' clocks never decide who holds a lease.
`acquire` is one transaction: a conditional UPDATE that succeeds only for the holder or once
the lease has expired (the row lock makes two nodes' requests take turns), else an INSERT for
a plan never leased, else nothing; then the row as it stands. `take_over` is the same
conditional UPDATE on the dead holder and its epoch instead of the expiry. Leases are not registry
entities: writing them moves no revision. Imports the registry's tables and `ha`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from app.registry import schema
from ha.ports import Lease

if TYPE_CHECKING:
    from app.registry.registry import Registry

_NOW_MS = {
    "mysql": "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)",
    "postgresql": "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
    "sqlite": "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
}


def now_ms(dialect: str) -> sa.ColumnElement[int]:
    """The database's clock in ms since the epoch, as an SQL expression."""
    try:
        return sa.literal_column(_NOW_MS[dialect], sa.BigInteger)
    except KeyError:
        msg = f"leases need MySQL/MariaDB, PostgreSQL or SQLite, not {dialect}"
        raise ValueError(msg) from None


class RegistryLeases:
    """Notifier leases in the registry at `registry` (see `ha.ports.LeaseStore`)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def acquire(self, plan: str, node: str, ttl_ms: int) -> Lease:
        _check_ttl(ttl_ms)
        t, c = schema.leases, schema.leases.c
        with self.registry.writing() as conn:
            now = now_ms(conn.dialect.name)
            granted = conn.execute(
                sa.update(t)
                .where(c.plan == plan, sa.or_(c.holder == node, c.expires_ms <= now))
                .ordered_values(  # MySQL assigns left to right, reading the new holder after its SET
                    # a renewal keeps the epoch; any other grant, even of an expired lease to its
                    # last holder, starts a new one (a new term: what it sequenced before may be
                    # lost, so nothing of it may pass for this term's)
                    (
                        c.epoch,
                        sa.case((sa.and_(c.holder == node, c.expires_ms > now), c.epoch), else_=c.epoch + 1),
                    ),
                    (c.holder, node),
                    (c.expires_ms, now + ttl_ms),
                )
            )
            if granted.rowcount == 0 and self._row(conn, plan) is None:  # never leased
                try:
                    with conn.begin_nested():  # a node inserting it first leaves our transaction usable
                        conn.execute(
                            sa.insert(t).values(plan=plan, holder=node, epoch=1, expires_ms=now + ttl_ms)
                        )
                except sa_exc.IntegrityError:
                    pass  # another node leased it first: the row says who
            lease = self._row(conn, plan)
        assert lease is not None
        return lease

    def take_over(self, plan: str, node: str, ttl_ms: int, dead: str, epoch: int) -> Lease:
        _check_ttl(ttl_ms)
        t, c = schema.leases, schema.leases.c
        with self.registry.writing() as conn:
            now = now_ms(conn.dialect.name)
            conn.execute(
                sa.update(t)
                .where(c.plan == plan, c.holder == dead, c.epoch == epoch, c.holder != node)
                .ordered_values((c.epoch, c.epoch + 1), (c.holder, node), (c.expires_ms, now + ttl_ms))
            )
            lease = self._row(conn, plan)
        if lease is None:
            return self.acquire(plan, node, ttl_ms)
        return lease

    def release(self, plan: str, node: str) -> bool:
        c = schema.leases.c
        with self.registry.writing() as conn:
            ended = conn.execute(
                sa.update(schema.leases)
                .where(c.plan == plan, c.holder == node)
                .values(expires_ms=now_ms(conn.dialect.name))
            )
            return ended.rowcount == 1

    def current(self, plan: str) -> Lease | None:
        with self.registry.engine.connect() as conn:
            return self._row(conn, plan)

    def all(self) -> list[Lease]:
        """Every plan's lease as it stands, by plan."""
        c = schema.leases.c
        with self.registry.engine.connect() as conn:
            left = c.expires_ms - now_ms(conn.dialect.name)
            rows = conn.execute(sa.select(c.plan, c.holder, c.epoch, left).order_by(c.plan)).all()
        return [Lease(r[0], r[1], int(r[2]), max(0, int(r[3]))) for r in rows]

    @staticmethod
    def _row(conn: sa.Connection, plan: str) -> Lease | None:
        c = schema.leases.c
        left = c.expires_ms - now_ms(conn.dialect.name)
        row = conn.execute(sa.select(c.holder, c.epoch, left).where(c.plan == plan)).first()
        return None if row is None else Lease(plan, row[0], int(row[1]), max(0, int(row[2])))


def _check_ttl(ttl_ms: int) -> None:
    if ttl_ms <= 0:
        msg = f"a lease lasts a positive time, not {ttl_ms} ms"
        raise ValueError(msg)
