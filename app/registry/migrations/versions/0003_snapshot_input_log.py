"""Snapshots name the input log their `input_position` counts in: `cep_snapshots.input_log`.

Revision ID: 0003_snapshot_input_log
Revises: 0002_snapshots
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_snapshot_input_log"
down_revision: str | Sequence[str] | None = "0002_snapshots"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("cep_snapshots") as batch:
        batch.add_column(sa.Column("input_log", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("cep_snapshots") as batch:
        batch.drop_column("input_log")
