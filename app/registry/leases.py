"""`RegistryLeases`: the `LeaseStore` port of `ha.ports` on the registry database.

One row per plan in `cep_leases`: holder, epoch, and when the lease expires in milliseconds on
the *database's* clock (`expires_ms`), so the nodes' clocks never decide who holds a lease.
`acquire` is a conditional UPDATE that succeeds only for the holder or once the lease has
expired (the row lock makes two nodes' requests take turns), else an INSERT for a plan never
leased, else nothing; then a read of the row as it stands. `renew` is one UPDATE of
every plan in a list that the node holds unexpired, and one read of their rows: the role loop
of a member notifying for hundreds of plans renews them all in two round trips. `take_over` is
the same conditional UPDATE on the dead holder and its epoch instead of the expiry. `acquire` and
`take_over` grant the lease to a node that does not hold it only if its log covers the row's `required_term`/`required_position`
(see `ha.ports.LeaseStore`), checked in the same UPDATE. Leases are not registry entities: writing
them moves no revision. Imports the registry's tables and `ha`.

On MySQL/MariaDB and PostgreSQL each of these statements commits on its own: the row lock an
UPDATE takes ends with that statement, on the server. In one transaction a node frozen between
its UPDATE and its COMMIT (SIGSTOP, a paused VM) would hold the row, and so block every other
node's request for the lease, for as long as it stays frozen. Reading the row after the UPDATE
rather than in its transaction is safe: the answer can only be newer, and a lease the reader
was granted but sees taken meanwhile (it was frozen past its expiry) counts as not held.
SQLite serialises writers anyway: there the statements share one transaction.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from adapters.output.rdbms.failures import is_lock_conflict
from app.registry import schema
from ha.lease_table import RELEASED
from ha.ports import Lease, LogPosition

if TYPE_CHECKING:
    from app.registry.registry import Registry

_ATTEMPTS = 3  # of a lease request that lost a deadlock
_PLANS_PER_STATEMENT = 500  # of a bulk renewal: an IN list of bounded length

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

    def acquire(
        self,
        plan: str,
        node: str,
        ttl_ms: int,
        held: LogPosition | None = None,
        require: LogPosition | None = None,
    ) -> Lease:
        _check_ttl(ttl_ms)
        for attempt in range(_ATTEMPTS):
            try:
                return self._acquire(plan, node, ttl_ms, held, require)
            except sa_exc.DBAPIError as exc:
                # nodes asking for a lease never granted insert the row at once: InnoDB may pick
                # one of them as a deadlock victim (its gap locks); asking again settles it
                if attempt == _ATTEMPTS - 1 or not is_lock_conflict(exc):
                    raise
        raise AssertionError  # unreachable: the last attempt returned or raised

    def _acquire(
        self, plan: str, node: str, ttl_ms: int, held: LogPosition | None, require: LogPosition | None
    ) -> Lease:
        t, c = schema.leases, schema.leases.c
        with self._statements() as conn:
            now = now_ms(conn.dialect.name)
            renewal = sa.and_(c.holder == node, c.expires_ms > now)
            raised: list[tuple[Any, Any]] = []
            if require is not None:  # only the holder's renewal raises what takers must hold
                raise_it = sa.and_(renewal, _required_up_to(require, inclusive=False))
                raised = [  # the position first: MySQL would compare it with the new term
                    (c.required_position, sa.case((raise_it, require.position), else_=c.required_position)),
                    (c.required_term, sa.case((raise_it, require.term), else_=c.required_term)),
                ]
            # a confirmation (`require`) only renews: after a release it must not start a term
            grantable = (
                renewal
                if require is not None
                else sa.or_(renewal, sa.and_(c.expires_ms <= now, _covers(held)))
            )
            granted = conn.execute(
                sa.update(t)
                .where(c.plan == plan, grantable)
                .ordered_values(  # MySQL assigns left to right, reading the new values after their SET
                    # the requirement is raised before the holder and expiry change
                    *raised,
                    # a renewal keeps the epoch; any other grant, even of an expired lease to its
                    # last holder, starts a new one (a new term: what it sequenced before may be
                    # lost, so nothing of it may pass for this term's)
                    (c.epoch, sa.case((renewal, c.epoch), else_=c.epoch + 1)),
                    (c.holder, node),
                    (c.expires_ms, now + ttl_ms),
                )
            )
            if granted.rowcount == 0 and self._row(conn, plan) is None:  # never leased
                insert = sa.insert(t).values(plan=plan, holder=node, epoch=1, expires_ms=now + ttl_ms)
                try:
                    if conn.dialect.name == "sqlite":
                        with conn.begin_nested():  # a node inserting it first leaves the transaction usable
                            conn.execute(insert)
                    else:
                        conn.execute(insert)
                except sa_exc.IntegrityError:
                    pass  # another node leased it first: the row says who
            lease = self._row(conn, plan)
        assert lease is not None
        return lease

    def renew(self, plans: Sequence[str], node: str, ttl_ms: int) -> dict[str, Lease]:
        _check_ttl(ttl_ms)
        if not plans:
            return {}
        for attempt in range(_ATTEMPTS):
            try:
                return self._renew(plans, node, ttl_ms)
            except sa_exc.DBAPIError as exc:
                if attempt == _ATTEMPTS - 1 or not is_lock_conflict(exc):
                    raise
        raise AssertionError  # unreachable: the last attempt returned or raised

    def _renew(self, plans: Sequence[str], node: str, ttl_ms: int) -> dict[str, Lease]:
        c = schema.leases.c
        leases: dict[str, Lease] = {}
        with self._statements() as conn:
            now = now_ms(conn.dialect.name)
            for chunk in _chunks(plans, _PLANS_PER_STATEMENT):
                conn.execute(
                    sa.update(schema.leases)
                    .where(c.plan.in_(chunk), c.holder == node, c.expires_ms > now)
                    .values(expires_ms=now + ttl_ms)
                )
                left = c.expires_ms - now
                rows = conn.execute(
                    sa.select(c.plan, c.holder, c.epoch, left, c.required_term, c.required_position).where(
                        c.plan.in_(chunk)
                    )
                ).all()
                leases.update((r[0], _lease(r[0], tuple(r[1:]))) for r in rows)
        return leases

    def take_over(
        self, plan: str, node: str, ttl_ms: int, dead: str, epoch: int, held: LogPosition | None = None
    ) -> Lease:
        _check_ttl(ttl_ms)
        t, c = schema.leases, schema.leases.c
        with self._statements() as conn:
            now = now_ms(conn.dialect.name)
            conn.execute(
                sa.update(t)
                .where(c.plan == plan, c.holder == dead, c.epoch == epoch, c.holder != node, _covers(held))
                .ordered_values((c.epoch, c.epoch + 1), (c.holder, node), (c.expires_ms, now + ttl_ms))
            )
            lease = self._row(conn, plan)
        if lease is None:
            return self.acquire(plan, node, ttl_ms, held)
        return lease

    def release(self, plan: str, node: str) -> bool:
        c = schema.leases.c
        with self._statements() as conn:
            ended = conn.execute(
                sa.update(schema.leases).where(c.plan == plan, c.holder == node).values(expires_ms=RELEASED)
            )
            return ended.rowcount == 1

    def release_all(self, node: str) -> int:
        c = schema.leases.c
        with self._statements() as conn:
            now = now_ms(conn.dialect.name)
            ended = conn.execute(
                sa.update(schema.leases)
                .where(c.holder == node, c.expires_ms > now)
                .values(expires_ms=RELEASED)
            )
            return int(ended.rowcount)

    def accept_loss(self, plan: str) -> LogPosition | None:
        """Drop what an expired lease requires of its next holder (an operator accepting that
        the records its dead holder acknowledged alone are lost); what it required, or None
        when it required nothing or is not expired (its holder still notifies)."""
        c = schema.leases.c
        with self.registry.writing() as conn:
            lease = self._row(conn, plan)
            if lease is None or lease.required is None or lease.ttl_ms > 0:
                return None
            conn.execute(
                sa.update(schema.leases)
                .where(c.plan == plan, c.expires_ms <= now_ms(conn.dialect.name))
                .values(required_term=None, required_position=None)
            )
        return lease.required

    def current(self, plan: str) -> Lease | None:
        with self.registry.engine.connect() as conn:
            return self._row(conn, plan)

    def all(self) -> list[Lease]:
        """Every plan's lease as it stands, by plan."""
        c = schema.leases.c
        with self.registry.engine.connect() as conn:
            left = c.expires_ms - now_ms(conn.dialect.name)
            rows = conn.execute(
                sa.select(c.plan, c.holder, c.epoch, left, c.required_term, c.required_position).order_by(
                    c.plan
                )
            ).all()
        return [_lease(r[0], r[1:]) for r in rows]

    @contextmanager
    def _statements(self) -> Iterator[sa.Connection]:
        """A connection on which each statement commits on its own (SQLite: one write
        transaction); see the module."""
        if self.registry.engine.dialect.name == "sqlite":
            with self.registry.writing() as conn:
                yield conn
            return
        with self.registry.engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT")
            yield conn

    @staticmethod
    def _row(conn: sa.Connection, plan: str) -> Lease | None:
        c = schema.leases.c
        left = c.expires_ms - now_ms(conn.dialect.name)
        row = conn.execute(
            sa.select(c.holder, c.epoch, left, c.required_term, c.required_position).where(c.plan == plan)
        ).first()
        return None if row is None else _lease(plan, tuple(row))


def _lease(plan: str, row: tuple[Any, ...]) -> Lease:
    holder, epoch, left, term, position = row
    required = None if term is None else LogPosition(int(term), int(position))
    return Lease(plan, holder, int(epoch), max(0, int(left)), required)


def _covers(held: LogPosition | None) -> sa.ColumnElement[bool]:
    """The SQL of `held.covers(lease.required)` (`ha.ports.LogPosition`)."""
    c = schema.leases.c
    if held is None:
        return c.required_term.is_(None)
    return _required_up_to(held, inclusive=True)


def _required_up_to(where: LogPosition, *, inclusive: bool) -> sa.ColumnElement[bool]:
    """The row requires nothing, or a position before `where` (or `where` itself if `inclusive`)."""
    c = schema.leases.c
    position = c.required_position <= where.position if inclusive else c.required_position < where.position
    return sa.or_(
        c.required_term.is_(None),
        c.required_term < where.term,
        sa.and_(c.required_term == where.term, position),
    )


def _chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _check_ttl(ttl_ms: int) -> None:
    if ttl_ms <= 0:
        msg = f"a lease lasts a positive time, not {ttl_ms} ms"
        raise ValueError(msg)
