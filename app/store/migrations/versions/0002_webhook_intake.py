"""Webhook deliveries (the durable intake and the worker's queue) and installations.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhook_deliveries",
        sa.Column("seq", sa.Integer(), primary_key=True),
        sa.Column("delivery_id", sa.String(), nullable=False),
        sa.Column("event", sa.String(), nullable=False),
        sa.Column("action", sa.String(), nullable=True),
        sa.Column("installation_id", sa.BigInteger(), nullable=True),
        sa.Column("repository", sa.String(), nullable=True),
        sa.Column("ordering_key", sa.String(), nullable=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=True),
        sa.Column("payload_bytes", sa.Integer(), nullable=False),
        sa.Column("received_at", sa.Float(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.Float(), nullable=False),
        sa.Column("lease_until", sa.Float(), nullable=True),
        sa.Column("lease_owner", sa.String(), nullable=True),
        sa.Column("processed_at", sa.Float(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.UniqueConstraint("delivery_id"),
    )
    pending = sa.text("status = 'pending'")
    op.create_index(
        "ix_webhook_deliveries_pending",
        "webhook_deliveries",
        ["ordering_key", "seq"],
        sqlite_where=pending,
        postgresql_where=pending,
    )
    op.create_index("ix_webhook_deliveries_status_seq", "webhook_deliveries", ["status", "seq"])
    op.create_table(
        "delivery_runs",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("delivery_seq", sa.Integer(), nullable=False),
        sa.Column("worker", sa.String(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.String(), nullable=False),
        sa.Column("lease_kept", sa.Boolean(), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("finished_at", sa.Float(), nullable=False),
    )
    op.create_index("ix_delivery_runs_delivery_seq", "delivery_runs", ["delivery_seq"])
    op.create_table(
        "installations",
        sa.Column("id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("account", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
    )
    op.create_table(
        "installation_repositories",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("installation_id", sa.BigInteger(), nullable=False),
        sa.Column("repository", sa.String(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.UniqueConstraint("installation_id", "repository", name="uq_installation_repository"),
    )


def downgrade() -> None:
    op.drop_table("installation_repositories")
    op.drop_table("installations")
    op.drop_table("delivery_runs")
    op.drop_index("ix_webhook_deliveries_status_seq", "webhook_deliveries")
    op.drop_index("ix_webhook_deliveries_pending", "webhook_deliveries")
    op.drop_table("webhook_deliveries")
