"""Contributions the coordinator holds out of training runs (`quarantined`; none before).

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("contributions") as table:
        table.add_column(sa.Column("quarantined", sa.Boolean, nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("contributions") as table:
        table.drop_column("quarantined")
