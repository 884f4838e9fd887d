"""Cluster members as each saw itself last (`cep_members`) and operators' notifier pins (`cep_pins`).

Revision ID: 0005_cluster
Revises: 0004_leases
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0005_cluster"
down_revision: str | Sequence[str] | None = "0004_leases"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MYSQL: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}


def _name() -> sa.types.TypeEngine[str]:
    return sa.String(200).with_variant(
        mysql.VARCHAR(200, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb"
    )


def upgrade() -> None:
    op.create_table(
        "cep_members",
        sa.Column("node", _name(), nullable=False),
        sa.Column("address", sa.String(300), nullable=False),
        sa.Column("seen_ms", sa.BigInteger(), nullable=False),
        sa.Column("draining", sa.Boolean(), nullable=False),
        sa.Column("view", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("node", name=op.f("pk_cep_members")),
        **MYSQL,
    )
    op.create_table(
        "cep_pins",
        sa.Column("plan", _name(), nullable=False),
        sa.Column("node", _name(), nullable=False),
        sa.PrimaryKeyConstraint("plan", name=op.f("pk_cep_pins")),
        **MYSQL,
    )


def downgrade() -> None:
    op.drop_table("cep_pins")
    op.drop_table("cep_members")
