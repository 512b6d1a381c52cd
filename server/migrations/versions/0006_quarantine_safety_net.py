"""Contributions the coordinator holds out of training runs (`quarantined`; none before), and what
the export's safety net found (`safety_net`, the signed header's; unknown for earlier rows).

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
        table.add_column(sa.Column("safety_net", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("contributions") as table:
        table.drop_column("safety_net")
        table.drop_column("quarantined")
