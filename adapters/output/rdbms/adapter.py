"""`RdbmsAdapter`: dict rows into a table of MySQL/MariaDB, PostgreSQL or SQLite, through SQLAlchemy.

Owns the connection (a SQLAlchemy engine with pre-ping and driver timeouts), optional
table creation, and one transaction per batch: the HA fence first, then — when records
carry origins — the `cepheus_delivered` marks (see `delivered`: records the table already
has are skipped), then the rows (see `statements`), then COMMIT. Outages are retried by
`BufferedAdapter`; a commit that was interrupted is retried too and counted as in doubt
(in insert mode the records without an origin may then be written twice; the key modes are
idempotent, and records with an origin are skipped if the commit did happen). A missing
table is an outage too (with `create_table` it is created again), so records are not
rejected while someone fixes it; `cepheus_delivered` is created whenever it is missing.
Imports `engine.errors`, `formatters` and sibling modules only.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from adapters.output.base import Fence, Origin, RecordError, Run
from adapters.output.buffered import BufferedAdapter, FenceRaised, Refused, RetryLater
from adapters.output.rdbms.delivered import (
    DELIVERED_TABLE,
    MarkRace,
    claim_marks,
    delivered_table,
    keep_new,
    read_marks,
    store_marks,
)
from adapters.output.rdbms.failures import is_outage, table_exists
from adapters.output.rdbms.schema import IDENTIFIER_RULE, build_table, is_identifier, lightweight_table
from adapters.output.rdbms.settings import Mode, RdbmsSettings
from adapters.output.rdbms.statements import Outcome, write_rows
from adapters.throttle import Throttle
from adapters.wording import counted
from engine.errors import NotLeader

log = logging.getLogger(__name__)

_SHAPE_CACHE = 1024


def first_line(exc: BaseException) -> str:
    """The driver's own message, first line only (SQLAlchemy appends SQL and a help link)."""
    text = str(exc.orig) if isinstance(exc, sa_exc.DBAPIError) else str(exc)
    lines = text.strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def engine_for(settings: RdbmsSettings) -> sa.Engine:
    """A SQLAlchemy engine with pre-ping and the configured timeout applied to the driver."""
    url = settings.url
    backend, driver = url.get_backend_name(), url.get_driver_name()
    t = settings.timeout_s
    args: dict[str, Any] = {}
    options: dict[str, Any] = {"pool_pre_ping": True}
    if backend == "mysql" and driver in ("pymysql", "mysqldb"):
        args = {"connect_timeout": math.ceil(t), "read_timeout": math.ceil(t), "write_timeout": math.ceil(t)}
    elif backend == "postgresql" and driver == "psycopg2":
        # keepalives and tcp_user_timeout notice a silently dead network during a statement
        args = {
            "connect_timeout": max(2, math.ceil(t)),
            "keepalives": 1,
            "keepalives_idle": max(1, math.ceil(t / 2)),
            "keepalives_interval": 1,
            "keepalives_count": 3,
            "tcp_user_timeout": math.ceil(t * 1000),
        }
    elif backend == "sqlite":
        args = {"timeout": t}
    if backend != "sqlite":
        options.update(pool_size=2, max_overflow=2, pool_recycle=1800, pool_timeout=t)
    args = {k: v for k, v in args.items() if k not in url.query}  # the URL's own options win
    return sa.create_engine(url, connect_args=args, **options)


