"""Accounts are user ids: the actor's id on events and operations, the runner's on attempts and
delivery records; the ledger of replies for the per-actor reply limit.

Rows written before this have no id (NULL): the relation they recorded adopts the id of its
first matching event (policies.engine), and only the id counts from then on.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

from app.store.columns import UTCDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_ID_COLUMNS = (
    ("ticket_events", "actor_id"),
    ("operations", "actor_id"),
    ("attempts", "runner_id"),
    ("delivery_records", "runner_id"),
)


def upgrade() -> None:
    for table, column in _ID_COLUMNS:
        op.add_column(table, sa.Column(column, sa.BigInteger(), nullable=True))
    op.create_index("ix_operations_actor_at", "operations", ["repository", "actor_id", "at"])
    op.create_table(
        "replies",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("repository", sa.String(), nullable=False),
        sa.Column("actor_id", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("reacted", sa.Boolean(), nullable=False),
        sa.Column("operation_id", sa.String(), nullable=False, unique=True),
        sa.Column("at", UTCDateTime(), nullable=False),
    )
    op.create_index("ix_replies_actor_at", "replies", ["repository", "actor_id", "at"])


def downgrade() -> None:
    op.drop_index("ix_replies_actor_at", table_name="replies")
    op.drop_table("replies")
    op.drop_index("ix_operations_actor_at", table_name="operations")
    for table, column in _ID_COLUMNS:
        op.drop_column(table, column)  # not a batch: rebuilding the table would drop its triggers
