"""Snapshots of plans' state: `cep_snapshots` and the chunks of large blobs.

Revision ID: 0002_snapshots
Revises: 0001_initial
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0002_snapshots"
down_revision: str | Sequence[str] | None = "0001_initial"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MYSQL: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}


def _name() -> sa.types.TypeEngine[str]:
    return sa.String(200).with_variant(
        mysql.VARCHAR(200, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb"
    )


def _blob() -> sa.types.TypeEngine[bytes]:
    return sa.LargeBinary().with_variant(mysql.LONGBLOB(), "mysql", "mariadb")


def upgrade() -> None:
    op.create_table(
        "cep_snapshots",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("plan", _name(), nullable=False),
        sa.Column("text_sha256", sa.String(64), nullable=False),
        sa.Column("state_format", sa.Integer(), nullable=False),
        sa.Column("input_position", sa.BigInteger(), nullable=True),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("checksum", sa.String(64), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb"),
            nullable=False,
        ),
        sa.Column("node", _name(), nullable=False),
        sa.Column("data", _blob(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cep_snapshots")),
        **MYSQL,
    )
    op.create_index(op.f("ix_cep_snapshots_plan_id"), "cep_snapshots", ["plan", "id"])
    op.create_table(
        "cep_snapshot_chunks",
        sa.Column("snapshot_id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("data", _blob(), nullable=False),
        sa.PrimaryKeyConstraint("snapshot_id", "seq", name=op.f("pk_cep_snapshot_chunks")),
        sa.ForeignKeyConstraint(
            ["snapshot_id"],
            ["cep_snapshots.id"],
            name=op.f("fk_cep_snapshot_chunks_snapshot_id_cep_snapshots"),
        ),
        **MYSQL,
    )


def downgrade() -> None:
    op.drop_table("cep_snapshot_chunks")
    op.drop_index(op.f("ix_cep_snapshots_plan_id"), table_name="cep_snapshots")
    op.drop_table("cep_snapshots")
