"""The initial schema: institutions, representers, contributions, training runs and their
epochs, pipelines, audits.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "institutions",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("public_key", sa.Text, nullable=False),
        sa.Column("fingerprint", sa.String(32), nullable=False),
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.Column("created", TIME, nullable=False))
    op.create_table(
        "representers",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("payload_sha256", sa.String(64), nullable=False),
        sa.Column("manifest", sa.JSON, nullable=False),
        sa.Column("current", sa.Boolean, nullable=False),
        sa.Column("created", TIME, nullable=False))
    op.create_table(
        "contributions",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("institution_id", sa.String(64), sa.ForeignKey("institutions.id"), nullable=False, index=True),
        sa.Column("representer_id", sa.String(64), nullable=False, index=True),
        sa.Column("nonce", sa.String(64), nullable=False, unique=True),
        sa.Column("sentences", sa.Integer, nullable=False),
        sa.Column("tokens", sa.Integer, nullable=False),
        sa.Column("dim", sa.Integer, nullable=False),
        sa.Column("dtype", sa.String(16), nullable=False),
        sa.Column("size_bytes", sa.BigInteger, nullable=False),
        sa.Column("header_created", TIME, nullable=False),
        sa.Column("received", TIME, nullable=False))
    op.create_table(
        "training_runs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("representer_id", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False, index=True),
        sa.Column("config", sa.JSON, nullable=False),
        sa.Column("contributions", sa.JSON, nullable=False),
        sa.Column("epochs_done", sa.Integer, nullable=False),
        sa.Column("best_epoch", sa.Integer),
        sa.Column("metrics", sa.JSON),
        sa.Column("error", sa.Text),
        sa.Column("worker_id", sa.String(128)),
        sa.Column("heartbeat", TIME),
        sa.Column("created", TIME, nullable=False),
        sa.Column("started", TIME),
        sa.Column("finished", TIME))
    op.create_table(
        "run_epochs",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("training_runs.id"), primary_key=True),
        sa.Column("epoch", sa.Integer, primary_key=True),
        sa.Column("metrics", sa.JSON, nullable=False))
    op.create_table(
        "pipelines",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("training_runs.id"), nullable=False),
        sa.Column("representer_id", sa.String(64), nullable=False),
        sa.Column("payload_sha256", sa.String(64), nullable=False),
        sa.Column("manifest", sa.JSON, nullable=False),
        sa.Column("audit_override", sa.Boolean, nullable=False),
        sa.Column("created", TIME, nullable=False))
    op.create_table(
        "audits",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("representer_id", sa.String(64), nullable=False, index=True),
        sa.Column("verdict", sa.String(32), nullable=False),
        sa.Column("report", sa.JSON, nullable=False),
        sa.Column("signer_fingerprint", sa.String(32), nullable=False),
        sa.Column("signature", sa.Text, nullable=False),
        sa.Column("created", TIME, nullable=False))


def downgrade() -> None:
    for table in ("audits", "pipelines", "run_epochs", "training_runs", "contributions", "representers",
                  "institutions"):
        op.drop_table(table)
