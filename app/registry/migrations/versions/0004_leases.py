"""Notifier leases of redundant plans: `cep_leases`.

Revision ID: 0004_leases
Revises: 0003_snapshot_input_log
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0004_leases"
down_revision: str | Sequence[str] | None = "0003_snapshot_input_log"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MYSQL: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}


def _name() -> sa.types.TypeEngine[str]:
    return sa.String(200).with_variant(
        mysql.VARCHAR(200, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb"
    )


def upgrade() -> None:
    op.create_table(
        "cep_leases",
        sa.Column("plan", _name(), nullable=False),
        sa.Column("holder", _name(), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("expires_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("plan", name=op.f("pk_cep_leases")),
        **MYSQL,
    )


def downgrade() -> None:
    op.drop_table("cep_leases")
