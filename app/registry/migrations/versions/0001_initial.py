"""Initial registry: change counter and log, users, streams, plans, receivers, data sources,
output adapters and formatters.

Revision ID: 0001_initial
Revises:
Create Date: 2025-11-21
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0001_initial"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MYSQL: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}


def _name() -> sa.types.TypeEngine[str]:
    return sa.String(200).with_variant(
        mysql.VARCHAR(200, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb"
    )


def _text() -> sa.types.TypeEngine[str]:
    return sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")


def _revision() -> sa.Column[int]:
    return sa.Column("revision", sa.BigInteger(), nullable=False)


def upgrade() -> None:
    counter = op.create_table(
        "cep_revision",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cep_revision")),
        **MYSQL,
    )
    op.bulk_insert(counter, [{"id": 1, "value": 0}])
    op.create_table(
        "cep_changes",
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("name", _name(), nullable=False),
        _revision(),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("kind", "name", name=op.f("pk_cep_changes")),
        **MYSQL,
    )
    op.create_index(op.f("ix_cep_changes_revision"), "cep_changes", ["revision"])
    op.create_table(
        "cep_users",
        sa.Column("name", _name(), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=False),
        _revision(),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_cep_users")),
        **MYSQL,
    )
    op.create_table(
        "cep_streams",
        sa.Column("id", _name(), nullable=False),
        sa.Column("name", _name(), nullable=False),
        sa.Column("version", sa.String(50), nullable=False),
        sa.Column("description", _text(), nullable=False),
        sa.Column("meta", _text(), nullable=False),
        sa.Column("correlation", _text(), nullable=False),
        sa.Column("payload", _text(), nullable=False),
        _revision(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cep_streams")),
        sa.UniqueConstraint("name", "version", name=op.f("uq_cep_streams_name_version")),
        **MYSQL,
    )
    op.create_table(
        "cep_plans",
        sa.Column("name", _name(), nullable=False),
        sa.Column("text", _text(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("snapshot_interval_minutes", sa.Integer(), nullable=False),
        sa.Column("distributed_mode", sa.String(20), nullable=False),
        sa.Column("ha_mode", sa.String(30), nullable=True),
        _revision(),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_cep_plans")),
        sa.CheckConstraint("snapshot_interval_minutes >= 0", name=op.f("ck_cep_plans_snapshot_interval")),
        **MYSQL,
    )
    op.create_table(
        "cep_receivers",
        sa.Column("name", _name(), nullable=False),
        sa.Column("type", sa.String(20), nullable=False),
        sa.Column("config", _text(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        _revision(),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_cep_receivers")),
        **MYSQL,
    )
    op.create_table(
        "cep_datasources",
        sa.Column("name", _name(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("options", _text(), nullable=False),
        _revision(),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_cep_datasources")),
        **MYSQL,
    )
    op.create_table(
        "cep_adapters",
        sa.Column("name", _name(), nullable=False),
        sa.Column("type", sa.String(20), nullable=False),
        sa.Column("config", _text(), nullable=False),
        _revision(),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_cep_adapters")),
        **MYSQL,
    )
    op.create_table(
        "cep_formatters",
        sa.Column("name", _name(), nullable=False),
        sa.Column("stream_id", _name(), nullable=False),
        sa.Column("adapter", _name(), nullable=False),
        sa.Column("type", sa.String(20), nullable=False),
        sa.Column("config", _text(), nullable=False),
        _revision(),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_cep_formatters")),
        sa.ForeignKeyConstraint(
            ["stream_id"], ["cep_streams.id"], name=op.f("fk_cep_formatters_stream_id_cep_streams")
        ),
        sa.ForeignKeyConstraint(
            ["adapter"], ["cep_adapters.name"], name=op.f("fk_cep_formatters_adapter_cep_adapters")
        ),
        **MYSQL,
    )


def downgrade() -> None:
    for table in (
        "cep_formatters",
        "cep_adapters",
        "cep_datasources",
        "cep_receivers",
        "cep_plans",
        "cep_streams",
        "cep_users",
        "cep_changes",
        "cep_revision",
    ):
        op.drop_table(table)
