"""Contributions record how they were pseudonymized before the representer ran: N and the
re-identification bound from their signed header (format version 2).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("contributions") as table:
        table.add_column(sa.Column("neighbours", sa.Integer, nullable=False, server_default="1"))
        table.add_column(sa.Column("bound_uniform", sa.Float, nullable=True))
        table.add_column(sa.Column("bound_frequency", sa.Float, nullable=True))
        table.add_column(sa.Column("reidentification_bound", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("contributions") as table:
        for column in ("reidentification_bound", "bound_frequency", "bound_uniform", "neighbours"):
            table.drop_column(column)