class RdbmsAdapter(BufferedAdapter):
    """Writes map-formatter rows to one table in `insert`, `update` or `insert-or-update` mode."""

    kind = "rdbms"
    integrity_retries = 3  # insert-or-update racing another writer that inserted the same key

    def __init__(self, name: str, settings: RdbmsSettings) -> None:
        super().__init__(name, settings.buffering)
        self.settings = settings
        self._engine: sa.Engine | None = None
        self._table: sa.Table | None = None
        if settings.columns:
            primary = settings.key_columns if settings.mode is not Mode.INSERT else ()
            self._table = build_table(settings.table, settings.schema, settings.columns, primary)
        self._delivered = delivered_table(settings.schema)
        self._delivered_ready = False  # cepheus_delivered is known to exist
        self._marks: dict[str, Origin] = {}  # per source, the mark this adapter committed last
        self._commit_interrupted = False  # the last attempt's commit may or may not have happened
        self._shapes: set[tuple[str, ...]] = set()
        self._skip_log = Throttle(10.0)
        self._skipped_unlogged = 0
        where = settings.url.render_as_string(hide_password=True)
        self._target = f"database {where} table {settings.table}"

    def describe_target(self) -> str:
        return self._target

    # ---- publish-time checks -----------------------------------------------------------------

    def _check(self, records: Sequence[Any]) -> None:
        for i, record in enumerate(records):
            if not isinstance(record, Mapping):
                msg = f"adapter {self.name}: record {i} is a {type(record).__name__}, not a row; use the map formatter"
                raise RecordError(msg)
            shape = tuple(record)
            if shape not in self._shapes:
                self._check_shape(i, shape)
                if len(self._shapes) >= _SHAPE_CACHE:
                    self._shapes.clear()
                self._shapes.add(shape)

    def _check_shape(self, i: int, shape: tuple[str, ...]) -> None:
        s = self.settings
        problem = None
        if not shape:
            problem = "has no columns"
        for column in shape:
            if not is_identifier(column):
                problem = f"has column name {column!r}, which is not a valid identifier ({IDENTIFIER_RULE})"
            elif s.columns and column not in s.column_names:
                problem = f"has column {column!r}, which is not one of the declared columns"
            if problem:
                break
        missing = [k for k in s.key_columns if k not in shape] if s.mode is not Mode.INSERT else []
        if problem is None and missing:
            problem = f"lacks key column(s) {', '.join(missing)}"
        if problem is not None:
            msg = f"adapter {self.name}: record {i} {problem}"
            raise RecordError(msg)

    # ---- the writer thread -------------------------------------------------------------------

    def _get_engine(self) -> sa.Engine:
        if self._engine is None:
            self._engine = engine_for(self.settings)
        return self._engine

    def _open(self) -> None:
        engine = self._get_engine()
        if not self.settings.create_table or self._table is None:
            return
        try:
            with engine.begin() as conn:
                self._table.create(conn, checkfirst=True)
        except Exception as exc:
            if table_exists(engine, self.settings.table, self.settings.schema):
                return  # another node created it first
            msg = f"cannot create table {self.settings.table}: {exc}"
            raise RetryLater(msg) from exc

    def _close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()

    def _ensure_delivered(self, engine: sa.Engine) -> None:
        """Create `cepheus_delivered` when missing (another node may be creating it too)."""
        try:
            with engine.begin() as conn:
                self._delivered.create(conn, checkfirst=True)
        except Exception as exc:
            if not table_exists(engine, DELIVERED_TABLE, self.settings.schema):
                msg = f"cannot create table {DELIVERED_TABLE}: {first_line(exc)}"
                raise RetryLater(msg) from exc
        self._delivered_ready = True

    def _write(self, records: list[Any], fence: Fence | None, origins: list[Run]) -> int:
        engine = self._get_engine()
        marked = any(origin is not None for origin, _ in origins)
        if marked and not self._delivered_ready:
            self._ensure_delivered(engine)
        table: sa.TableClause
        if self._table is not None:
            table = self._table
        else:
            columns = sorted({c for r in records for c in r})
            table = lightweight_table(self.settings.table, self.settings.schema, columns)
        attempt = 0
        while True:
            try:
                skipped = self._transaction(engine, table, records, fence, origins if marked else None)
            except (FenceRaised, RetryLater):
                raise
            except MarkRace as exc:
                self._marks = {}  # another writer moved a mark: read them all again
                if attempt < self.integrity_retries:
                    attempt += 1  # read the marks again: the other writer's may cover some records
                    continue
                raise RetryLater(str(exc)) from exc
            except sa_exc.IntegrityError as exc:
                if self.settings.mode is Mode.INSERT_OR_UPDATE and attempt < self.integrity_retries:
                    attempt += 1  # another writer inserted one of our keys meanwhile: now it updates
                    continue
                raise self._classify(exc, engine, marked) from exc
            except Exception as exc:
                raise self._classify(exc, engine, marked) from exc
            if skipped:
                self._log_skipped(skipped)
            self._commit_interrupted = False
            return skipped

    def _log_skipped(self, skipped: int) -> None:
        """One line per batch would flood the log during a replay: at most one every 10 s,
        with what the batches since the last line skipped."""
        self._skipped_unlogged += skipped
        why = (
            "the interrupted commit went through" if self._commit_interrupted else "replayed after a restart"
        )
        allowed, held = self._skip_log.allow()
        if allowed:
            log.info(
                "adapter %s: skipped %s table %s already had (%s)%s",
                self.name,
                counted(self._skipped_unlogged, "record"),
                self.settings.table,
                why,
                f", over {held + 1} batches" if held else "",
            )
            self._skipped_unlogged = 0

    def _transaction(
        self,
        engine: sa.Engine,
        table: sa.TableClause,
        records: list[Any],
        fence: Fence | None,
        origins: list[Run] | None,
    ) -> int:
        """Fence, marks, rows and COMMIT in one transaction; how many records were skipped."""
        s = self.settings
        with engine.connect() as conn:
            trans = conn.begin()
            try:
                if fence is not None:
                    self._run_fence(engine, conn, fence)
                rows = records
                after: dict[str, Origin] = {}
                before: dict[str, Origin] | None = None  # read under lock, when not known already
                if origins is not None:
                    sources = {origin.source for origin, _ in origins if origin is not None}
                    known = self._marks
                    if sources.issubset(known):  # the marks this adapter stored last: one UPDATE each
                        rows, after = keep_new(records, origins, {src: known[src] for src in sources})
                        claim_marks(conn, self._delivered, known, after)
                    else:
                        before = read_marks(conn, self._delivered, sources)
                        rows, after = keep_new(records, origins, before)
                outcome = write_rows(conn, table, s.mode, s.key_columns, rows) if rows else Outcome()
                if before is not None:
                    store_marks(conn, self._delivered, before, after)
            except BaseException:
                if trans.is_active:
                    try:
                        trans.rollback()
                    except Exception:
                        log.debug("adapter %s: rollback failed", self.name, exc_info=True)
                raise
            try:
                trans.commit()
            except Exception as exc:
                self._marks = {}  # the commit may or may not have stored them: read them next time
                if is_outage(exc, engine):
                    self._count_in_doubt(len(records))
                    self._commit_interrupted = True
                    msg = f"commit of {counted(len(records), 'record')} interrupted, retrying ({first_line(exc)})"
                    raise RetryLater(msg) from exc
                raise
        self._marks.update(after)
        if outcome.unmatched:
            log.debug("adapter %s: %s matched no row", self.name, counted(outcome.unmatched, "update"))
        return len(records) - len(rows)

    def _run_fence(self, engine: sa.Engine, conn: sa.Connection, fence: Fence) -> None:
        """Only the lease refuses a write (`NotLeader`): any other failure of the fence (a
        deadlock, a savepoint the database dropped with it while nodes first wrote the fence
        table at once) says nothing about the lease, and the batch is tried again."""
        try:
            fence(conn)
        except NotLeader as exc:
            msg = f"{type(exc).__name__}: {exc}"
            raise FenceRaised(msg) from exc
        except Exception as exc:
            if isinstance(exc, sa_exc.SQLAlchemyError) and is_outage(exc, engine):
                raise  # the database is down: retry
            msg = f"the fence could not be checked ({first_line(exc)}): trying again"
            raise RetryLater(msg) from exc

    def _classify(self, exc: Exception, engine: sa.Engine, marked: bool = False) -> Exception:
        """RetryLater for an outage or a missing table, Refused when the rows are at fault."""
        text = first_line(exc)
        if is_outage(exc, engine):
            engine.dispose()  # drop every pooled connection: they may all be dead
            return RetryLater(text)
        if marked:
            delivered = table_exists(engine, DELIVERED_TABLE, self.settings.schema)
            if delivered is None:
                return RetryLater(text)
            if not delivered:
                self._delivered_ready = False  # dropped behind our back: create it again
                return RetryLater(f"table {DELIVERED_TABLE} does not exist ({text})")
        exists = table_exists(engine, self.settings.table, self.settings.schema)
        if exists is None:
            return RetryLater(text)
        if not exists:
            if self.settings.create_table:
                self._opened = False  # create it again before the next attempt
            return RetryLater(f"table {self.settings.table} does not exist ({text})")
        return Refused(text)
