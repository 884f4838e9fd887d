"""The registry's tables (SQLAlchemy Core) and the column types they share.

The Alembic versions in `migrations/versions/` of this package create exactly these tables; a test compares
them. Table names start with `cep_` so the registry can share a database with the tables
output adapters write. Names compare case-sensitively on every database (binary collation on
MySQL/MariaDB, whose default collation ignores case). Imports nothing of ours.
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
VERSION_TABLE = "cep_alembic_version"
MYSQL_TABLE_ARGS: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}

metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)


def name_type() -> sa.types.TypeEngine[str]:
    """A registry name: VARCHAR(200), case-sensitive everywhere."""
    return sa.String(200).with_variant(
        mysql.VARCHAR(200, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb"
    )


def large_binary() -> sa.types.TypeEngine[bytes]:
    """Bytes of any sensible length (LONGBLOB on MySQL, BYTEA on PostgreSQL, BLOB on SQLite)."""
    return sa.LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb")


def utc_datetime() -> sa.types.TypeEngine[Any]:
    """A UTC time without zone, to the microsecond (MySQL's DATETIME keeps whole seconds by default)."""
    return sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


def long_text() -> sa.types.TypeEngine[str]:
    """Text of any sensible length (MEDIUMTEXT on MySQL, whose TEXT stops at 64 KiB)."""
    return sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")


class JSONText(sa.types.TypeDecorator[Any]):
    """JSON kept as text, so it reads back exactly the same on all three databases."""

    impl = sa.Text
    cache_ok = True

    def load_dialect_impl(self, dialect: sa.Dialect) -> sa.types.TypeEngine[Any]:
        if dialect.name in ("mysql", "mariadb"):
            return dialect.type_descriptor(mysql.MEDIUMTEXT())
        return dialect.type_descriptor(sa.Text())

    def process_bind_param(self, value: Any, dialect: sa.Dialect) -> str | None:
        return None if value is None else json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> Any:
        return None if value is None else json.loads(value)


def _revision() -> sa.Column[int]:
    return sa.Column("revision", sa.BigInteger, nullable=False)


# one row (id 1): the global change counter, bumped once per transaction that changes anything
revision_counter = sa.Table(
    "cep_revision",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("value", sa.BigInteger, nullable=False),
    **MYSQL_TABLE_ARGS,
)

# the last change of every (kind, name) ever written, deletions included
changes = sa.Table(
    "cep_changes",
    metadata,
    sa.Column("kind", sa.String(20), primary_key=True),
    sa.Column("name", name_type(), primary_key=True),
    _revision(),
    sa.Column("deleted", sa.Boolean, nullable=False),
    sa.Index(None, "revision"),
    **MYSQL_TABLE_ARGS,
)

users = sa.Table(
    "cep_users",
    metadata,
    sa.Column("name", name_type(), primary_key=True),
    sa.Column("password_hash", sa.String(255), nullable=False),
    sa.Column("role", sa.String(20), nullable=False, server_default="admin"),
    _revision(),
    **MYSQL_TABLE_ARGS,
)

streams = sa.Table(
    "cep_streams",
    metadata,
    sa.Column("id", name_type(), primary_key=True),  # name:version
    sa.Column("name", name_type(), nullable=False),
    sa.Column("version", sa.String(50), nullable=False),
    sa.Column("description", long_text(), nullable=False),
    sa.Column("meta", JSONText(), nullable=False),
    sa.Column("correlation", JSONText(), nullable=False),
    sa.Column("payload", JSONText(), nullable=False),
    _revision(),
    sa.UniqueConstraint("name", "version"),
    **MYSQL_TABLE_ARGS,
)

plans = sa.Table(
    "cep_plans",
    metadata,
    sa.Column("name", name_type(), primary_key=True),
    sa.Column("text", long_text(), nullable=False),
    sa.Column("enabled", sa.Boolean, nullable=False),
    sa.Column("snapshot_interval_minutes", sa.Integer, nullable=False),
    sa.Column("distributed_mode", sa.String(20), nullable=False),
    sa.Column("ha_mode", sa.String(30), nullable=True),
    _revision(),
    sa.CheckConstraint("snapshot_interval_minutes >= 0", name="snapshot_interval"),
    **MYSQL_TABLE_ARGS,
)

receivers = sa.Table(
    "cep_receivers",
    metadata,
    sa.Column("name", name_type(), primary_key=True),
    sa.Column("type", sa.String(20), nullable=False),
    sa.Column("config", JSONText(), nullable=False),
    sa.Column("enabled", sa.Boolean, nullable=False),
    _revision(),
    **MYSQL_TABLE_ARGS,
)

datasources = sa.Table(
    "cep_datasources",
    metadata,
    sa.Column("name", name_type(), primary_key=True),
    sa.Column("url", sa.Text, nullable=False),
    sa.Column("options", JSONText(), nullable=False),
    _revision(),
    **MYSQL_TABLE_ARGS,
)

adapters = sa.Table(
    "cep_adapters",
    metadata,
    sa.Column("name", name_type(), primary_key=True),
    sa.Column("type", sa.String(20), nullable=False),
    sa.Column("config", JSONText(), nullable=False),
    _revision(),
    **MYSQL_TABLE_ARGS,
)

formatters = sa.Table(
    "cep_formatters",
    metadata,
    sa.Column("name", name_type(), primary_key=True),
    sa.Column("stream_id", name_type(), sa.ForeignKey("cep_streams.id"), nullable=False),
    sa.Column("adapter", name_type(), sa.ForeignKey("cep_adapters.name"), nullable=False),
    sa.Column("type", sa.String(20), nullable=False),
    sa.Column("config", JSONText(), nullable=False),
    _revision(),
    **MYSQL_TABLE_ARGS,
)


# snapshots of plans' state (`app.registry.snapshots`); not entities: writing them bumps no revision.
# A blob is split into chunks of at most `snapshots.CHUNK_BYTES`: the first in `data`, the rest in
# `cep_snapshot_chunks` (one value must fit in one packet on MySQL/MariaDB: 16 MiB by default)
snapshots = sa.Table(
    "cep_snapshots",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("plan", name_type(), nullable=False),
    sa.Column("text_sha256", sa.String(64), nullable=False),
    sa.Column("state_format", sa.Integer, nullable=False),
    sa.Column("input_position", sa.BigInteger, nullable=True),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("checksum", sa.String(64), nullable=False),
    sa.Column("created_at", utc_datetime(), nullable=False),
    sa.Column("node", name_type(), nullable=False),
    sa.Column("data", large_binary(), nullable=False),
    sa.Column("input_log", sa.String(64), nullable=True),  # the log input_position counts in (0003)
    sa.Index(None, "plan", "id"),
    **MYSQL_TABLE_ARGS,
)

snapshot_chunks = sa.Table(
    "cep_snapshot_chunks",
    metadata,
    sa.Column("snapshot_id", sa.Integer, sa.ForeignKey("cep_snapshots.id"), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),  # 1, 2, ... after `data`
    sa.Column("data", large_binary(), nullable=False),
    **MYSQL_TABLE_ARGS,
)

# notifier leases of redundant plans (`app.registry.leases`); not entities: no revision moves.
# `expires_ms` counts on the database's clock (ms since the epoch), never a node's.
# `required_term`/`required_position`: what a new holder must hold of the notifier's log (NULL: nothing).
leases = sa.Table(
    "cep_leases",
    metadata,
    sa.Column("plan", name_type(), primary_key=True),
    sa.Column("holder", name_type(), nullable=False),
    sa.Column("epoch", sa.BigInteger, nullable=False),
    sa.Column("expires_ms", sa.BigInteger, nullable=False),
    sa.Column("required_term", sa.BigInteger, nullable=True),
    sa.Column("required_position", sa.BigInteger, nullable=True),
    **MYSQL_TABLE_ARGS,
)

# cluster members, each row written by the member itself (`app.registry.members`); `seen_ms` on
# the database's clock; `view`: JSON {member: "alive" | "suspected" | "dead"} as it sees them.
members = sa.Table(
    "cep_members",
    metadata,
    sa.Column("node", name_type(), primary_key=True),
    sa.Column("address", sa.String(300), nullable=False),
    sa.Column("seen_ms", sa.BigInteger, nullable=False),
    sa.Column("draining", sa.Boolean, nullable=False),
    sa.Column("view", sa.Text, nullable=False),
    **MYSQL_TABLE_ARGS,
)

# an operator's choice of notifier per plan (`cepheus cluster move`); not entities either
pins = sa.Table(
    "cep_pins",
    metadata,
    sa.Column("plan", name_type(), primary_key=True),
    sa.Column("node", name_type(), nullable=False),
    **MYSQL_TABLE_ARGS,
)

# the console API's bearer tokens (`app.registry.tokens`): a token is shown once, only its SHA-256
# is kept; deleting a row revokes it; not entities (no revision moves, no redeploy)
tokens = sa.Table(
    "cep_tokens",
    metadata,
    sa.Column("id", sa.String(32), primary_key=True),
    sa.Column("user_name", name_type(), nullable=False),
    sa.Column("label", sa.String(200), nullable=False),
    sa.Column("secret_sha256", sa.String(64), nullable=False),
    sa.Column("created", utc_datetime(), nullable=False),
    sa.Index(None, "user_name"),
    **MYSQL_TABLE_ARGS,
)

# node-wide settings every member shares (`Registry.shared_secret`): the console's session key
settings = sa.Table(
    "cep_settings",
    metadata,
    sa.Column("name", sa.String(100), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
    **MYSQL_TABLE_ARGS,
)
