"""`Registry`: the node's handle on the shared registry database (connections, transactions, schema).

Every method runs in its own transaction; `transaction()` groups several writes into one
(all or nothing, one revision). Reads see committed data only. Imports the registry's store,
migrations and values.
"""

from __future__ import annotations

import logging
import random
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from app.private_files import private_dir, private_file
from app.registry import migrate, schema
from app.registry.crud import Crud
from app.registry.operations import Store
from app.registry.store import Change
from app.registry.users import verify_password

log = logging.getLogger(__name__)

SQLITE_BUSY_SECONDS = 60  # how long an SQLite connection waits for another one's lock
POOL_SIZE = 12  # connections a node keeps open to a server registry


def create_engine(url: str) -> sa.Engine:
    """An engine for a registry URL; SQLite gets real transactions, foreign keys, WAL and a busy timeout.

    `sqlite://` (in memory) shares one connection: for tests, not for concurrent use.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        # a cluster member's threads (its role loop, a follower per plan joining, the confirmations
        # of acknowledgements) ask at once: connections beyond the pool are opened and closed per
        # request, each a TCP (and TLS) handshake, which at hundreds of plans costs more than the
        # requests themselves
        return sa.create_engine(parsed, pool_pre_ping=True, pool_size=POOL_SIZE, max_overflow=2 * POOL_SIZE)
    database = parsed.database or ""
    in_memory = database in ("", ":memory:")
    if in_memory:
        # one shared connection, or every connection would see a database of its own
        engine = sa.create_engine(
            parsed, poolclass=sa.pool.StaticPool, connect_args={"check_same_thread": False}
        )
    else:
        if not database.startswith("file:"):
            # the registry holds password hashes: a new file is private before SQLite writes to it
            private_dir(Path(database).parent)
            private_file(database)
        engine = sa.create_engine(parsed, connect_args={"timeout": SQLITE_BUSY_SECONDS})

    @sa.event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # let SQLAlchemy, not pysqlite, decide where transactions begin (see `_begin`)
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_SECONDS * 1000}")
        if not in_memory:
            # readers (nodes polling for changes) and one writer do not block each other
            _use_wal(cursor)
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _begin(conn: sa.Connection) -> None:
        # writers take the database's write lock at once: no lock upgrade, no SQLITE_BUSY later
        write = conn.get_execution_options().get("cepheus_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def _use_wal(cursor: sqlite3.Cursor) -> None:
    """Switch the database file to WAL, waiting while other connections do the same.

    The switch needs the file to itself. When nodes open a new database at once, SQLite answers
    all but one with "database is locked" at once, without its busy handler (waiting could
    deadlock): retry until the busy timeout has passed. Once in WAL mode the pragma is a no-op.
    """
    deadline = time.monotonic() + SQLITE_BUSY_SECONDS
    pause = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
        time.sleep(pause * (0.5 + random.random()))
        pause = min(pause * 2, 0.2)


class Registry(Crud):
    """The registry at `url` (SQLAlchemy URL: sqlite, mysql+pymysql, postgresql+psycopg2).

    CRUD per entity comes from `Crud`; see there.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = create_engine(url)

    def __repr__(self) -> str:
        return f"Registry({self.engine.url.render_as_string(hide_password=True)!r})"

    def __enter__(self) -> Registry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.engine.dispose()

    # ---- schema ---------------------------------------------------------------------------

    def migrate(self) -> tuple[str | None, str]:
        """Upgrade the schema to the newest version (safe when nodes start together); (before, after)."""
        return migrate.upgrade(self.engine)

    def check_schema(self) -> None:
        """Raise `SchemaError` unless the schema is exactly this code's (missing, older or newer)."""
        with self.engine.connect() as conn:
            migrate.check(conn)

    def schema_version(self) -> str | None:
        with self.engine.connect() as conn:
            return migrate.current(conn)

    # ---- transactions ---------------------------------------------------------------------

    @contextmanager
    def writing(self) -> Iterator[sa.Connection]:
        """A connection in a write transaction (SQLite: taken with BEGIN IMMEDIATE). Bare:
        what is written through it moves no revision (snapshots, leases)."""
        with self.engine.connect() as conn:
            conn.execution_options(**migrate.WRITE)
            with conn.begin():
                yield conn

    @contextmanager
    def consistent_read(self) -> Iterator[sa.Connection]:
        """A connection in a read transaction that sees one snapshot of the database
        (MySQL/MariaDB and SQLite read one already; PostgreSQL is asked for it)."""
        with self.engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                yield conn

    @contextmanager
    def transaction(self) -> Iterator[Store]:
        """A `Store` whose writes commit together (after their references check out) or not at all."""
        with self.writing() as conn:
            store = Store(conn, writable=True)
            yield store
            store.verify()

    @contextmanager
    def reading(self) -> Iterator[Store]:
        """A read-only `Store` on one connection (one snapshot where the database offers it)."""
        with self.consistent_read() as conn:
            yield Store(conn, writable=False)

    # ---- revisions ------------------------------------------------------------------------

    def revision(self) -> int:
        """The global revision: bumped once by every transaction that changes anything."""
        with self.reading() as store:
            return store.revision()

    def changes_since(self, revision: int) -> list[Change]:
        """The last change of every entity changed after `revision`, oldest first."""
        with self.reading() as store:
            return store.changes_since(revision)

    # ---- users ----------------------------------------------------------------------------

    def verify_user(self, name: str, password: str) -> bool:
        """Whether `password` is `name`'s (in constant time; as slow for unknown users)."""
        with self.reading() as store:
            user = store.get_user(name)
        return verify_password(password, None if user is None else user.password_hash)

    def shared_secret(self, name: str) -> str:
        """A random secret every member shares (made by the first to ask, then kept)."""
        query = sa.select(schema.settings.c.value).where(schema.settings.c.name == name)
        with self.reading() as store:
            value = store.conn.execute(query).scalar()
        if value is not None:
            return str(value)
        try:
            with self.writing() as conn:
                conn.execute(sa.insert(schema.settings).values(name=name, value=secrets.token_urlsafe(48)))
        except sa.exc.IntegrityError:
            pass  # another member made it first
        with self.reading() as store:
            return str(store.conn.execute(query).scalar_one())

    def ensure_admin(self, password_from_env: str | None) -> str | None:
        """On first start (no users) create `admin`.

        The password is `password_from_env` (CEPHEUS_ADMIN_PASSWORD) if given, else a random one,
        which is returned for the caller to show once. Never resets an existing user.
        """
        with self.transaction() as store:
            generated = store.ensure_admin(password_from_env or None)
        if password_from_env and store.touched:
            log.info("created user admin with the password from CEPHEUS_ADMIN_PASSWORD")
        return generated
