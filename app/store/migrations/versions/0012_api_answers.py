"""Answers of the HTTP API, kept under each account's Idempotency-Key.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

from app.store.columns import UTCDateTime

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_answers",
        sa.Column("account_id", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("idempotency_key", sa.String(), primary_key=True),
        sa.Column("digest", sa.String(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("api_answers")
