"""Signed institution requests carry a nonce, remembered until the request is stale so that a
replay is refused by every server process (server/nonces.py).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "request_nonces",
        sa.Column("institution_id", sa.String(64), sa.ForeignKey("institutions.id"), primary_key=True),
        sa.Column("nonce", sa.String(64), primary_key=True),
        sa.Column("expires", sa.DateTime(timezone=True), nullable=False, index=True))


def downgrade() -> None:
    op.drop_table("request_nonces")
