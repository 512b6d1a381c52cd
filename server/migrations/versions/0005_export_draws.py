"""Contributions record how many draws of every sentence they hold (the signed header's `draws`;
1 for every file written before it).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("contributions") as table:
        table.add_column(sa.Column("draws", sa.Integer, nullable=False, server_default="1"))


def downgrade() -> None:
    with op.batch_alter_table("contributions") as table:
        table.drop_column("draws")
