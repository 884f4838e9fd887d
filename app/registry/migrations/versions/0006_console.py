"""Console users get a role (`admin` changes, `viewer` reads; existing users are admins), the
console API its bearer tokens (`cep_tokens`), the members their shared settings (`cep_settings`).

Revision ID: 0006_console
Revises: 0005_cluster
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0006_console"
down_revision: str | Sequence[str] | None = "0005_cluster"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MYSQL: dict[str, Any] = {"mysql_engine": "InnoDB", "mysql_charset": "utf8mb4"}


def _name() -> sa.types.TypeEngine[str]:
    return sa.String(200).with_variant(
        mysql.VARCHAR(200, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb"
    )


def upgrade() -> None:
    with op.batch_alter_table("cep_users") as batch:
        batch.add_column(sa.Column("role", sa.String(20), nullable=False, server_default="admin"))
    op.create_table(
        "cep_tokens",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("user_name", _name(), nullable=False),
        sa.Column("label", sa.String(200), nullable=False),
        sa.Column("secret_sha256", sa.String(64), nullable=False),
        sa.Column(
            "created", sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb"), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cep_tokens")),
        **MYSQL,
    )
    op.create_index(op.f("ix_cep_tokens_user_name"), "cep_tokens", ["user_name"])
    op.create_table(
        "cep_settings",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_cep_settings")),
        **MYSQL,
    )


def downgrade() -> None:
    op.drop_table("cep_settings")
    op.drop_index(op.f("ix_cep_tokens_user_name"), table_name="cep_tokens")
    op.drop_table("cep_tokens")
    with op.batch_alter_table("cep_users") as batch:
        batch.drop_column("role")
