"""Schema migrations of the registry: Alembic configured from code, under a cross-node lock.

`upgrade(engine)` brings the schema to the newest version this code knows. Several nodes may
start at once: they serialise on a database lock (MySQL/MariaDB `GET_LOCK`, PostgreSQL
`pg_advisory_lock`, SQLite the write lock of a `BEGIN IMMEDIATE` transaction that spans the
whole migration), and whoever comes second finds nothing left to do. `check(conn)` refuses a
schema that is missing, older, or newer than this code. The Alembic scripts live in
`migrations/` inside this package (package data of the wheel, found next to this module).
Imports the registry's tables and errors.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from app.registry.errors import SchemaError
from app.registry.schema import VERSION_TABLE

log = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).resolve().with_name("migrations")
LOCK_NAME = "cepheus.registry.migrate"
LOCK_TIMEOUT_SECONDS = 300
WRITE = {"cepheus_write": True}  # execution option: SQLite begins with BEGIN IMMEDIATE


def alembic_config(connection: sa.Connection | None = None, url: str | None = None) -> Config:
    """An Alembic configuration for `migrations/`, bound to an open connection (or a URL for --sql)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    if url is not None:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    cfg.attributes["connection"] = connection
    return cfg


def script_directory() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


def head() -> str:
    """The newest schema version this code knows."""
    heads = script_directory().get_heads()
    if len(heads) != 1:
        msg = f"the migrations in {MIGRATIONS} have {len(heads)} heads; merge them"
        raise SchemaError(msg)
    return heads[0]


def current(conn: sa.Connection) -> str | None:
    """The schema version the database is at (None: no registry schema yet)."""
    context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
    heads = context.get_current_heads()
    return heads[0] if heads else None


def check(conn: sa.Connection) -> None:
    """Raise `SchemaError` unless the database schema is exactly the one this code expects."""
    where = conn.engine.url.render_as_string(hide_password=True)
    version = current(conn)
    if version is None:
        msg = f"the registry at {where} has no schema yet; run `cepheus db upgrade`"
        raise SchemaError(msg)
    _refuse_unknown(version, where)
    expected = head()
    if version != expected:
        msg = f"the registry at {where} has schema version {version}, this code needs {expected}; run `cepheus db upgrade`"
        raise SchemaError(msg)


def upgrade(engine: sa.Engine) -> tuple[str | None, str]:
    """Migrate to the newest version, holding the migration lock; returns (before, after)."""
    where = engine.url.render_as_string(hide_password=True)
    with engine.connect() as conn, _lock(conn):
        conn.execution_options(**WRITE)
        with conn.begin():
            before = current(conn)
            if before is not None:
                _refuse_unknown(before, where)
            target = head()
            if before != target:
                log.info("registry %s: migrating schema from %s to %s", where, before or "empty", target)
                command.upgrade(alembic_config(conn), "head")
        return before, target


def upgrade_sql(url: str) -> None:
    """Print the SQL that would migrate an empty database at `url` (for a DBA to run)."""
    command.upgrade(alembic_config(url=url), "head", sql=True)


def _refuse_unknown(version: str, where: str) -> None:
    known = {script.revision for script in script_directory().walk_revisions()}
    if version not in known:
        msg = (
            f"the registry at {where} has schema version {version}, newer than this version of "
            "Cepheus knows; run the newer Cepheus (or restore a backup) — refusing to touch it"
        )
        raise SchemaError(msg)


@contextmanager
def _lock(conn: sa.Connection) -> Iterator[None]:
    """Hold the cross-node migration lock on `conn` (a no-op on SQLite; see module docstring)."""
    dialect = conn.dialect.name
    if dialect in ("mysql", "mariadb"):
        name = f"{LOCK_NAME}.{conn.engine.url.database}"[:64]
        got = conn.execute(
            sa.text("SELECT GET_LOCK(:n, :t)"), {"n": name, "t": LOCK_TIMEOUT_SECONDS}
        ).scalar()
        conn.commit()
        if got != 1:
            msg = f"timed out after {LOCK_TIMEOUT_SECONDS}s waiting for another node's registry migration"
            raise SchemaError(msg)
        try:
            yield
        finally:
            conn.execute(sa.text("SELECT RELEASE_LOCK(:n)"), {"n": name})
            conn.commit()
    elif dialect == "postgresql":
        key = zlib.crc32(LOCK_NAME.encode())
        conn.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": key})
        conn.commit()
        try:
            yield
        finally:
            conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": key})
            conn.commit()
    else:
        yield
