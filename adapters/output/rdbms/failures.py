"""Telling "the database is unavailable" (retry later) from "these rows are bad" (reject them).

Drivers disagree on error classes: PyMySQL reports an unknown column as an
OperationalError, SQLite a locked database too. So a database error counts as an outage
when SQLAlchemy saw the connection die, when it is a lock conflict (deadlock, lock wait
timeout, serialization failure, "database is locked"), or when a fresh `SELECT 1` fails
right after it. Integrity and data errors always blame the rows. Imports nothing of ours.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

_MYSQL_LOCK_CODES = {1205, 1213}  # lock wait timeout, deadlock
_PG_RETRY_CODES = {
    "40001",
    "40P01",
    "55P03",
    "57014",
}  # serialization, deadlock, lock not available, cancelled
_SQLITE_LOCK_TEXT = ("database is locked", "database table is locked")


def is_lock_conflict(exc: sa_exc.DBAPIError) -> bool:
    orig = exc.orig
    args = getattr(orig, "args", ())
    if args and isinstance(args[0], int) and args[0] in _MYSQL_LOCK_CODES:
        return True
    if getattr(orig, "pgcode", None) in _PG_RETRY_CODES:
        return True
    text = str(orig).lower()
    return any(t in text for t in _SQLITE_LOCK_TEXT)


def reachable(engine: sa.Engine) -> bool:
    """Whether a new connection can run `SELECT 1` now."""
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    except Exception:
        return False
    return True


def is_outage(exc: BaseException, engine: sa.Engine) -> bool:
    """True when `exc` means the database is unavailable, so the same write should be retried later."""
    if isinstance(exc, (sa_exc.DisconnectionError, sa_exc.TimeoutError, OSError)):
        return True
    if isinstance(exc, sa_exc.DBAPIError):
        if exc.connection_invalidated or is_lock_conflict(exc):
            return True
        if isinstance(exc, (sa_exc.IntegrityError, sa_exc.DataError)):
            return False
        return not reachable(engine)
    if isinstance(exc, sa_exc.StatementError):
        return False  # a value the driver or a type could not bind: the row is at fault
    if isinstance(exc, sa_exc.SQLAlchemyError):
        return not reachable(engine)
    return False


def table_exists(engine: sa.Engine, table: str, schema: str | None) -> bool | None:
    """Whether the table exists; None when the database cannot be asked."""
    try:
        with engine.connect() as conn:
            return sa.inspect(conn).has_table(table, schema=schema)
    except Exception:
        return None
