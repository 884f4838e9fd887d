"""A notifier lease records what a taker must hold (`cep_leases.required_term`, `required_position`):
the last position of the notifier's log it acknowledged without every member of its term
holding it, and the term that sequenced it (NULL: nothing yet).

Revision ID: 0007_lease_requirement
Revises: 0006_console
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_lease_requirement"
down_revision: str | Sequence[str] | None = "0006_console"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("cep_leases") as batch:
        batch.add_column(sa.Column("required_term", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("required_position", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("cep_leases") as batch:
        batch.drop_column("required_position")
        batch.drop_column("required_term")
