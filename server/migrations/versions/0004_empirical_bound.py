"""Contributions store the mean re-identification bound under the empirical prior (the export's
own PHI distribution, format version 2 headers made since adversary.bound computes it) beside
the uniform and frequency means, filled in from the stored headers' bounds.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_contributions = sa.table("contributions", sa.column("sha256", sa.String),
                          sa.column("reidentification_bound", sa.JSON), sa.column("bound_empirical", sa.Float))


def upgrade() -> None:
    with op.batch_alter_table("contributions") as table:
        table.add_column(sa.Column("bound_empirical", sa.Float, nullable=True))
    connection = op.get_bind()
    stored = sa.select(_contributions.c.sha256, _contributions.c.reidentification_bound)
    for sha256, bound in connection.execute(stored):
        mean = (bound or {}).get("overall", {}).get("mean_success", {}).get("empirical")
        if isinstance(mean, (int, float)) and not isinstance(mean, bool):
            connection.execute(sa.update(_contributions).where(_contributions.c.sha256 == sha256)
                               .values(bound_empirical=float(mean)))


def downgrade() -> None:
    with op.batch_alter_table("contributions") as table:
        table.drop_column("bound_empirical")
