"""The claim watchdog's signs of life: the latest per (ticket, attempt).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

from app.store.columns import UTCDateTime

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "signs_of_life",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("ticket_id", sa.Integer(), sa.ForeignKey("tickets.id"), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("source", sa.String(), nullable=False),
        sa.Column("max_silence_minutes", sa.Integer(), nullable=True),
        sa.Column("policy_version", sa.String(), nullable=True),
        sa.UniqueConstraint("ticket_id", "attempt", name="uq_signs_of_life_attempt"),
    )


def downgrade() -> None:
    op.drop_table("signs_of_life")
