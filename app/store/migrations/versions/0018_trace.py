"""Traces: the W3C traceparent a delivery and an effect were stored under (docs/traces.md).

Null when tracing was off, and for every row stored before this migration: a retry of such a
row starts a new trace.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.add_column(sa.Column("traceparent", sa.String(), nullable=True))
    with op.batch_alter_table("outbox_effects") as batch:
        batch.add_column(sa.Column("traceparent", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("outbox_effects") as batch:
        batch.drop_column("traceparent")
    with op.batch_alter_table("webhook_deliveries") as batch:
        batch.drop_column("traceparent")
