"""`EpochFence`: the sink database's side of a notifier lease.

A write of plan P by a notifier holding P's lease under epoch E passes `EpochFence(P, E)` as
the adapter's fence. Inside the write transaction, before the rows, it locks P's row in
`cepheus_fence` (`SELECT … FOR UPDATE`; SQLite serialises writers instead) and:
- a stored epoch below E is raised to E: the first write of a new notifier fences off the old
  one, in the same transaction as its rows;
- a stored epoch above E refuses the write (`NotLeader`): a deposed or paused notifier's late
  write is rejected by the database itself, whatever its own clock says;
- equal: the write goes ahead.
Because the row is locked until the transaction ends, a new notifier's first write waits for
an old one's write in flight instead of racing it, and after it commits no write of the old
epoch can commit.

A notifier frozen in the middle of a write (SIGSTOP, a VM paused, a swap storm) would hold
that lock, and block every later notifier, for as long as it stays frozen, then commit rows
it checked under a lease long gone. So a fenced transaction may not sit idle: the database
drops it after `IDLE_LIMIT_S` without a statement (MariaDB `idle_transaction_timeout`,
PostgreSQL `idle_in_transaction_session_timeout`; MySQL and SQLite have no such limit). The
frozen writer's commit then fails, it retries, and its own lease check refuses the retry.

    plan        VARCHAR(200) primary key   (MySQL/MariaDB: utf8mb4_bin)
    epoch       BIGINT

The table is created on first use, on a connection of its own (DDL inside the write's
transaction would commit it on MySQL). Imports `engine.errors` and sibling modules only.
"""

from __future__ import annotations

import threading

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import mysql

from adapters.output.rdbms.delivered import lock_for_writing
from adapters.output.rdbms.schema import quoted
from engine.errors import NotLeader

FENCE_TABLE = "cepheus_fence"
MAX_PLAN = 200
IDLE_LIMIT_S = 1  # a fenced transaction idle this long is dropped by the database (whole seconds)
_IDLE_LIMITED = "cepheus_idle_limited"  # set in a MariaDB connection's info once it has the limit

_ready: set[tuple[str, str | None]] = set()  # (database URL, schema) where the table exists
_ready_lock = threading.Lock()


def fence_table(schema: str | None) -> sa.Table:
    plan_type = sa.String(MAX_PLAN).with_variant(
        mysql.VARCHAR(MAX_PLAN, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb"
    )
    return sa.Table(
        quoted(FENCE_TABLE),
        sa.MetaData(),
        sa.Column(quoted("plan"), plan_type, primary_key=True, autoincrement=False),
        sa.Column(quoted("epoch"), sa.BigInteger, nullable=False, autoincrement=False),
        schema=quoted(schema) if schema else None,
    )


class EpochFence:
    """Fence of plan `plan` for a writer holding its lease under `epoch` (see the module)."""

    def __init__(self, plan: str, epoch: int, schema: str | None = None) -> None:
        if not plan or len(plan) > MAX_PLAN or epoch < 1:
            msg = f"a fence needs a plan name of 1 to {MAX_PLAN} characters and an epoch >= 1"
            raise ValueError(msg)
        self.plan = plan
        self.epoch = epoch
        self.table = fence_table(schema)
        c = self.table.c
        self._read = sa.select(c.epoch).where(c.plan == plan).with_for_update()  # built once
        self._ensured: sa.Engine | None = None  # the engine the table is known to exist in

    def __call__(self, conn: sa.Connection) -> None:
        if conn.engine is not self._ensured:
            self._ensure(conn.engine)
            self._ensured = conn.engine
        limit_idleness(conn)
        t, c = self.table, self.table.c
        lock_for_writing(conn, t)
        stored = conn.execute(self._read).scalar()
        if stored is None:
            try:
                with conn.begin_nested():
                    conn.execute(sa.insert(t).values(plan=self.plan, epoch=self.epoch))
                return
            except sa_exc.IntegrityError:
                stored = conn.execute(self._read).scalar()
        if stored is None or stored == self.epoch:
            return
        if stored > self.epoch:
            msg = (
                f"plan {self.plan}: this node writes under lease epoch {self.epoch}, "
                f"but epoch {stored} has written since: it is no longer the notifier"
            )
            raise NotLeader(msg)
        conn.execute(sa.update(t).where(c.plan == self.plan).values(epoch=self.epoch))

    def _ensure(self, engine: sa.Engine) -> None:
        key = (engine.url.render_as_string(hide_password=False), self.table.schema)
        if key in _ready:
            return
        with _ready_lock:
            if key in _ready:
                return
            try:
                with engine.begin() as ddl:
                    self.table.create(ddl, checkfirst=True)
            except sa_exc.SQLAlchemyError:
                if not sa.inspect(engine).has_table(FENCE_TABLE, schema=self.table.schema):
                    raise  # the database is down or refuses: the adapter retries the write
            _ready.add(key)


def limit_idleness(conn: sa.Connection) -> None:
    """Have the database drop this transaction once it sits `IDLE_LIMIT_S` without a statement
    (see the module): on MariaDB once per connection, on PostgreSQL per transaction."""
    dialect = conn.dialect
    if dialect.name == "postgresql":
        conn.exec_driver_sql(f"SET LOCAL idle_in_transaction_session_timeout = {IDLE_LIMIT_S * 1000}")
    elif dialect.name in ("mysql", "mariadb") and getattr(dialect, "is_mariadb", False):
        info = conn.connection.info
        if not info.get(_IDLE_LIMITED):
            conn.exec_driver_sql(f"SET SESSION idle_transaction_timeout = {IDLE_LIMIT_S}")
            info[_IDLE_LIMITED] = True
